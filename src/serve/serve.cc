// serve/serve.cc — Server: binding, running and stopping, and the routes with the headers
// every answer gets (the Host and Origin checks, the Content-Security-Policy per kind).
#include "serve/serve.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

#include "base/strings.h"
#include "serve/serve_internal.h"

namespace ff::serve {

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; }

void set_error(Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(dump(json{{"error", {{"status", status}, {"message", message}}}}), "application/json");
}

// An error after which the connection is closed: the request's body was not, or not all,
// read, so the next bytes on the connection are not a request (request smuggling behind a
// proxy that reuses connections).
void refuse(Response& res, int status, const std::string& message) {
  res.close = true;
  set_error(res, status, message);
}

namespace {

// civetweb's own refusals, before a request reaches handle(): a head over kMaxHeadBytes
// (its 413: 431 here), one that is malformed or cut short by --read-timeout (400), a
// Content-Length that is not a number (411), a Transfer-Encoding other than chunked, an HTTP
// version other than 1.0 and 1.1 (505). Answered as ours are, and the connection closed.
int civetweb_error(mg_connection* conn, int status, const char*) {
  Response res;
  switch (status) {
    case 413:
      refuse(res, 431,
             fmt::format("the request's line and headers are longer than {} KiB together, the most this server reads",
                         kMaxHeadBytes >> 10));
      break;
    case 411: refuse(res, 400, "the Content-Length is not a number"); break;
    case 505: refuse(res, 505, "only HTTP/1.0 and HTTP/1.1 are answered here"); break;
    case 400: refuse(res, 400, "the request could not be read (malformed, or the client went silent)"); break;
    default: refuse(res, status, fmt::format("the request was refused (HTTP {})", status));
  }
  send(conn, nullptr, res);
  return 0;  // handled: civetweb sends nothing of its own
}

// civetweb's log lines (a client's bad request, a failed write) carry what a client sent:
// not written to the terminal.
int civetweb_log(const mg_connection*, const char*) { return 1; }

}  // namespace

