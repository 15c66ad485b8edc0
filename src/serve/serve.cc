// serve/serve.cc — Server: binding, running and stopping, and the routes with the headers
// every answer gets (the Host and Origin checks, the Content-Security-Policy per kind).
#include "serve/serve.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/strings.h"
#include "serve/serve_internal.h"

namespace ff::serve {

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; }

void set_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(dump(json{{"error", {{"status", status}, {"message", message}}}}), "application/json");
}

// An error after which the connection should be closed (the request's body was not, or
// not all, read, so the next bytes on the connection are not a request). FIXME: Debian's
// cpp-httplib 0.11.4 closes a connection only when the request asked for it (its
// connection_closed is decided before routing), so this Connection: close is said but the
// connection stays open for keep-alive; bytes the client sends after the answer are read
// as a request (issue 31, request smuggling behind a proxy). Needs a server that lets a
// handler close the connection.
void refuse(httplib::Response& res, int status, const std::string& message) {
  res.set_header("Connection", "close");
  set_error(res, status, message);
}

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

Result<int> Server::bind() {
  Impl& s = *impl_;
  if (s.options.port == 0) {
    s.port = s.http.bind_to_any_port(s.options.bind);
    if (s.port <= 0)
      return make_error(ErrorCode::kIo, "cannot listen on " + s.options.bind + ": " + std::strerror(errno));
  } else {
    if (!s.http.bind_to_port(s.options.bind, s.options.port))
      return make_error(ErrorCode::kIo, fmt::format("cannot listen on {} port {}: {} (--port 0 picks a free one)",
                                                    s.options.bind, s.options.port, std::strerror(errno)));
    s.port = s.options.port;
  }
  return s.port;
}

bool Server::run() {
  // A stream the engine stopped reading fails the next write with EPIPE, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  return impl_->http.listen_after_bind();
}

void Server::stop() { impl_->http.stop(); }

