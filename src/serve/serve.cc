#include "serve/serve.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "base/markdown.h"
#include "base/strings.h"

namespace ff::serve {

// --- Admission ------------------------------------------------------------------------------

Admission::Outcome Admission::enter(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (in_ < running_) {
    ++in_;
    return Outcome::kAdmitted;
  }
  if (queued_ >= waiting_) return Outcome::kQueueFull;
  ++queued_;
  const bool got = cv_.wait_for(lock, wait, [&] { return in_ < running_; });
  --queued_;
  if (!got) return Outcome::kTimedOut;
  ++in_;
  return Outcome::kAdmitted;
}

void Admission::leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_;
  }
  cv_.notify_one();
}

unsigned Admission::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_;
}

unsigned Admission::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

// --- Host check -----------------------------------------------------------------------------

bool is_loopback_address(std::string_view a) {
  if (a == "localhost" || a == "::1" || a == "[::1]") return true;
  in_addr v4{};
  const std::string s(a);
  return ::inet_pton(AF_INET, s.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

bool host_is_loopback(std::string_view host, int port) {
  std::string_view name = host;
  std::string_view port_text;
  if (starts_with(host, "[")) {  // [::1]:8765
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(0, close + 1);
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port_text = rest.substr(1);
    }
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port_text = host.substr(colon + 1);
  }
  if (!is_loopback_address(name)) return false;
  if (port_text.empty()) return port == 80;
  return port_text == std::to_string(port);
}

// --- The encyclopedia as JSON ---------------------------------------------------------------

namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; }

json entry_brief(const kb::Entry& e) {
  return {{"id", e.id},       {"title", e.title},           {"category", e.category}, {"severity", e.severity},
          {"phase", e.phase}, {"frameworks", e.frameworks}, {"tags", e.tags},         {"summary", e.summary}};
}

}  // namespace

std::string entries_json(const kb::KnowledgeBase& kb) {
  json arr = json::array();
  for (const auto& e : kb.entries) arr.push_back(entry_brief(e));
  return dump(json{{"total", kb.entries.size()}, {"entries", std::move(arr)}});
}

std::string entry_json(const kb::Entry& e) {
  json j = entry_brief(e);
  j["mechanism"] = e.mechanism;
  j["affected"] = e.affected;
  j["confirm"] = e.confirm;
  if (!e.transience.empty()) j["transience"] = e.transience;
  j["root_cause"] = e.root_cause;
  j["fix"] = e.fix;
  j["verify"] = e.verify;
  j["prevention"] = e.prevention;
  j["related"] = e.related;
  json looks = json::array();
  for (const auto& l : e.lookalikes) looks.push_back({{"id", l.id}, {"how_to_tell", l.how_to_tell}});
  j["lookalikes"] = std::move(looks);
  json symptoms = json::array();
  for (const auto& s : e.symptoms) symptoms.push_back({{"symptom", s.symptom}, {"why", s.why}});
  j["symptoms"] = std::move(symptoms);
  json patterns = json::array();
  for (const auto& p : e.patterns)
    patterns.push_back({{"id", p.id}, {"role", kb::role_name(p.role)}, {"regex", p.regex}});
  j["patterns"] = std::move(patterns);
  json examples = json::array();
  for (const auto& x : e.examples) examples.push_back(x.text);
  j["examples"] = std::move(examples);
  json refs = json::array();
  for (const auto& r : e.references) refs.push_back({{"url", r.url}, {"note", r.note}});
  j["references"] = std::move(refs);
  // The text fields' inline Markdown (kb/README.md) as HTML, escaped first
  // (base/markdown.h), for the page; the fields above keep the text as written.
  auto md = [](const std::string& t) { return markdown_html(trim(t)); };
  auto md_list = [&](const std::vector<std::string>& v) {
    json a = json::array();
    for (const auto& t : v) a.push_back(md(t));
    return a;
  };
  j["html"] = {{"summary", md(e.summary)},   {"mechanism", md(e.mechanism)},   {"root_cause", md(e.root_cause)},
               {"fix", md_list(e.fix)},      {"confirm", md_list(e.confirm)},  {"prevention", md_list(e.prevention)}};
  return dump(j);
}

// --- The server -----------------------------------------------------------------------------

