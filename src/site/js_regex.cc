// RE2 syntax -> JavaScript RegExp syntax, for the encyclopedia's client-side matcher.
#include <fmt/format.h>

#include <algorithm>

#include "site/site.h"

namespace ff::site {

namespace {

const char* posix_class(std::string_view name) {
  if (name == "alpha") return "A-Za-z";
  if (name == "digit") return "0-9";
  if (name == "alnum") return "A-Za-z0-9";
  if (name == "upper") return "A-Z";
  if (name == "lower") return "a-z";
  if (name == "space") return "\\t\\n\\v\\f\\r ";
  if (name == "blank") return "\\t ";
  if (name == "xdigit") return "0-9A-Fa-f";
  if (name == "punct") return "!-\\/:-@\\[-`{-~";
  if (name == "word") return "\\w";
  if (name == "cntrl") return "\\x00-\\x1f\\x7f";
  if (name == "print") return " -~";
  if (name == "graph") return "!-~";
  if (name == "ascii") return "\\x00-\\x7f";
  return nullptr;
}

bool is_flag(char c) { return c == 'i' || c == 's' || c == 'm' || c == 'U' || c == '-'; }

void add_flag(std::string& flags, char f) {
  if (flags.find(f) == std::string::npos) flags.push_back(f);
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::string js_escape_literal(std::string_view lit) {
  std::string out;
  for (char c : lit) {
    if (std::string_view("\\^$.*+?()[]{}|/").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// Over 80 lines: one scan over the RE2 syntax with a case per construct (escapes, classes,
// groups, flags, anchors); the cases share the scanner's position and output.
Result<JsRegex> to_js_regex(std::string_view rx) {
  JsRegex js;
  std::string& out = js.source;
  auto unsupported = [&](std::string_view what) {
    return make_error(ErrorCode::kFormat, fmt::format("JavaScript cannot express {} in '{}'", what, rx));
  };
  bool text_anchor = false;  // \A or \z, which (?m) would turn into line anchors
  size_t i = 0;
  while (i < rx.size()) {
    char c = rx[i];
    if (c == '\\') {
      if (i + 1 >= rx.size()) return unsupported("a trailing backslash");
      char n = rx[i + 1];
      if (n == 'A') {
        out += '^';
        text_anchor = true;
      } else if (n == 'z') {
        out += '$';
        text_anchor = true;
      } else if (n == 'C') {
        return unsupported("\\C");
      } else if (n == 'p' || n == 'P') {
        return unsupported("Unicode classes (\\p)");
      } else if (n == 'Q') {
        size_t end = rx.find("\\E", i + 2);
        std::string_view lit = rx.substr(i + 2, end == std::string_view::npos ? std::string_view::npos : end - i - 2);
        out += js_escape_literal(lit);
        i = end == std::string_view::npos ? rx.size() : end + 2;
        continue;
      } else if (n == 'x' && i + 2 < rx.size() && rx[i + 2] == '{') {
        size_t end = rx.find('}', i + 3);
        if (end == std::string_view::npos) return unsupported("an unterminated \\x{");
        std::string_view hex = rx.substr(i + 3, end - i - 3);
        if (hex.empty() || hex.size() > 4 || !std::all_of(hex.begin(), hex.end(), is_hex))
          return unsupported("\\x{} above U+FFFF");
        out += "\\u" + std::string(4 - hex.size(), '0') + std::string(hex);
        i = end + 1;
        continue;
      } else {
        out += c;
        out += n;
      }
      i += 2;
      continue;
    }
    if (c == '[') {
      // A character class, copied up to its closing bracket.
      out += '[';
      size_t j = i + 1;
      if (j < rx.size() && rx[j] == '^') {
        out += '^';
        ++j;
      }
      if (j < rx.size() && rx[j] == ']') {  // RE2: a leading ] is literal; in JS [] is empty
        out += "\\]";
        ++j;
      }
      bool closed = false;
      while (j < rx.size()) {
        char d = rx[j];
        if (d == ']') {
          closed = true;
          break;
        }
        if (d == '\\' && j + 1 < rx.size()) {
          char n = rx[j + 1];
          if (n == 'p' || n == 'P') return unsupported("Unicode classes (\\p)");
          if (n == 'x' && j + 2 < rx.size() && rx[j + 2] == '{') {
            size_t end = rx.find('}', j + 3);
            if (end == std::string_view::npos) return unsupported("an unterminated \\x{");
            std::string_view hex = rx.substr(j + 3, end - j - 3);
            if (hex.empty() || hex.size() > 4 || !std::all_of(hex.begin(), hex.end(), is_hex))
              return unsupported("\\x{} above U+FFFF");
            out += "\\u" + std::string(4 - hex.size(), '0') + std::string(hex);
            j = end + 1;
            continue;
          }
          out += d;
          out += n;
          j += 2;
          continue;
        }
        if (d == '[' && j + 1 < rx.size() && rx[j + 1] == ':') {
          size_t end = rx.find(":]", j + 2);
          if (end != std::string_view::npos) {
            std::string_view name = rx.substr(j + 2, end - j - 2);
            bool negated = !name.empty() && name[0] == '^';
            if (negated) return unsupported("a negated POSIX class");
            const char* expansion = posix_class(name);
            if (!expansion) return unsupported("an unknown POSIX class");
            out += expansion;
            j = end + 2;
            continue;
          }
        }
        if (d == '[') {
          out += "\\[";  // literal inside a class in both; escaped for clarity
          ++j;
          continue;
        }
        out += d;
        ++j;
      }
      if (!closed) return unsupported("an unterminated character class");
      out += ']';
      i = j + 1;
      continue;
    }
    if (c == '(' && i + 1 < rx.size() && rx[i + 1] == '?') {
      if (i + 2 < rx.size() && rx[i + 2] == 'P') {
        if (i + 3 < rx.size() && rx[i + 3] == '<') {
          out += "(?<";
          i += 4;
          continue;
        }
        return unsupported("(?P=...)");
      }
      // Inline flags: (?flags) or (?flags:...).
      size_t j = i + 2;
      while (j < rx.size() && is_flag(rx[j])) ++j;
      if (j > i + 2 && j < rx.size() && (rx[j] == ')' || rx[j] == ':')) {
        std::string_view fl = rx.substr(i + 2, j - i - 2);
        if (fl.find('U') != std::string_view::npos) return unsupported("(?U)");
        if (fl.find('-') != std::string_view::npos) return unsupported("flag removal (?-...)");
        // Applied to the whole pattern: exact at the start, a superset elsewhere.
        for (char f : fl) add_flag(js.flags, f);
        if (rx[j] == ')') {
          i = j + 1;
        } else {
          out += "(?:";
          i = j + 1;
        }
        continue;
      }
    }
    out += c;
    ++i;
  }
  if (text_anchor && js.flags.find('m') != std::string::npos) return unsupported("\\A or \\z with (?m)");
  return js;
}

}  // namespace ff::site