// Over 80 lines: the route table, every route with its handler and headers in one place,
// so that what the server answers (and nothing else) can be read at once.
void Server::Impl::routes() {
  const Limits& lim = options.limits;
  const unsigned threads =
      lim.connection_threads != 0 ? lim.connection_threads : lim.max_running + lim.max_waiting + 32;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_read_timeout(lim.read_timeout_s, 0);
  http.set_write_timeout(lim.write_timeout_s, 0);
  http.set_keep_alive_timeout(5);
  http.set_keep_alive_max_count(100);  // httplib's 5 makes a busy client reconnect every 5 requests
  // Every body is read through a content reader with its own limit (the upload's, the
  // query's), which answers 413 itself after draining a little of the rest; httplib's own
  // check would refuse before reading a byte, and the client would see a reset instead.
  http.set_payload_max_length(std::numeric_limits<size_t>::max());
  http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                            {"Referrer-Policy", "no-referrer"},
                            {"Cross-Origin-Opener-Policy", "same-origin"},
                            {"Cross-Origin-Resource-Policy", "same-origin"}});

  // Before any route: the Host header (DNS rebinding) and, for a POST, the Origin.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string host = req.get_header_value("Host");
    if (loopback && !host_is_loopback(host, port)) {
      refuse(res, 421,
             fmt::format("Host '{}' is not this server: firstfault serve answers only to http://{}:{}/ (a page "
                         "elsewhere must not reach it through a DNS name that points here)",
                         host, options.bind, port));
      return httplib::Server::HandlerResponse::Handled;
    }
    // Only the two POST routes read a body, each through its own limit: any other method
    // or POST path is refused here, before httplib would read its body into memory.
    if (req.method != "GET" && req.method != "HEAD" && req.method != "POST") {
      refuse(res, 405, "only GET and POST are answered here");
      res.set_header("Allow", "GET, HEAD, POST");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A body whose length is not certain, or on a request that reads none, would be read as
    // the next request on the connection (request smuggling behind a proxy that reuses
    // connections): refused, and the connection closed.
    const size_t lengths = req.get_header_value_count("Content-Length");
    for (size_t i = 1; i < lengths; ++i) {
      if (req.get_header_value("Content-Length", i) != req.get_header_value("Content-Length", 0)) {
        refuse(res, 400, "two different Content-Length headers");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (lengths > 0 && req.has_header("Transfer-Encoding")) {
      refuse(res, 400, "both Content-Length and Transfer-Encoding");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "POST" && (req.has_header("Transfer-Encoding") ||
                                 (lengths > 0 && req.get_header_value("Content-Length") != "0"))) {
      refuse(res, 400, "a " + req.method + " request with a body is not answered");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "POST" && req.path != "/api/diagnose" && req.path != "/api/search") {
      refuse(res, 404, "no such endpoint: POST " + req.path + " (POST /api/diagnose or /api/search)");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "POST" && req.has_header("Origin")) {
      const std::string origin = req.get_header_value("Origin");
      const std::string_view rest = std::string_view(origin).substr(std::min<size_t>(origin.size(), 7));
      if (!starts_with(origin, "http://") || (loopback ? !host_is_loopback(rest, port) : rest != host)) {
        refuse(res, 403, "a page from " + origin + " may not post to firstfault serve");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Every answer has a Content-Security-Policy (docs/serve.md): the routes set their own
  // kind's; any other answer (/healthz, /api/samples, errors, refusals, httplib's own) gets
  // the API's, which allows nothing.
  http.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.has_header("Content-Security-Policy")) res.set_header("Content-Security-Policy", kApiCsp);
  });
  // httplib's own refusals (413, 400, 404) get a body that says what happened.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string why;
    switch (res.status) {
      case 404: why = "no such page: " + req.path; break;
      case 413: why = "the upload is larger than this server accepts (firstfault serve --max-upload)"; break;
      case 400: why = "the request could not be read (malformed, or the client went silent)"; break;
      case 414: why = "the address is too long; POST the text instead"; break;
      default: why = fmt::format("the request was refused (HTTP {})", res.status);
    }
    set_error(res, res.status, why);
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) { what = std::string("internal error: ") + e.what(); } catch (...) {
    }
    set_error(res, 500, what);
  });

  auto page = [](std::string_view name, const char* type) {
    return [name, type](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(asset(name)), type);
      res.set_header("Content-Security-Policy", kPageCsp);
      res.set_header("Cache-Control", "no-cache");
    };
  };
  http.Get("/", page("index.html", "text/html; charset=utf-8"));
  http.Get("/assets/app.js", page("app.js", "text/javascript; charset=utf-8"));
  http.Get("/assets/app.css", page("app.css", "text/css; charset=utf-8"));
  http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump(json{{"status", "ok"},
                              {"version", handlers.version},
                              {"diagnoses_running", admission.running()},
                              {"diagnoses_waiting", admission.waiting()}}),
                    "application/json");
    res.set_header("Cache-Control", "no-store");
  });
  http.Get("/api/samples", [](const httplib::Request&, httplib::Response& res) {
    json arr = json::array();
    for (const Sample& s : samples())
      arr.push_back(
          {{"name", s.name}, {"title", s.title}, {"bytes", s.text.size()}, {"url", "/samples/" + std::string(s.name)}});
    res.set_content(dump(arr), "application/json");
  });
  http.Get(R"(/samples/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    for (const Sample& s : samples()) {
      if (s.name == req.matches[1].str()) {
        res.set_content(std::string(s.text), "text/plain; charset=utf-8");
        res.set_header("Content-Security-Policy", kApiCsp);
        return;
      }
    }
    set_error(res, 404, "no such sample: " + req.matches[1].str());
  });
  http.Get("/api/entries", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(entries, "application/json");
    res.set_header("Content-Security-Policy", kApiCsp);
  });
  http.Get(R"(/api/entries/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    auto it = entry_by_id.find(req.matches[1].str());
    if (it == entry_by_id.end()) return set_error(res, 404, "no entry with id " + req.matches[1].str());
    res.set_content(entry_json(*it->second), "application/json");
    res.set_header("Content-Security-Policy", kApiCsp);
  });
  auto search = [this](const std::string& q, const httplib::Request& req, httplib::Response& res) {
    size_t limit = 10;
    if (req.has_param("limit"))
      limit = static_cast<size_t>(std::strtoul(req.get_param_value("limit").c_str(), nullptr, 10));
    if (trim(q).empty()) return set_error(res, 400, "an empty query: /api/search?q=words or a pasted error line");
    res.set_content(handlers.search(q, limit), "application/json");
    res.set_header("Content-Security-Policy", kApiCsp);
  };
  http.Get("/api/search", [search](const httplib::Request& req, httplib::Response& res) {
    search(req.get_param_value("q"), req, res);
  });
  http.Post("/api/search",
            [search](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
              std::string body;
              if (!read_small_body(reader, 1u << 20, body)) {
                return refuse(res, 413, "a search query of more than 1 MiB, or one that could not be read");
              }
              search(body, req, res);
            });
  http.Post("/api/diagnose", [this](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) { diagnose(req, res, reader); });
  http.Get(R"(/report/([0-9a-f]{32})\.(html|md|json))", [this](const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<const Diagnosed> d = reports.get(req.matches[1].str());
    if (!d)
      return set_error(res, 404, "this diagnosis is no longer kept (the server keeps the newest few); diagnose again");
    const std::string kind = req.matches[2].str();
    const bool download = req.get_param_value("download") == "1";
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
      res.set_header("Content-Disposition", fmt::format("attachment; filename=\"firstfault-report.{}\"", kind));
    res.set_header("Cache-Control", "no-store");
  });
}

}  // namespace ff::serve