namespace {

// The page's policy: its own script and style only, requests to itself only.
constexpr const char* kPageCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// A report: its inline style and SVG, nothing else, shown only in the page's frame.
constexpr const char* kReportCsp =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'";
constexpr const char* kApiCsp = "default-src 'none'; frame-ancestors 'none'";

// A stream per uploaded file: the connection's thread writes into a pipe as the body
// arrives; the diagnosis thread reads the other end (io::read_streams).
class UploadFeed final : public io::StreamFeed {
 public:
  ~UploadFeed() override {
    close_current();
    for (auto& [name, fd] : pending_) ::close(fd);
  }
  // Starts the next stream; false when no pipe could be made.
  bool open(std::string name) {
    close_current();
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    ::fcntl(p[1], F_SETPIPE_SZ, 1 << 20);  // fewer wake-ups; a hint
    write_fd_ = p[1];
    dropping_ = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.emplace_back(std::move(name), p[0]);
      ++streams_;
    }
    cv_.notify_one();
    return true;
  }
  // The current stream's next bytes. A stream the reader stopped reading (a binary file,
  // the byte limit) is closed on its side: the rest of it is dropped.
  void write(const char* data, size_t n) {
    while (n > 0 && write_fd_ >= 0 && !dropping_) {
      const ssize_t w = ::write(write_fd_, data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        dropping_ = true;  // EPIPE
        break;
      }
      data += w;
      n -= static_cast<size_t>(w);
    }
  }
  void close_current() {
    if (write_fd_ >= 0) ::close(write_fd_);
    write_fd_ = -1;
  }
  // No more streams.
  void finish() {
    close_current();
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
    }
    cv_.notify_one();
  }
  bool next(std::string& name, int& fd) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !pending_.empty() || finished_; });
    if (pending_.empty()) return false;
    name = std::move(pending_.front().first);
    fd = pending_.front().second;
    pending_.pop_front();
    return true;
  }
  size_t streams() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, int>> pending_;
  bool finished_ = false;
  size_t streams_ = 0;
  int write_fd_ = -1;
  bool dropping_ = false;
};

// The name an uploaded file is shown by: its last path component, printable, bounded.
std::string display_name(std::string_view given) {
  if (const size_t slash = given.find_last_of("/\\"); slash != std::string_view::npos) given = given.substr(slash + 1);
  std::string out;
  for (char c : given) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    out += c;
    if (out.size() >= 200) break;
  }
  return out.empty() || out == "." || out == ".." ? "pasted.log" : out;
}

// Diagnoses kept for the page (downloads, the report's frame): the newest few, in memory.
class ReportStore {
 public:
  explicit ReportStore(size_t most) : most_(most) {}
  std::string put(std::shared_ptr<const Diagnosed> d) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string id;
    do {
      id = fmt::format("{:016x}", rng_());
    } while (by_id_.count(id) > 0);
    by_id_[id] = std::move(d);
    order_.push_back(id);
    while (order_.size() > most_) {
      by_id_.erase(order_.front());
      order_.pop_front();
    }
    return id;
  }
  std::shared_ptr<const Diagnosed> get(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }

 private:
  size_t most_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Diagnosed>> by_id_;
  std::deque<std::string> order_;
  std::mt19937_64 rng_{std::random_device{}()};
};

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
bool read_small_body(const httplib::ContentReader& reader, size_t most, std::string& out) {
  bool over = false;
  Drain drain;
  const bool ok = reader([&](const char* data, size_t n) {
    if (over || out.size() + n > most) {
      over = true;
      return drain.more(n);
    }
    out.append(data, n);
    return true;
  });
  return ok && !over;
}

void set_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(dump(json{{"error", {{"status", status}, {"message", message}}}}), "application/json");
}

// An error after which the connection is closed (the request's body was not, or not all,
// read, so the next bytes on the connection are not a request).
void refuse(httplib::Response& res, int status, const std::string& message) {
  res.set_header("Connection", "close");
  set_error(res, status, message);
}

}  // namespace

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
        reports(std::max<size_t>(1, options.limits.kept_reports)) {}

  void routes();
  void diagnose(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
};

Server::Server(Options options, Handlers handlers) : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {
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
    if (s.port <= 0) return make_error(ErrorCode::kIo, "cannot listen on " + s.options.bind + ": " + std::strerror(errno));
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

void Server::Impl::routes() {
  const Limits& lim = options.limits;
  const unsigned threads = lim.connection_threads != 0 ? lim.connection_threads : lim.max_running + lim.max_waiting + 32;
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
    } catch (const std::exception& e) {
      what = std::string("internal error: ") + e.what();
    } catch (...) {
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
      arr.push_back({{"name", s.name}, {"title", s.title}, {"bytes", s.text.size()}, {"url", "/samples/" + std::string(s.name)}});
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
    if (req.has_param("limit")) limit = static_cast<size_t>(std::strtoul(req.get_param_value("limit").c_str(), nullptr, 10));
    if (trim(q).empty()) return set_error(res, 400, "an empty query: /api/search?q=words or a pasted error line");
    res.set_content(handlers.search(q, limit), "application/json");
    res.set_header("Content-Security-Policy", kApiCsp);
  };
  http.Get("/api/search", [search](const httplib::Request& req, httplib::Response& res) {
    search(req.get_param_value("q"), req, res);
  });
  http.Post("/api/search", [search](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) {
    std::string body;
    if (!read_small_body(reader, 1u << 20, body)) {
      return refuse(res, 413, "a search query of more than 1 MiB, or one that could not be read");
    }
    search(body, req, res);
  });
  http.Post("/api/diagnose", [this](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) { diagnose(req, res, reader); });
  http.Get(R"(/report/([0-9a-f]{16})\.(html|md|json))", [this](const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<const Diagnosed> d = reports.get(req.matches[1].str());
    if (!d) return set_error(res, 404, "this diagnosis is no longer kept (the server keeps the newest few); diagnose again");
    const std::string kind = req.matches[2].str();
    const bool download = req.get_param_value("download") == "1";
    if (kind == "html") {
      res.set_content(d->html, "text/html; charset=utf-8");
      res.set_header("Content-Security-Policy", kReportCsp);
      res.set_header("X-Frame-Options", "SAMEORIGIN");
    } else {
      res.set_content(kind == "md" ? d->markdown : d->json, kind == "md" ? "text/markdown; charset=utf-8" : "application/json");
      res.set_header("Content-Security-Policy", kApiCsp);
    }
    if (download)
      res.set_header("Content-Disposition", fmt::format("attachment; filename=\"firstfault-report.{}\"", kind));
    res.set_header("Cache-Control", "no-store");
  });
}

