// serve/serve_internal.h — what the files of serve share and nobody else needs:
//
//   serve.cc           Server: its lifetime, the routes, the headers every answer gets
//   serve.upload.cc    POST /api/diagnose: the upload streamed into pipes (UploadFeed) and
//                      diagnosed in an admitted slot; bodies read with a limit
//   serve.reports.cc   ReportStore: the newest diagnoses, kept in memory for /report/
//   serve.admission.cc Admission: diagnoses at once and the bounded queue behind them
//   serve.host.cc      the Host and Origin checks' loopback test (DNS rebinding)
//   serve.entries.cc   the encyclopedia as JSON (/api/entries)
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

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
std::string random_report_id();

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

// A small body (a search query) read whole through the content reader, at most `most`
// bytes; false when it is larger or could not be read.
bool read_small_body(const httplib::ContentReader& reader, size_t most, std::string& out);

// An error answer: the status and {"error": {status, message}}.
void set_error(httplib::Response& res, int status, const std::string& message);
// An error after which the connection is closed (the request's body was not, or not all,
// read, so the next bytes on the connection are not a request).
void refuse(httplib::Response& res, int status, const std::string& message);

struct Server::Impl {
  Options options;
  Handlers handlers;
  httplib::Server http;
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

  void routes();
  void diagnose(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
};

}  // namespace ff::serve
