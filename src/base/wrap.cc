#include "base/wrap.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "base/strings.h"

namespace ff {

namespace {

// Decodes one UTF-8 code point at s[i]; returns its length (1 for a stray byte).
size_t decode(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) n = 1;
  cp = n == 1 ? b : b & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) {
      cp = b;
      return 1;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  return n;
}

bool is_wide(uint32_t cp) {
  return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
         (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) || (cp >= 0x1F900 && cp <= 0x1F9FF) ||
         (cp >= 0x20000 && cp <= 0x3FFFD);
}

bool is_combining(uint32_t cp) { return (cp >= 0x300 && cp <= 0x36F) || cp == 0x200B || cp == 0xFE0F; }

// Length of the escape sequence starting at s[i] (ESC [ params final, or ESC x), 0 if none.
size_t escape_length(std::string_view s, size_t i) {
  if (s[i] != '\x1b') return 0;
  if (i + 1 >= s.size()) return 1;
  if (s[i + 1] != '[') return 2;
  size_t j = i + 2;
  while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7E)) ++j;
  return std::min(s.size(), j + 1) - i;
}

// One step through `s`: the bytes of the next character (or escape) and its columns.
struct Step {
  size_t bytes;
  size_t cols;
};
Step step(std::string_view s, size_t i) {
  if (size_t e = escape_length(s, i)) return {e, 0};
  uint32_t cp = 0;
  size_t n = decode(s, i, cp);
  if (cp < 0x20 || cp == 0x7F) return {n, 0};
  return {n, is_combining(cp) ? 0u : is_wide(cp) ? 2u : 1u};
}

// Width of the list marker after the indentation of `line`: "- ", "* ", "> ", "12. ".
size_t marker_width(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i > 0 && i < line.size() && line[i] == '.' && i + 1 < line.size() && line[i + 1] == ' ') return i + 2;
  if (line.size() >= 2 && (line[0] == '-' || line[0] == '*' || line[0] == '>' || line[0] == '$') && line[1] == ' ')
    return 2;
  return 0;
}

void wrap_line(std::string_view line, size_t width, std::string& out) {
  if (display_width(line) <= width) {
    out.append(line);
    return;
  }
  size_t lead = 0;
  while (lead < line.size() && line[lead] == ' ') ++lead;
  size_t hang = lead + marker_width(line.substr(lead));
  if (hang >= width / 2) hang = std::min<size_t>(lead, width / 4);  // a deep indent would leave no room
  // A shell command ("$ cmd ...") is continued with a backslash, so it still pastes.
  const bool shell = line.substr(lead, 2) == "$ ";
  if (shell && width > hang + 12) width -= 2;
  const std::string cont = shell ? " \\" : "";
  const std::string indent(hang, ' ');
  size_t col = 0;
  size_t i = 0;
  bool at_start = true;  // nothing but indentation on this output line yet
  while (i < line.size()) {
    // The next run of spaces, then the next word.
    size_t sp = i;
    while (sp < line.size() && line[sp] == ' ') ++sp;
    size_t w = sp;
    size_t word_cols = 0;
    while (w < line.size() && line[w] != ' ') {
      Step st = step(line, w);
      w += st.bytes;
      word_cols += st.cols;
    }
    const size_t space_cols = sp - i;
    if (!at_start && col + space_cols + word_cols > width) {
      out += cont;
      out += '\n';
      out += indent;
      col = hang;
      at_start = true;
      i = sp;  // the spaces at the break are dropped
      continue;
    }
    out.append(line.substr(i, space_cols));
    col += space_cols;
    // The word itself, cut where it is wider than the room left on a fresh line; but not
    // in a shell command, where a cut inside quotes would change the command: there the
    // word runs past the width (the terminal folds it, and it still pastes as one line).
    size_t k = sp;
    while (k < w) {
      Step st = step(line, k);
      if (!shell && col + st.cols > width && col > hang) {
        out += '\n';
        out += indent;
        col = hang;
      }
      out.append(line.substr(k, st.bytes));
      col += st.cols;
      k += st.bytes;
    }
    at_start = false;
    i = w;
  }
}

}  // namespace

size_t display_width(std::string_view s) {
  size_t cols = 0;
  for (size_t i = 0; i < s.size();) {
    Step st = step(s, i);
    i += st.bytes;
    cols += st.cols;
  }
  return cols;
}

std::string wrap_text(std::string_view text, size_t width) {
  if (width == 0 && text.find(kVerbatim) == std::string_view::npos) return std::string(text);
  if (width != 0) width = std::max<size_t>(width, 8);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!line.empty() && line[0] == kVerbatim)
      out.append(line.substr(1));
    else if (width == 0)
      out.append(line);
    else
      wrap_line(line, width, out);
    if (nl == std::string_view::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

std::string fit_width(std::string_view s, size_t width) {
  if (display_width(s) <= width) return std::string(s);
  if (width == 0) return {};
  std::string out;
  size_t cols = 0;
  for (size_t i = 0; i < s.size();) {
    Step st = step(s, i);
    if (cols + st.cols > width - 1) break;
    out.append(s.substr(i, st.bytes));
    cols += st.cols;
    i += st.bytes;
  }
  if (out.find('\x1b') != std::string::npos) out += "\x1b[0m";
  return out + "\xE2\x80\xA6";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> nearest_words(std::string_view word, const std::vector<std::string>& candidates, size_t max) {
  const std::string w = to_lower(word);
  const size_t limit = std::clamp<size_t>(w.size() / 3, 1, 3);
  std::vector<std::pair<size_t, const std::string*>> close;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(w, to_lower(c));
    if (d <= limit) close.emplace_back(d, &c);
  }
  std::stable_sort(close.begin(), close.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, c] : close) {
    if (out.size() >= max) break;
    if (std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(*c);
  }
  if (!out.empty() || w.size() < 3) return out;
  // A part of a dotted id: the word between separators, or at the end.
  auto is_sep = [](char ch) { return ch == '.' || ch == '-' || ch == '_' || ch == '/' || ch == ' '; };
  for (const auto& c : candidates) {
    const std::string lc = to_lower(c);
    for (size_t at = lc.find(w); at != std::string::npos; at = lc.find(w, at + 1)) {
      const bool left = at == 0 || is_sep(lc[at - 1]);
      const bool right = at + w.size() == lc.size() || is_sep(lc[at + w.size()]);
      if (left && right) {
        out.push_back(c);
        break;
      }
    }
    if (out.size() >= max) break;
  }
  return out;
}

}  // namespace ff