void Server::Impl::diagnose(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  const Limits& lim = options.limits;
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Security-Policy", kApiCsp);
  if (req.has_header("Content-Length")) {
    const uint64_t len = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
    if (len > lim.max_upload_bytes) {
      Drain drain;
      reader([&](const char*, size_t n) { return drain.more(n); });
      return refuse(res, 413,
                    fmt::format("the upload is {} bytes; this server accepts at most {} (firstfault serve "
                                "--max-upload, or run firstfault diagnose on the file)",
                                len, lim.max_upload_bytes));
    }
  }
  switch (admission.enter(std::chrono::seconds(lim.queue_wait_s))) {
    case Admission::Outcome::kAdmitted: break;
    case Admission::Outcome::kQueueFull:
      res.set_header("Retry-After", "5");
      return refuse(res, 503, fmt::format("busy: {} diagnoses running and {} waiting; try again in a few seconds",
                                          lim.max_running, lim.max_waiting));
    case Admission::Outcome::kTimedOut:
      res.set_header("Retry-After", "10");
      return refuse(res, 503, fmt::format("busy: no diagnosis slot came free within {} s; try again", lim.queue_wait_s));
  }
  struct Leave {
    Admission& a;
    ~Leave() { a.leave(); }
  } leave{admission};

  DiagnoseRequest dr;
  dr.redact = req.get_param_value("redact") == "1";
  UploadFeed feed;
  std::shared_ptr<Diagnosed> result = std::make_shared<Diagnosed>();
  std::string failure;
  std::thread worker([&] {
    try {
      *result = handlers.diagnose(feed, dr);
    } catch (const std::exception& e) {
      failure = e.what();
      std::string name;
      int fd;
      while (feed.next(name, fd)) ::close(fd);  // so the writer never blocks on a pipe nobody reads
    }
  });
  uint64_t total = 0;
  bool over = false, no_pipe = false;
  Drain drain;
  auto receive = [&](const char* data, size_t n) {
    total += n;
    if (total > lim.max_upload_bytes) over = true;
    if (over) return drain.more(n);
    feed.write(data, n);
    return true;
  };
  bool ok;
  if (req.is_multipart_form_data()) {
    ok = reader(
        [&](const httplib::MultipartFormData& part) {
          if (!feed.open(display_name(part.filename.empty() ? "pasted.log" : part.filename))) {
            no_pipe = true;
            return false;
          }
          return true;
        },
        receive);
  } else {
    const std::string name = req.has_param("name") ? req.get_param_value("name") : "pasted.log";
    ok = feed.open(display_name(name));
    no_pipe = !ok;
    ok = ok && reader(receive);
  }
  feed.finish();
  worker.join();
  if (over) {
    return refuse(res, 413, fmt::format("the upload is larger than {} bytes, the most this server accepts "
                                        "(firstfault serve --max-upload)",
                                        lim.max_upload_bytes));
  }
  if (no_pipe) return set_error(res, 503, std::string("cannot start a diagnosis: ") + std::strerror(errno));
  if (!ok) {
    return refuse(res, 400,
                  req.is_multipart_form_data()
                      ? "the multipart body could not be read (malformed, cut short, or the client went silent)"
                      : "the body could not be read (cut short, or the client went silent)");
  }
  if (!failure.empty()) return set_error(res, 500, "the diagnosis failed: " + failure);
  if (feed.streams() == 0) return set_error(res, 400, "no file in the upload: send a text body or multipart files");
  res.status = result->nothing_read ? 422 : 200;
  res.set_header("X-Firstfault-Verdict", result->verdict);
  if (req.get_param_value("keep") == "1") res.set_header("X-Firstfault-Report", reports.put(result));
  res.set_content(result->json, "application/json");
}

}  // namespace ff::serve
