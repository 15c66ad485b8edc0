#include "app/lsp.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "app/commands.h"
#include "app/kb_check.h"
#include "base/escape.h"
#include "base/strings.h"
#include "record/record.h"
#include "report/report.h"
#include "scan/scan.h"

namespace ff::app {

using nlohmann::json;

namespace lsp {

// ---- text positions ----------------------------------------------------------------

namespace {

// The length of the UTF-8 sequence at s[i], or 1 for a byte that starts none or a
// sequence cut by the end (the bytes count one each).
size_t utf8_len(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
  return len <= s.size() - i ? len : 1;
}

// Where line `line` starts (text.size() past the last line).
size_t line_start(std::string_view text, size_t line) {
  size_t at = 0;
  for (size_t i = 0; i < line; ++i) {
    const void* nl = std::memchr(text.data() + at, '\n', text.size() - at);
    if (!nl) return text.size();
    at = static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
  }
  return at;
}

}  // namespace

std::string_view line_at(std::string_view text, size_t line) {
  const size_t b = line_start(text, line);
  if (b >= text.size()) return {};
  size_t e = text.find('\n', b);
  if (e == std::string_view::npos) e = text.size();
  if (e > b && text[e - 1] == '\r') --e;
  return text.substr(b, e - b);
}

size_t utf16_length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_len(s, i);
    n += len == 4 ? 2 : 1;
    i += len;
  }
  return n;
}

size_t byte_offset(std::string_view text, size_t line, size_t utf16_character) {
  size_t at = line_start(text, line);
  size_t units = 0;
  // The line ends before "\n" or "\r\n"; a position inside a surrogate pair rounds up.
  auto at_end = [&] {
    return text[at] == '\n' || (text[at] == '\r' && at + 1 < text.size() && text[at + 1] == '\n');
  };
  while (at < text.size() && !at_end() && units < utf16_character) {
    const size_t len = utf8_len(text, at);
    units += len == 4 ? 2 : 1;
    at += len;
  }
  return at;
}

// ---- framing -----------------------------------------------------------------------

