// serve/serve.http.cc — Request and Response over civetweb: the head civetweb parsed, the
// query's parameters, a body read to its end (or known to be cut short), and an answer
// sent whole with the headers every answer gets.
#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/strings.h"
#include "serve/serve_internal.h"

namespace ff::serve {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Headers every answer has (and a report's or the page's own policy, set by its route).
constexpr std::pair<const char*, const char*> kDefaultHeaders[] = {
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cross-Origin-Opener-Policy", "same-origin"},
    {"Cross-Origin-Resource-Policy", "same-origin"},
};

}  // namespace

Request::Request(mg_connection* c) : conn(c) {
  const mg_request_info* ri = mg_get_request_info(c);
  if (ri == nullptr) return;
  if (ri->request_method != nullptr) method = ri->request_method;
  if (ri->local_uri != nullptr) path = ri->local_uri;
  if (ri->query_string != nullptr) query = ri->query_string;
  if (ri->http_version != nullptr) http_version = ri->http_version;
  for (int i = 0; i < ri->num_headers; ++i)
    headers.emplace_back(ri->http_headers[i].name != nullptr ? ri->http_headers[i].name : "",
                         ri->http_headers[i].value != nullptr ? ri->http_headers[i].value : "");
}

std::string Request::header(std::string_view name, size_t i) const {
  for (const auto& [n, v] : headers) {
    if (same_name(n, name) && i-- == 0) return v;
  }
  return "";
}

size_t Request::header_count(std::string_view name) const {
  return static_cast<size_t>(
      std::count_if(headers.begin(), headers.end(), [&](const auto& h) { return same_name(h.first, name); }));
}

std::string Request::param(std::string_view name) const {
  if (query.empty()) return "";
  // The decoded value is never longer than the query it comes from.
  std::string out(query.size() + 1, '\0');
  const std::string key(name);
  const int n = mg_get_var(query.data(), query.size(), key.c_str(), out.data(), out.size());
  if (n < 0) return "";
  out.resize(static_cast<size_t>(n));
  return out;
}

bool Request::has_param(std::string_view name) const {
  if (query.empty()) return false;
  char one[2];
  const std::string key(name);
  // -1: absent; -2: present but longer than the buffer; otherwise its length.
  return mg_get_var(query.data(), query.size(), key.c_str(), one, sizeof one) != -1;
}

bool Request::is_multipart() const {
  const std::string type = header("Content-Type");
  return type.size() >= 19 && ::strncasecmp(type.c_str(), "multipart/form-data", 19) == 0;
}

int64_t Request::content_length() const {
  if (!has_header("Content-Length")) return -1;
  return std::strtoll(header("Content-Length").c_str(), nullptr, 10);
}

bool Request::keep_alive() const {
  if (has_header("Connection")) {
    // The header's text must outlive the views split() hands back: a
    // temporary in the range expression dies before the loop runs.
    const std::string connection = header("Connection");
    for (std::string_view token : split(connection, ',')) {
      if (same_name(trim(token), "keep-alive")) return true;
    }
    return false;
  }
  return http_version == "1.1";
}

void Request::continue_if_expected() const {
  if (http_version == "1.1" && same_name(header("Expect"), "100-continue"))
    mg_write(conn, "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

void Response::set_header(const std::string& name, const std::string& value) {
  for (auto& [n, v] : headers) {
    if (same_name(n, name)) {
      v = value;
      return;
    }
  }
  headers.emplace_back(name, value);
}

bool Response::has_header(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return same_name(h.first, name); });
}

std::string Response::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (same_name(n, name)) return v;
  }
  return "";
}

void send(mg_connection* conn, const Request* req, Response& res) {
  for (const auto& [name, value] : kDefaultHeaders) {
    if (!res.has_header(name)) res.set_header(name, value);
  }
  // Every answer has a Content-Security-Policy (docs/serve.md): the routes set their own
  // kind's; any other answer (/healthz, /api/samples, errors, refusals) gets the API's,
  // which allows nothing.
  if (!res.has_header("Content-Security-Policy")) res.set_header("Content-Security-Policy", kApiCsp);
  const bool close = res.close || req == nullptr || !req->keep_alive();
  // civetweb keeps a connection only when the request's body was read to its end; a
  // refusal closes it whatever was read, so nothing after it is read as a request.
  if (close) mg_disable_connection_keep_alive(conn);
  const char* reason = mg_get_response_code_text(conn, res.status);
  std::string head = fmt::format("HTTP/1.1 {} {}\r\n", res.status, reason != nullptr ? reason : "");
  for (const auto& [name, value] : res.headers) {
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  head += fmt::format("Content-Length: {}\r\nConnection: {}\r\n\r\n", res.body.size(), close ? "close" : "keep-alive");
  mg_write(conn, head.data(), head.size());
  if (req != nullptr && req->method == "HEAD") return;
  for (size_t at = 0; at < res.body.size();) {
    const size_t n = std::min<size_t>(res.body.size() - at, 1u << 20);
    if (mg_write(conn, res.body.data() + at, n) <= 0) break;  // the client went away
    at += n;
  }
}

long BodyReader::read(char* buf, size_t n) {
  const int got = mg_read(conn_, buf, n);
  if (got > 0) {
    total_ += static_cast<uint64_t>(got);
    return got;
  }
  // civetweb's 0 is also a Content-Length body whose client went silent (its read timed
  // out): only a body read to its length has ended.
  if (got == 0 && length_ >= 0 && total_ < static_cast<uint64_t>(length_)) return -1;
  return got;
}

void drain(const Request& req) {
  BodyReader body(req);
  Drain d;
  char buf[64 << 10];
  long n;
  while ((n = body.read(buf, sizeof buf)) > 0) {
    if (!d.more(static_cast<size_t>(n))) break;
  }
}

bool read_small_body(const Request& req, size_t most, std::string& out) {
  BodyReader body(req);
  char buf[64 << 10];
  long n;
  while ((n = body.read(buf, sizeof buf)) > 0) {
    if (out.size() + static_cast<size_t>(n) > most) {
      drain(req);
      return false;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return n == 0;
}

}  // namespace ff::serve
