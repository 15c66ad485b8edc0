// serve/serve_internal.h — what the files of serve share and nobody else needs:
//
//   serve.cc           Server: its lifetime (civetweb), the checks every request gets, the
//                      routes, the headers every answer gets
//   serve.http.cc      Request and Response over civetweb: the head, the query, a body
//                      read to its end or known cut short, an answer sent whole
//   serve.upload.cc    POST /api/diagnose: the upload streamed into pipes (UploadFeed) and
//                      diagnosed in an admitted slot; bodies read with a limit
//   serve.reports.cc   ReportStore: the newest diagnoses, kept in memory for /report/
//   serve.admission.cc Admission: diagnoses at once and the bounded queue behind them
//   serve.host.cc      the Host and Origin checks' loopback test (DNS rebinding)
//   serve.entries.cc   the encyclopedia as JSON (/api/entries)
#pragma once

#include <civetweb.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/serve.h"

namespace ff::serve {

using json = nlohmann::ordered_json;

// An answer's JSON as sent: indented, invalid UTF-8 replaced, a final newline.
std::string dump(const json& j);

// The page's policy: its own script and style only, requests to itself only.
inline constexpr const char* kPageCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// A report: its inline style and SVG, nothing else, shown only in the page's frame.
inline constexpr const char* kReportCsp =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'";
inline constexpr const char* kApiCsp = "default-src 'none'; frame-ancestors 'none'";

// The request's head as civetweb read it (the request line and headers, at most
// kMaxHeadBytes together, at most MG_MAX_HEADERS lines): what a route needs of it, and its
// body read through civetweb (mg_read). Lives on the connection's thread for one request.
class Request {
 public:
  explicit Request(mg_connection* conn);
  mg_connection* conn;
  std::string method;
  std::string path;   // URL-decoded, dot segments removed (civetweb's local_uri)
  std::string query;  // as sent, without the '?'
  std::string http_version;
  std::smatch matches;                                       // the route's captures in `path`
  std::vector<std::pair<std::string, std::string>> headers;  // in order, as sent

  // The i-th value of a header (names compared without case); "" when there is none.
  std::string header(std::string_view name, size_t i = 0) const;
  size_t header_count(std::string_view name) const;
  bool has_header(std::string_view name) const { return header_count(name) > 0; }
  // A query parameter, URL-decoded; "" when absent.
  std::string param(std::string_view name) const;
  bool has_param(std::string_view name) const;
  bool is_multipart() const;
  bool chunked() const { return has_header("Transfer-Encoding"); }  // only "chunked" gets this far
  // Content-Length; -1 when the request has none.
  int64_t content_length() const;
  // The client's wish to keep the connection (HTTP/1.1 unless "Connection: close").
  bool keep_alive() const;
  // "100 Continue" when the client waits for it before sending its body (curl does).
  void continue_if_expected() const;
};

// An answer, sent whole by send(): status, headers, body. `close` ends the connection
// after it (a refusal whose body was not, or not all, read).
struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool close = false;
  void set_header(const std::string& name, const std::string& value);
  bool has_header(std::string_view name) const;
  std::string header(std::string_view name) const;
  void set_content(std::string content, const std::string& type) {
    body = std::move(content);
    set_header("Content-Type", type);
  }
};

// The most bytes of a request's head (request line and headers) civetweb reads
// (max_request_size): more is answered 431 and the connection closed. Each connection
// thread holds one buffer of this size.
inline constexpr unsigned kMaxHeadBytes = 64u << 10;

// Diagnoses kept for the page (downloads, the report's frame): the newest few, in memory,
// each under an id no one can guess (random_report_id), bounded by count and by their
// bytes together (JSON, HTML and Markdown: a report of a 100,000-member tar is about 90 MB);
// the newest is kept whatever its size, so the page can always show it.
class ReportStore {
 public:
  explicit ReportStore(size_t most, uint64_t most_bytes = UINT64_MAX) : most_(most), most_bytes_(most_bytes) {}
  std::string put(std::shared_ptr<const Diagnosed> d);
  std::shared_ptr<const Diagnosed> get(const std::string& id) const;
  uint64_t bytes() const;

