#include "base/escape.h"

#include <cstdint>

#include "base/strings.h"

namespace ff {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void hex_byte(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// Length of the valid UTF-8 sequence at p[0..n) (1 to 4), or 0 when it is not one
// (overlong forms, surrogates and code points past U+10FFFF are not), with its code point.
size_t utf8_sequence(const unsigned char* p, size_t n, uint32_t& cp) {
  const unsigned char c = p[0];
  size_t len;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (len > n) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[k] & 0x3F);
  }
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    return 0;
  return len;
}

}  // namespace

std::string escape_for_terminal(std::string_view s, bool keep_newlines) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  // Most text is printable ASCII: nothing to do.
  size_t i = 0;
  while (i < s.size() && p[i] >= 0x20 && p[i] < 0x7F) ++i;
  if (i == s.size()) return std::string(s);
  std::string out(s.substr(0, i));
  out.reserve(s.size() + 16);
  while (i < s.size()) {
    const unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\t' || (c == '\n' && keep_newlines)) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == 0x1B) {
      out += "\\e";
      ++i;
    } else if (c < 0x80) {
      hex_byte(out, c);  // the other C0 controls and DEL
      ++i;
    } else {
      uint32_t cp = 0;
      const size_t len = utf8_sequence(p + i, s.size() - i, cp);
      if (len == 0) {
        hex_byte(out, c);  // not UTF-8: one byte at a time
        ++i;
      } else if (cp <= 0x9F) {
        out += "\\u{";  // a C1 control (CSI is U+009B)
        out += kHex[cp >> 4];
        out += kHex[cp & 15];
        out += '}';
        i += len;
      } else {
        out.append(s.substr(i, len));
        i += len;
      }
    }
  }
  return out;
}

std::string shell_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string escape_html(std::string_view text) {
  std::string s = sanitize_utf8(text);
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
          const unsigned cp = c == 0x7F ? 0x2421u : 0x2400u + static_cast<unsigned char>(c);
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

}  // namespace ff
