// lsp/lsp.protocol.cc — the protocol side of `firstfault lsp`: LSP positions (UTF-16 code
// units), file URIs, JSON-RPC framing with Content-Length (MessageReader), the server's
// output and the dispatch of what the client sends.
#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "lsp/lsp.h"
#include "lsp/lsp_internal.h"
#include "base/escape.h"
#include "base/strings.h"

namespace ff::app::lsp {

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
  auto at_end = [&] { return text[at] == '\n' || (text[at] == '\r' && at + 1 < text.size() && text[at + 1] == '\n'); };
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
      const std::string_view value =
          colon == std::string_view::npos ? std::string_view() : trim(line.substr(colon + 1));
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

// ---- output ----

void Server::send(const json& msg) {
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

void Server::respond(const json& id, json result) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::respond_error(const json& id, int code, const std::string& message) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void Server::notify(const std::string& method, json params) {
  send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void Server::request(const std::string& method, json params) {
  send({{"jsonrpc", "2.0"},
        {"id", fmt::format("firstfault-{}", ++next_request_)},
        {"method", method},
        {"params", std::move(params)}});
}

void Server::log(const std::string& text) { fmt::print(stderr, "firstfault lsp: {}\n", escape_for_terminal(text)); }

// ---- input ----

bool json_deeper_than(std::string_view body, size_t limit) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

bool Server::handle_message(const std::string& body, int& rc) {
  if (json_deeper_than(body, kMaxJsonDepth)) {
    log(fmt::format("a message nested deeper than {} levels; answered with ParseError", kMaxJsonDepth));
    respond_error(nullptr, kParseError, fmt::format("the message nests deeper than {} levels", kMaxJsonDepth));
    return false;
  }
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
    if (!initialised_ && method != "initialize") {
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

void Server::handle_notification(const std::string& method, const json& params) {
  if (method == "$/cancelRequest") {
    cancel_request(params.at("id"));
  } else if (method == "initialized" || method == "$/setTrace" || method == "workspace/didChangeConfiguration" ||
             method == "textDocument/didSave") {
    // nothing to do
  } else if (!initialised_) {
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

void Server::handle_request(const json& id, const std::string& method, const json& params) {
  if (method == "initialize") {
    initialised_ = true;
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

}  // namespace ff::app::lsp