 private:
  size_t most_;
  uint64_t most_bytes_;
  uint64_t bytes_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Diagnosed>> by_id_;
  std::deque<std::string> order_;
};

// A kept report's id: 128 bits from getrandom(2), as 32 lowercase hex digits.

// A kept report's id: 128 bits from getrandom(2), as 32 lowercase hex digits.
std::string random_report_id();

// The file name a kept report downloads as: the log's name without its extensions
// (.log, .txt, .gz, .tar, ...), only [A-Za-z0-9._-] kept, then ".firstfault.KIND":
// train.log.gz -> train.firstfault.json; no usable name -> firstfault-report.KIND.
std::string download_name(std::string_view log_name, std::string_view kind);

// The rest of a body that is refused, read and dropped for a little while, so that the
// client (still sending) reads the answer instead of a reset connection; a huge one is
// cut off after that, as nginx's lingering close does.
struct Drain {
  uint64_t bytes = 0;
  std::chrono::steady_clock::time_point until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  bool more(size_t n) {
    bytes += n;
    return bytes < (64u << 20) && std::chrono::steady_clock::now() < until;
  }
};

// A request's body read through civetweb: counted, and told apart from one cut short (a
// Content-Length not reached, a chunked body broken or unfinished, a client gone silent
// for --read-timeout).
class BodyReader {
 public:
  explicit BodyReader(const Request& req) : conn_(req.conn), length_(req.content_length()) {}
  // The next bytes: > 0, 0 at the body's end, < 0 when it cannot be read to its end.
  long read(char* buf, size_t n);
  uint64_t total() const { return total_; }

 private:
  mg_connection* conn_;
  int64_t length_;
  uint64_t total_ = 0;
};

// The rest of a refused body read and dropped (Drain's bounds): the client, still sending,
// then reads the answer instead of a reset.
void drain(const Request& req);

// A small body (a search query) read whole, at most `most` bytes; false when it is larger
// or could not be read.
bool read_small_body(const Request& req, size_t most, std::string& out);

// An error answer: the status and {"error": {status, message}}.
void set_error(Response& res, int status, const std::string& message);
// An error after which the connection is closed (the request's body was not, or not all,
// read, so the next bytes on the connection are not a request).
void refuse(Response& res, int status, const std::string& message);

using Handler = std::function<void(Request&, Response&)>;

struct Server::Impl {
  struct Route {
    std::string method;  // a GET route answers HEAD too
    std::regex path;     // the whole path must match
    Handler handler;
  };

  Options options;
  Handlers handlers;
  mg_context* ctx = nullptr;
  std::vector<Route> table;
  int stop_pipe[2] = {-1, -1};  // stop() writes a byte (async-signal-safe); run() waits for it
  Admission admission;
  ReportStore reports;
  int port = 0;
  bool loopback = true;
  std::string entries;  // /api/entries, built once
  std::map<std::string, const kb::Entry*> entry_by_id;

  Impl(Options o, Handlers h)
      : options(std::move(o)),
        handlers(std::move(h)),
        admission(std::max(1u, options.limits.max_running), options.limits.max_waiting),
        reports(std::max<size_t>(1, options.limits.kept_reports), options.limits.kept_report_bytes) {}

  ~Impl();
  void routes();
  void get(const char* path, Handler h) { table.push_back({"GET", std::regex(path), std::move(h)}); }
  void post(const char* path, Handler h) { table.push_back({"POST", std::regex(path), std::move(h)}); }
  // One request, from the checks every request gets to the answer sent (civetweb's
  // begin_request); the status sent.
  int handle(mg_connection* conn);
  static int on_request(mg_connection* conn) {
    return static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)))->handle(conn);
  }
  // The Host, method, framing and Origin checks; false when `res` is already the answer.
  bool admit(const Request& req, Response& res) const;
  void diagnose(Request& req, Response& res);
};

// Sends `res` with the headers every answer gets (the policy's, Content-Length; Connection
// as `res.close` and the client say); a HEAD request gets the head alone.
void send(mg_connection* conn, const Request* req, Response& res);

}  // namespace ff::serve