Server::Server(Options options, Handlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {
  impl_->loopback = is_loopback_address(impl_->options.bind);
  if (impl_->handlers.kb != nullptr) {
    impl_->entries = entries_json(*impl_->handlers.kb);
    for (const auto& e : impl_->handlers.kb->entries) impl_->entry_by_id[e.id] = &e;
  }
  impl_->routes();
}

Server::~Server() = default;

Server::Impl::~Impl() {
  if (ctx != nullptr) mg_stop(ctx);
  for (int fd : stop_pipe) {
    if (fd >= 0) ::close(fd);
  }
}

// civetweb's settings: the bounds on what a client may send and hold (docs/serve.md).
Result<int> Server::bind() {
  Impl& s = *impl_;
  static std::once_flag library;
  std::call_once(library, [] { mg_init_library(0); });
  if (::pipe2(s.stop_pipe, O_CLOEXEC) != 0)
    return make_error(ErrorCode::kIo, std::string("cannot start the server: ") + std::strerror(errno));
  const Limits& lim = s.options.limits;
  const unsigned threads =
      lim.connection_threads != 0 ? lim.connection_threads : lim.max_running + lim.max_waiting + 32;
  // civetweb takes addresses, not names; Debian builds it without IPv6.
  const std::string address = s.options.bind == "localhost" ? "127.0.0.1" : s.options.bind;
  const std::string ports = fmt::format("{}:{}", address, s.options.port);
  const std::string thread_count = std::to_string(threads);
  // One deadline for a request's head (from its first byte), for each read of its body and
  // for each write of the answer: --read-timeout.
  const std::string timeout_ms = std::to_string(std::max(1, lim.read_timeout_s) * 1000);
  const std::string head_bytes = std::to_string(kMaxHeadBytes);
  const char* config[] = {"listening_ports",
                          ports.c_str(),
                          "num_threads",
                          thread_count.c_str(),
                          "connection_queue",
                          thread_count.c_str(),
                          "request_timeout_ms",
                          timeout_ms.c_str(),
                          "keep_alive_timeout_ms",
                          "5000",
                          "enable_keep_alive",
                          "yes",
                          "max_request_size",
                          head_bytes.c_str(),
                          nullptr};
  mg_callbacks callbacks{};
  callbacks.begin_request = Impl::on_request;
  callbacks.http_error = civetweb_error;
  callbacks.log_message = civetweb_log;
  mg_init_data setup{&callbacks, &s, config};
  char text[256] = "";
  unsigned code = 0;
  mg_error_data error{&code, text, sizeof text};
  s.ctx = mg_start2(&setup, &error);
  if (s.ctx == nullptr) {
    const std::string why = text[0] != '\0' ? std::string(text) : "civetweb could not start";
    if (s.options.port == 0) return make_error(ErrorCode::kIo, "cannot listen on " + s.options.bind + ": " + why);
    return make_error(ErrorCode::kIo, fmt::format("cannot listen on {} port {}: {} (--port 0 picks a free one)",
                                                  s.options.bind, s.options.port, why));
  }
  mg_server_port bound{};
  if (mg_get_server_ports(s.ctx, 1, &bound) != 1) return make_error(ErrorCode::kIo, "cannot tell the port listened on");
  s.port = bound.port;
  return s.port;
}

bool Server::run() {
  // A stream the engine stopped reading fails the next write with EPIPE, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  Impl& s = *impl_;
  if (s.ctx == nullptr) return false;
  char byte;
  while (::read(s.stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {}
  mg_stop(s.ctx);
  s.ctx = nullptr;
  return true;
}

// From a signal handler too: write(2) is async-signal-safe.
void Server::stop() {
  if (impl_->stop_pipe[1] >= 0) {
    const char byte = 's';
    [[maybe_unused]] const ssize_t n = ::write(impl_->stop_pipe[1], &byte, 1);
  }
}

int Server::Impl::handle(mg_connection* conn) {
  Request req(conn);
  Response res;
  try {
    if (admit(req, res)) {
      const Route* route = nullptr;
      for (const Route& r : table) {
        if ((r.method == req.method || (r.method == "GET" && req.method == "HEAD")) &&
            std::regex_match(req.path, req.matches, r.path)) {
          route = &r;
          break;
        }
      }
      if (route != nullptr) {
        route->handler(req, res);
      } else {
        set_error(res, 404, "no such page: " + req.path);
      }
    }
  } catch (const std::exception& e) { refuse(res, 500, std::string("internal error: ") + e.what()); }
  send(conn, &req, res);
  return res.status;
}

// Before any route: the Host header (DNS rebinding), the request's framing (a body that a
// proxy and this server could read differently) and, for a POST, the Origin.
bool Server::Impl::admit(const Request& req, Response& res) const {
  // civetweb parses the first MG_MAX_HEADERS header lines and drops the rest unread: a
  // Content-Length or Transfer-Encoding among those would be seen by a proxy, not here.
  if (req.headers.size() >= MG_MAX_HEADERS) {
    refuse(res, 431, fmt::format("more than {} header lines", MG_MAX_HEADERS - 1));
    return false;
  }
  const std::string host = req.header("Host");
  if (loopback && !host_is_loopback(host, port)) {
    refuse(res, 421,
           fmt::format("Host '{}' is not this server: firstfault serve answers only to http://{}:{}/ (a page "
                       "elsewhere must not reach it through a DNS name that points here)",
                       host, options.bind, port));
    return false;
  }
  // Only the two POST routes read a body, each through its own limit: any other method
  // or POST path is refused here, before a byte of its body is read.
  if (req.method != "GET" && req.method != "HEAD" && req.method != "POST") {
    refuse(res, 405, "only GET and POST are answered here");
    res.set_header("Allow", "GET, HEAD, POST");
    return false;
  }
  // A body whose length is not certain, or on a request that reads none, would be read as
  // the next request on the connection (request smuggling behind a proxy that reuses
  // connections): refused, and the connection closed.
  const size_t lengths = req.header_count("Content-Length");
  for (size_t i = 0; i < lengths; ++i) {
    const std::string value = req.header("Content-Length", i);
    if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos) {
      refuse(res, 400, "a Content-Length that is not a number");
      return false;
    }
    if (value != req.header("Content-Length", 0)) {
      refuse(res, 400, "two different Content-Length headers");
      return false;
    }
  }
  const size_t encodings = req.header_count("Transfer-Encoding");
  if (encodings > 1 || (encodings == 1 && req.header("Transfer-Encoding") != "chunked")) {
    refuse(res, 400, "a Transfer-Encoding other than one chunked");
    return false;
  }
  if (lengths > 0 && encodings > 0) {
    refuse(res, 400, "both Content-Length and Transfer-Encoding");
    return false;
  }
  if (req.method != "POST" && (encodings > 0 || (lengths > 0 && req.content_length() != 0))) {
    refuse(res, 400, "a " + req.method + " request with a body is not answered");
    return false;
  }
  if (req.method == "POST" && req.path != "/api/diagnose" && req.path != "/api/search") {
    refuse(res, 404, "no such endpoint: POST " + req.path + " (POST /api/diagnose or /api/search)");
    return false;
  }
  if (req.method == "POST" && req.has_header("Origin")) {
    const std::string origin = req.header("Origin");
    const std::string_view rest = std::string_view(origin).substr(std::min<size_t>(origin.size(), 7));
    if (!starts_with(origin, "http://") || (loopback ? !host_is_loopback(rest, port) : rest != host)) {
      refuse(res, 403, "a page from " + origin + " may not post to firstfault serve");
      return false;
    }
  }
  return true;
}

// The route table, every route with its handler and headers in one place, so that what the
// server answers (and nothing else) can be read at once.
void Server::Impl::routes() {
  auto page = [](std::string_view name, const char* type) {
    return [name, type](Request&, Response& res) {
      res.set_content(std::string(asset(name)), type);
      res.set_header("Content-Security-Policy", kPageCsp);
      res.set_header("Cache-Control", "no-cache");
    };
  };
  get("/", page("index.html", "text/html; charset=utf-8"));
  // A kept diagnosis's address (the page puts it in the address bar): the page, which then
  // loads /report/ID.json and says so when the id is no longer kept.
  get(R"(/report/([0-9a-f]{32}))", page("index.html", "text/html; charset=utf-8"));
  get("/assets/app.js", page("app.js", "text/javascript; charset=utf-8"));
  get("/assets/app.css", page("app.css", "text/css; charset=utf-8"));
  get("/healthz", [this](Request&, Response& res) {
    res.set_content(dump(json{{"status", "ok"},
                              {"version", handlers.version},
                              {"diagnoses_running", admission.running()},
                              {"diagnoses_waiting", admission.waiting()}}),
                    "application/json");
    res.set_header("Cache-Control", "no-store");
  });
  get("/api/samples", [](Request&, Response& res) {
    json arr = json::array();
    for (const Sample& s : samples())
      arr.push_back(
          {{"name", s.name}, {"title", s.title}, {"bytes", s.text.size()}, {"url", "/samples/" + std::string(s.name)}});
    res.set_content(dump(arr), "application/json");
  });
  get(R"(/samples/([A-Za-z0-9_.-]+))", [](Request& req, Response& res) {
    for (const Sample& s : samples()) {
      if (s.name == req.matches[1].str()) {
        res.set_content(std::string(s.text), "text/plain; charset=utf-8");
        res.set_header("Content-Security-Policy", kApiCsp);
        return;
      }
    }
    set_error(res, 404, "no such sample: " + req.matches[1].str());
  });
  get("/api/entries", [this](Request&, Response& res) {
    res.set_content(entries, "application/json");
    res.set_header("Content-Security-Policy", kApiCsp);
  });
  get(R"(/api/entries/([^/]+))", [this](Request& req, Response& res) {
    auto it = entry_by_id.find(req.matches[1].str());
    if (it == entry_by_id.end()) return set_error(res, 404, "no entry with id " + req.matches[1].str());
    res.set_content(entry_json(*it->second), "application/json");
    res.set_header("Content-Security-Policy", kApiCsp);
  });
  auto search = [this](const std::string& q, const Request& req, Response& res) {
    size_t limit = 10;
    if (req.has_param("limit")) limit = static_cast<size_t>(std::strtoul(req.param("limit").c_str(), nullptr, 10));
    if (trim(q).empty()) return set_error(res, 400, "an empty query: /api/search?q=words or a pasted error line");
    res.set_content(handlers.search(q, limit), "application/json");
    res.set_header("Content-Security-Policy", kApiCsp);
  };
  get("/api/search", [search](Request& req, Response& res) { search(req.param("q"), req, res); });
  post("/api/search", [search](Request& req, Response& res) {
    req.continue_if_expected();
    std::string body;
    if (!read_small_body(req, 1u << 20, body)) {
      return refuse(res, 413, "a search query of more than 1 MiB, or one that could not be read");
    }
    search(body, req, res);
  });
  post("/api/diagnose", [this](Request& req, Response& res) { diagnose(req, res); });
  get(R"(/report/([0-9a-f]{32})\.(html|md|json))", [this](Request& req, Response& res) {
    std::shared_ptr<const Diagnosed> d = reports.get(req.matches[1].str());
    if (!d)
      return set_error(res, 404, "this diagnosis is no longer kept (the server keeps the newest few); diagnose again");
    const std::string kind = req.matches[2].str();
    const bool download = req.param("download") == "1";
    if (kind == "html") {
      res.set_content(d->html, "text/html; charset=utf-8");
      res.set_header("Content-Security-Policy", kReportCsp);
      res.set_header("X-Frame-Options", "SAMEORIGIN");
    } else {
      res.set_content(kind == "md" ? d->markdown : d->json,
                      kind == "md" ? "text/markdown; charset=utf-8" : "application/json");
      res.set_header("Content-Security-Policy", kApiCsp);
    }
    if (download)
      res.set_header("Content-Disposition",
                     fmt::format("attachment; filename=\"{}\"", download_name(d->name, kind)));
    res.set_header("Cache-Control", "no-store");
  });
}

}  // namespace ff::serve