bool MessageReader::fill() {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  char tmp[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd_, tmp, sizeof tmp);
    if (n > 0) {
      buf_.append(tmp, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

std::optional<std::string> MessageReader::next() {
  for (;;) {
    // The header block: lines ending in \r\n (a bare \n is accepted), then an empty line.
    size_t length = 0;
    bool have_length = false, bad = false;
    std::string problem;
    for (;;) {
      size_t nl;
      while ((nl = buf_.find('\n', pos_)) == std::string::npos) {
        if (buf_.size() - pos_ > 64 * 1024) {  // no header is this long: drop it
          fmt::print(stderr, "firstfault lsp: a header line over 64 KiB; skipped\n");
          pos_ = buf_.size();
        }
        if (!fill()) return std::nullopt;
      }
      std::string_view line(buf_.data() + pos_, nl - pos_);
      pos_ = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      // After a skipped message its body runs into the next header: resynchronise there.
      if (const size_t at = to_lower(line).find("content-length:"); at != std::string::npos && at > 0) {
        line.remove_prefix(at);
        bad = false;
        problem.clear();
      }
      if (line.empty()) {
        if (have_length || bad) break;
        continue;  // blank lines between messages
      }
      const size_t colon = line.find(':');
      const std::string name = to_lower(trim(line.substr(0, colon == std::string_view::npos ? 0 : colon)));
      const std::string_view value = colon == std::string_view::npos ? std::string_view() : trim(line.substr(colon + 1));
      if (colon == std::string_view::npos) {
        bad = true;
        problem = "a header line without ':'";
      } else if (name == "content-length") {
        long long v = 0;
        if (!parse_int(value, v) || v < 0) {
          bad = true;
          problem = "Content-Length is not a number";
        } else if (static_cast<unsigned long long>(v) > max_body_) {
          bad = true;
          problem = fmt::format("Content-Length {} is over the limit of {} bytes", v, max_body_);
        } else {
          length = static_cast<size_t>(v);
          have_length = true;
        }
      }
      // Content-Type and other headers are ignored (LSP: utf-8 is the only encoding).
    }
    if (bad || !have_length) {
      fmt::print(stderr, "firstfault lsp: bad message header ({}); skipped\n",
                 escape_for_terminal(problem.empty() ? "no Content-Length" : problem));
      continue;
    }
    while (buf_.size() - pos_ < length) {
      if (!fill()) {
        fmt::print(stderr, "firstfault lsp: input ended inside a message\n");
        return std::nullopt;
      }
    }
    std::string body = buf_.substr(pos_, length);
    pos_ += length;
    return body;
  }
}

}  // namespace lsp

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;
constexpr int kRequestCancelled = -32800;

constexpr auto kDebounce = std::chrono::milliseconds(300);

// The diagnosis of a buffer's text as one source named `name`, made as `diagnose` makes
// it (diagnose_loaded, no redaction); nullopt when *cancel was set meanwhile (the scan
// stops at its next chunk).
std::optional<analyze::Diagnosis> diagnose_text(const Loaded& loaded, const std::string& name, std::string_view text,
                                                const std::atomic<bool>* cancel) {
  scan::ScanOptions so;
  so.cancel = cancel;
  const ScanFn scan_fn = [&](const scan::Engine& engine, scan::EventSink& sink) {
    return scan::scan_text(engine, name, text, sink, so);
  };
  const Options opt;
  DiagnosedJob job;
  if (!diagnose_loaded(loaded, opt, scan_fn, {name}, job) || cancel->load()) return std::nullopt;
  return std::move(job.d);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// file:///a%20b/x.log -> /a b/x.log; other schemes: the URI itself (a name for the source).
std::string uri_to_path(const std::string& uri) {
  if (!starts_with(uri, "file://")) return uri;
  std::string_view rest = std::string_view(uri).substr(7);
  const size_t slash = rest.find('/');
  rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (rest[i] == '%' && i + 2 < rest.size() && hex(rest[i + 1]) >= 0 && hex(rest[i + 2]) >= 0) {
      out += static_cast<char>(hex(rest[i + 1]) * 16 + hex(rest[i + 2]));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return out;
}

std::string path_to_file_uri(const std::string& path) {
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

json range_of_line(std::string_view text, size_t line0) {
  const size_t len = lsp::utf16_length(lsp::line_at(text, line0));
  return {{"start", {{"line", line0}, {"character", 0}}}, {"end", {{"line", line0}, {"character", len}}}};
}

struct Document {
  std::string uri;
  std::string name;  // the source's name in the Diagnosis (the file's path)
  int version = 0;
  std::shared_ptr<const std::string> text;
  uint64_t generation = 0;  // bumped by every change
  uint64_t diagnosed = 0;   // the generation `diagnosis` is of (0: none yet)
  std::shared_ptr<const analyze::Diagnosis> diagnosis;
};

// A request that waits for its document's diagnosis (hover, code actions, the report).
struct Parked {
  json id;
  std::string method;
  json params;
  std::string uri;
};

class Server {
 public:
  explicit Server(Loaded loaded) : loaded_(std::move(loaded)) {}

  int run() {
    std::thread worker([this] { diagnose_loop(); });
    lsp::MessageReader reader(STDIN_FILENO);
    int rc = 1;
    while (auto body = reader.next()) {
      if (handle_message(*body, rc)) break;
    }
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      if (running_cancel_) running_cancel_->store(true);
    }
    cv_.notify_all();
    worker.join();
    return rc;
  }

 private:
  // ---- output ----
  void send(const json& msg) {
    const std::string body = dump(msg);
    const std::string frame = fmt::format("Content-Length: {}\r\n\r\n", body.size()) + body;
    std::lock_guard lock(out_mu_);
    size_t off = 0;
    while (off < frame.size()) {
      const ssize_t n = ::write(STDOUT_FILENO, frame.data() + off, frame.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the client went away; the end of stdin follows
      off += static_cast<size_t>(n);
    }
  }
  void respond(const json& id, json result) { send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}); }
  void respond_error(const json& id, int code, const std::string& message) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
  }
  void notify(const std::string& method, json params) {
    send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  void request(const std::string& method, json params) {
    send({{"jsonrpc", "2.0"}, {"id", fmt::format("firstfault-{}", ++next_request_)}, {"method", method},
          {"params", std::move(params)}});
  }
  void log(const std::string& text) { fmt::print(stderr, "firstfault lsp: {}\n", escape_for_terminal(text)); }

  // ---- input ----
  // Returns true when the server should stop (exit); rc is the exit code then.
  bool handle_message(const std::string& body, int& rc) {
    json msg = json::parse(body, nullptr, false);
    if (msg.is_discarded() || !msg.is_object()) {
      log("a message that is not a JSON object; answered with ParseError");
      respond_error(nullptr, kParseError, "the message is not a JSON object");
      return false;
    }
    const bool has_id = msg.contains("id") && (msg["id"].is_string() || msg["id"].is_number_integer());
    if (!msg.contains("method")) return false;  // a response to one of our requests
    if (!msg["method"].is_string()) {
      if (has_id) respond_error(msg["id"], kInvalidRequest, "method is not a string");
      return false;
    }
    const std::string method = msg["method"];
    json params = msg.contains("params") ? msg["params"] : json::object();
    const json id = has_id ? msg["id"] : json(nullptr);
    try {
      if (method == "exit") {
        rc = shutdown_ ? 0 : 1;
        return true;
      }
      if (!has_id) {
        handle_notification(method, params);
        return false;
      }
      if (!initialized_ && method != "initialize") {
        respond_error(id, kServerNotInitialized, "initialize first");
      } else if (shutdown_) {
        respond_error(id, kInvalidRequest, "the server is shutting down");
      } else {
        handle_request(id, method, params);
      }
    } catch (const json::exception& e) {
      log(fmt::format("{}: bad parameters: {}", method, e.what()));
      if (has_id) respond_error(id, kInvalidParams, fmt::format("bad parameters for {}: {}", method, e.what()));
    } catch (const std::exception& e) {
      log(fmt::format("{}: {}", method, e.what()));
      if (has_id) respond_error(id, kInternalError, e.what());
    }
    return false;
  }

  void handle_notification(const std::string& method, const json& params) {
    if (method == "$/cancelRequest") {
      cancel_request(params.at("id"));
    } else if (method == "initialized" || method == "$/setTrace" || method == "workspace/didChangeConfiguration" ||
               method == "textDocument/didSave") {
      // nothing to do
    } else if (!initialized_) {
      // notifications before initialize are dropped (LSP)
    } else if (method == "textDocument/didOpen") {
      const json& td = params.at("textDocument");
      open(td.at("uri").get<std::string>(), td.value("version", 0), td.at("text").get<std::string>());
    } else if (method == "textDocument/didChange") {
      change(params.at("textDocument").at("uri").get<std::string>(), params.at("textDocument").value("version", 0),
             params.at("contentChanges"));
    } else if (method == "textDocument/didClose") {
      close(params.at("textDocument").at("uri").get<std::string>());
    } else if (!starts_with(method, "$/")) {
      log("ignored notification " + method);
    }
  }

  void handle_request(const json& id, const std::string& method, const json& params) {
    if (method == "initialize") {
      initialized_ = true;
      json caps;
      caps["positionEncoding"] = "utf-16";
      caps["textDocumentSync"] = {{"openClose", true}, {"change", 2}};  // 2: incremental
      caps["hoverProvider"] = true;
      caps["codeActionProvider"] = {{"codeActionKinds", json::array({"quickfix"})}};
      caps["executeCommandProvider"] = {
          {"commands", {"firstfault.openEntry", "firstfault.openReport", "firstfault.copyVerifyCommand"}}};
      respond(id, {{"capabilities", caps}, {"serverInfo", {{"name", "firstfault"}, {"version", FF_VERSION}}}});
    } else if (method == "shutdown") {
      shutdown_ = true;
      respond(id, nullptr);
    } else if (method == "textDocument/hover" || method == "textDocument/codeAction") {
      park(id, method, params, params.at("textDocument").at("uri").get<std::string>());
    } else if (method == "workspace/executeCommand") {
      execute(id, params);
    } else {
      respond_error(id, kMethodNotFound, "no method " + method);
    }
  }

  // ---- documents ----
  void open(const std::string& uri, int version, std::string text) {
    {
      std::lock_guard lock(mu_);
      Document& d = docs_[uri];
      d.uri = uri;
      d.name = uri_to_path(uri);
      d.version = version;
      d.text = std::make_shared<const std::string>(std::move(text));
      ++d.generation;
      schedule(uri, Clock::now());
    }
    cv_.notify_all();
  }

  void change(const std::string& uri, int version, const json& changes) {
    {
      std::lock_guard lock(mu_);
      auto it = docs_.find(uri);
      if (it == docs_.end()) {
        log("didChange for a document that is not open: " + uri);
        return;
      }
      Document& d = it->second;
      std::string text = *d.text;
      for (const auto& c : changes) {
        if (!c.contains("range")) {
          text = c.at("text").get<std::string>();
          continue;
        }
        const json& r = c.at("range");
        size_t b = lsp::byte_offset(text, r.at("start").at("line").get<size_t>(), r.at("start").at("character").get<size_t>());
        size_t e = lsp::byte_offset(text, r.at("end").at("line").get<size_t>(), r.at("end").at("character").get<size_t>());
        if (e < b) std::swap(b, e);
        text.replace(b, e - b, c.at("text").get<std::string>());
      }
      d.text = std::make_shared<const std::string>(std::move(text));
      d.version = version;
      ++d.generation;
      schedule(uri, Clock::now() + kDebounce);
    }
    cv_.notify_all();
  }

  void close(const std::string& uri) {
    std::vector<Parked> orphans;
    {
      std::lock_guard lock(mu_);
      docs_.erase(uri);
      pending_.erase(uri);
      if (running_uri_ == uri && running_cancel_) running_cancel_->store(true);
      orphans = take_parked(uri);
    }
    for (const auto& p : orphans) respond(p.id, nullptr);
    notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
  }

  // Called with mu_ held: the requests parked on uri, taken out.
  std::vector<Parked> take_parked(const std::string& uri) {
    std::vector<Parked> out;
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->uri == uri) {
        out.push_back(std::move(*it));
        it = parked_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  // Called with mu_ held: diagnose uri at `when`; a diagnosis of it in flight is stale.
  void schedule(const std::string& uri, Clock::time_point when) {
    pending_[uri] = when;
    if (running_uri_ == uri && running_cancel_) running_cancel_->store(true);
  }

  // ---- the diagnosing thread ----
  void diagnose_loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (stopping_) return;
      if (pending_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto next = std::min_element(pending_.begin(), pending_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      if (next->second > Clock::now()) {
        cv_.wait_until(lock, next->second);
        continue;
      }
      const std::string uri = next->first;
      pending_.erase(next);
      auto doc = docs_.find(uri);
      if (doc == docs_.end()) continue;
      const std::shared_ptr<const std::string> text = doc->second.text;
      const std::string name = doc->second.name;
      const uint64_t generation = doc->second.generation;
      auto cancel = std::make_shared<std::atomic<bool>>(false);
      running_uri_ = uri;
      running_cancel_ = cancel;
      lock.unlock();
      std::optional<analyze::Diagnosis> d = diagnose_text(loaded_, name, *text, cancel.get());
      lock.lock();
      running_uri_.clear();
      running_cancel_.reset();
      doc = docs_.find(uri);
      if (!d || doc == docs_.end() || doc->second.generation != generation) continue;  // superseded
      doc->second.diagnosis = std::make_shared<const analyze::Diagnosis>(std::move(*d));
      doc->second.diagnosed = generation;
      const json diagnostics = diagnostics_of(doc->second);
      const int version = doc->second.version;
      const std::vector<Parked> ready = take_parked(uri);
      const Document snapshot = doc->second;
      lock.unlock();
      notify("textDocument/publishDiagnostics", {{"uri", uri}, {"version", version}, {"diagnostics", diagnostics}});
      for (const auto& p : ready) answer(p, snapshot);
      lock.lock();
    }
  }

  // ---- what the diagnosis says, per line ----
  // The log line (0-based) of the user's frame: the traceback's `File "f", line n` line
  // nearest above the decisive line.
  static std::optional<size_t> user_frame_line(const Document& doc, const analyze::Finding& p) {
    if (!p.user_frame || p.evidence.empty() || p.evidence[0].line == 0) return std::nullopt;
    const std::string needle = fmt::format("File \"{}\", line {}", p.user_frame->file, p.user_frame->line);
    const std::string_view text = *doc.text;
    const size_t decisive0 = p.evidence[0].line - 1;
    // Only the lines above the decisive one, nearest first, up to a traceback's length.
    size_t end = lsp::byte_offset(text, decisive0, 0);  // where the line below starts
    size_t line = decisive0;
    for (size_t n = 0; n < 5000 && end > 0; ++n) {
      const size_t stop = end - 1;  // the '\n' that ends the line above
      size_t b = stop == 0 ? std::string_view::npos : text.rfind('\n', stop - 1);
      b = b == std::string_view::npos ? 0 : b + 1;
      --line;
      if (text.substr(b, stop - b).find(needle) != std::string_view::npos) return line;
      end = b;
    }
    return std::nullopt;
  }

  json diagnostics_of(const Document& doc) const {
    json out = json::array();
    const analyze::Diagnosis& d = *doc.diagnosis;
    if (!d.primary || d.primary->evidence.empty() || d.primary->evidence[0].line == 0) return out;
    const analyze::Finding& p = *d.primary;
    const analyze::Evidence& decisive = p.evidence[0];
    const size_t line0 = decisive.line - 1;
    json primary;
    primary["range"] = range_of_line(*doc.text, line0);
    primary["severity"] = 1;
    primary["source"] = "firstfault";
    primary["code"] = p.id;
    std::string where;
    if (p.rank) where = fmt::format(" on rank {}", *p.rank);
    if (!p.node.empty()) where += " (node " + p.node + ")";
    primary["message"] = fmt::format("{}{}: the first failure of this log ({})", p.title, where, p.category);
    primary["data"] = {{"id", p.id}};
    out.push_back(std::move(primary));
    const json decisive_location = {{"uri", doc.uri}, {"range", range_of_line(*doc.text, line0)}};
    for (const auto& c : d.collateral) {
      if (c.first.line == 0 || c.first.source != decisive.source) continue;
      json diag;
      diag["range"] = range_of_line(*doc.text, c.first.line - 1);
      diag["severity"] = 3;
      diag["source"] = "firstfault";
      diag["code"] = c.id;
      diag["message"] = fmt::format("Collateral: {} ({} line{}), explained by {}", c.title, c.count,
                                    c.count == 1 ? "" : "s", c.explained_by.empty() ? p.id : c.explained_by);
      diag["relatedInformation"] = json::array({{{"location", decisive_location}, {"message", "the first failure: " + p.title}}});
      diag["data"] = {{"id", c.id}};
      out.push_back(std::move(diag));
    }
    if (auto frame = user_frame_line(doc, p)) {
      json diag;
      diag["range"] = range_of_line(*doc.text, *frame);
      diag["severity"] = 4;
      diag["source"] = "firstfault";
      diag["message"] = fmt::format("Your code: {}:{}{}, the innermost frame of yours in the traceback of {}",
                                    p.user_frame->file, p.user_frame->line,
                                    p.user_frame->function.empty() ? "" : " in " + p.user_frame->function, p.title);
      diag["relatedInformation"] = json::array({{{"location", decisive_location}, {"message", "the decisive line"}}});
      diag["data"] = {{"id", p.id}};
      out.push_back(std::move(diag));
    }
    return out;
  }

  // The KB entry that recognises line0 of doc (the diagnosis's primary wins its own line).
  const kb::Entry* entry_for_line(const Document& doc, size_t line0, bool& decisive) const {
    decisive = false;
    if (doc.diagnosis && doc.diagnosis->primary && !doc.diagnosis->primary->evidence.empty() &&
        doc.diagnosis->primary->evidence[0].line == line0 + 1) {
      decisive = true;
      if (const kb::Entry* e = loaded_.kb->find(doc.diagnosis->primary->id)) return e;
      return nullptr;  // an unrecognised crash: no entry, the diagnosis speaks for it
    }
    std::string clean;
    record::clean_line(lsp::line_at(*doc.text, line0), clean);
    record::Record rec;
    loaded_.engine->prefixes().parse(clean, rec);
    if (trim(rec.message).empty()) return nullptr;
    LineWinner w = best_entry_for_line(*loaded_.engine, rec.message);
    return w.entry_id.empty() ? nullptr : loaded_.kb->find(w.entry_id);
  }

  static std::string verify_of(const Document& doc, const kb::Entry* e, bool decisive) {
    if (decisive && doc.diagnosis && doc.diagnosis->primary) return doc.diagnosis->primary->verify;
    return e ? e->verify : "";
  }

  json hover(const json& params, const Document& doc) const {
    const size_t line0 = params.at("position").at("line").get<size_t>();
    bool decisive = false;
    const kb::Entry* e = entry_for_line(doc, line0, decisive);
    const analyze::Finding* p = decisive ? &*doc.diagnosis->primary : nullptr;
    if (!e && !p) return nullptr;
    std::string md;
    const std::string title = e ? e->title : p->title;
    const std::string id = e ? e->id : p->id;
    md += fmt::format("**{}** `{}`\n\n", title, id);
    if (p) md += fmt::format("The first failure of this log ({}).\n\n", p->rank ? fmt::format("rank {}", *p->rank) : "rank unknown");
    const std::string summary = e ? e->summary : p->summary;
    if (!summary.empty()) md += std::string(trim(summary)) + "\n\n";
    const std::vector<std::string>& fix = p ? p->fix : e->fix;
    if (!fix.empty()) {
      md += "**Fix**\n\n";
      for (size_t i = 0; i < fix.size(); ++i) md += fmt::format("{}. {}\n", i + 1, trim(fix[i]));
      md += "\n";
    }
    if (std::string v = verify_of(doc, e, decisive); !v.empty()) md += "**Verify**\n\n```sh\n" + std::string(trim(v)) + "\n```\n";
    return {{"contents", {{"kind", "markdown"}, {"value", md}}}, {"range", range_of_line(*doc.text, line0)}};
  }

  json code_actions(const json& params, const Document& doc) const {
    json out = json::array();
    const json& range = params.at("range");
    const size_t first = range.at("start").at("line").get<size_t>();
    const size_t last = std::min(range.at("end").at("line").get<size_t>(), first + 50);
    std::set<std::string> seen;
    const json diagnostics = params.contains("context") ? params["context"].value("diagnostics", json::array()) : json::array();
    for (size_t line0 = first; line0 <= last; ++line0) {
      bool decisive = false;
      const kb::Entry* e = entry_for_line(doc, line0, decisive);
      if (!e || !seen.insert(e->id).second) continue;
      json related = json::array();
      for (const auto& dg : diagnostics)
        if (dg.contains("code") && dg["code"] == e->id) related.push_back(dg);
      auto action = [&](const std::string& title, const std::string& command, json args) {
        json a = {{"title", title}, {"kind", "quickfix"}, {"command", {{"title", title}, {"command", command}, {"arguments", args}}}};
        if (!related.empty()) a["diagnostics"] = related;
        out.push_back(std::move(a));
      };
      action("firstfault: open the entry " + e->id, "firstfault.openEntry", json::array({e->id}));
      if (std::string v = verify_of(doc, e, decisive); !v.empty())
        action("firstfault: copy the verify command", "firstfault.copyVerifyCommand", json::array({v}));
    }
    if (doc.diagnosis && doc.diagnosis->primary) {
      const std::string title = "firstfault: open the HTML report";
      out.push_back({{"title", title}, {"kind", "quickfix"},
                     {"command", {{"title", title}, {"command", "firstfault.openReport"}, {"arguments", json::array({doc.uri})}}}});
    }
    return out;
  }

  void park(const json& id, const std::string& method, const json& params, const std::string& uri) {
    Document snapshot;
    {
      std::lock_guard lock(mu_);
      auto it = docs_.find(uri);
      if (it == docs_.end()) {
        respond(id, nullptr);
        return;
      }
      if (it->second.diagnosed != it->second.generation) {
        parked_.push_back({id, method, params, uri});
        return;
      }
      snapshot = it->second;
    }
    answer({id, method, params, uri}, snapshot);
  }

  void answer(const Parked& p, const Document& doc) {
    try {
      if (p.method == "textDocument/hover") {
        respond(p.id, hover(p.params, doc));
      } else if (p.method == "textDocument/codeAction") {
        respond(p.id, code_actions(p.params, doc));
      } else if (p.method == "firstfault.openReport") {
        open_report(p.id, doc);
      }
    } catch (const json::exception& e) {
      respond_error(p.id, kInvalidParams, fmt::format("bad parameters for {}: {}", p.method, e.what()));
    }
  }

  void cancel_request(const json& id) {
    std::optional<Parked> gone;
    {
      std::lock_guard lock(mu_);
      for (auto it = parked_.begin(); it != parked_.end(); ++it) {
        if (it->id == id) {
          gone = std::move(*it);
          parked_.erase(it);
          break;
        }
      }
    }
    // A request already answered, or unknown: nothing to do (LSP).
    if (gone) respond_error(gone->id, kRequestCancelled, "cancelled");
  }

  // ---- commands ----
  // A private folder for the files the commands write (0700, made once).
  std::string temp_dir() {
    if (!temp_dir_.empty()) return temp_dir_;
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/firstfault-lsp-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error(std::string("cannot make a temporary folder: ") + std::strerror(errno));
    temp_dir_ = tmpl;
    return temp_dir_;
  }

  std::string write_temp(const std::string& name, const std::string& bytes) {
    const std::string path = temp_dir() + "/" + name;
    if (std::string problem = write_output_file(path, bytes); !problem.empty())
      throw std::runtime_error("cannot write " + path + ": " + problem);
    return path;
  }

  void show(const json& id, const std::string& path, bool external) {
    const std::string uri = path_to_file_uri(path);
    request("window/showDocument", {{"uri", uri}, {"external", external}, {"takeFocus", true}});
    respond(id, {{"uri", uri}, {"path", path}});
  }

  void open_report(const json& id, const Document& doc) {
    if (!doc.diagnosis) {
      respond_error(id, kInvalidParams, "no diagnosis of that document yet");
      return;
    }
    report::HtmlOptions ho;
    ho.generator = "firstfault " FF_VERSION;
    const std::string path = write_temp(fmt::format("report-{}.html", ++files_), report::render_html(*doc.diagnosis, ho));
    show(id, path, true);
  }

  static std::string entry_markdown(const kb::Entry& e) {
    std::string md = fmt::format("# {}\n\n`{}` · {} · {}\n\n{}\n", e.title, e.id, e.category, e.phase, trim(e.summary));
    if (!e.root_cause.empty()) md += fmt::format("\n## Root cause\n\n{}\n", trim(e.root_cause));
    if (!e.fix.empty()) {
      md += "\n## Fix\n\n";
      for (size_t i = 0; i < e.fix.size(); ++i) md += fmt::format("{}. {}\n", i + 1, trim(e.fix[i]));
    }
    if (!e.verify.empty()) md += fmt::format("\n## Verify\n\n```sh\n{}\n```\n", trim(e.verify));
    if (!e.prevention.empty()) {
      md += "\n## Prevention\n\n";
      for (const auto& p : e.prevention) md += fmt::format("- {}\n", trim(p));
    }
    if (!e.references.empty()) {
      md += "\n## References\n\n";
      for (const auto& r : e.references) md += fmt::format("- {}{}\n", r.url, r.note.empty() ? "" : " (" + r.note + ")");
    }
    return md;
  }

  void execute(const json& id, const json& params) {
    const std::string command = params.at("command").get<std::string>();
    const json args = params.value("arguments", json::array());
    if (command == "firstfault.openEntry") {
      const std::string entry = args.at(0).get<std::string>();
      const kb::Entry* e = loaded_.kb->find(entry);
      if (!e) {
        respond_error(id, kInvalidParams, "no entry " + entry);
        return;
      }
      // The id is [a-z0-9._-] for KB entries; an override's may be anything: made safe.
      std::string file;
      for (char c : e->id) file += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
      show(id, write_temp(file + ".md", entry_markdown(*e)), false);
    } else if (command == "firstfault.copyVerifyCommand") {
      // No clipboard in LSP: the client's own command copies it (the VS Code extension
      // does); others get the text in a message and in the result.
      const std::string text = args.at(0).get<std::string>();
      notify("window/showMessage", {{"type", 3}, {"message", "Verify with:\n" + text}});
      respond(id, {{"text", text}});
    } else if (command == "firstfault.openReport") {
      park(id, command, params, args.at(0).get<std::string>());
    } else {
      respond_error(id, kInvalidParams, "no command " + command);
    }
  }

  Loaded loaded_;
  bool initialized_ = false;
  bool shutdown_ = false;
  int next_request_ = 0;
  int files_ = 0;
  std::string temp_dir_;

  std::mutex out_mu_;
  std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  std::map<std::string, Document> docs_;
  std::map<std::string, Clock::time_point> pending_;
  std::deque<Parked> parked_;
  std::string running_uri_;
  std::shared_ptr<std::atomic<bool>> running_cancel_;
  bool stopping_ = false;
};

}  // namespace

int run_lsp(const Options& opt) {
  auto loaded = load_everything(opt, false, KbFields::kAll);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return 2;
  }
  Server server(std::move(*loaded));
  return server.run();
}

}  // namespace ff::app
