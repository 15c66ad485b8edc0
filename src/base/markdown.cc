#include "base/markdown.h"

#include "base/escape.h"

namespace ff {

namespace {

enum class Mode { kHtml, kPlainTicks, kPlainBare };

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_escapable(char c) { return c == '*' || c == '`' || c == '[' || c == '\\'; }

// One pass over a text (already HTML-escaped in kHtml mode: escape_html leaves every
// delimiter alone). A search for a closing delimiter that fails is remembered, so a text
// full of unpaired delimiters stays linear rather than quadratic.
struct Parser {
  std::string_view s;
  Mode mode;
  bool unmatched = false;  // a delimiter was shown as itself
  size_t no_tick_from = std::string_view::npos;
  size_t no_strong_from = std::string_view::npos;
  size_t no_em_from = std::string_view::npos;

  // A lone `*` that is a delimiter: not a space on both sides.
  bool em_star(size_t i) const {
    if (s[i] != '*' || (i + 1 < s.size() && s[i + 1] == '*') || (i > 0 && s[i - 1] == '*')) return false;
    bool before = i > 0 && !is_space(s[i - 1]);
    bool after = i + 1 < s.size() && !is_space(s[i + 1]);
    return before || after;
  }

  size_t close_tick(size_t from) {
    if (from >= no_tick_from) return std::string_view::npos;
    for (size_t i = from; i < s.size(); ++i)
      if (s[i] == '`') return i;
    no_tick_from = from;
    return std::string_view::npos;
  }

  // The position of the closing delimiter for `**` (strong) or a lone `*` (em), skipping
  // escapes and code spans; npos when there is none.
  size_t close_star(size_t from, bool strong) {
    size_t& none = strong ? no_strong_from : no_em_from;
    if (from >= none) return std::string_view::npos;
    for (size_t i = from; i < s.size(); ++i) {
      char c = s[i];
      if (c == '\\' && i + 1 < s.size() && is_escapable(s[i + 1])) {
        ++i;
      } else if (c == '`') {
        size_t j = close_tick(i + 1);
        if (j == std::string_view::npos) break;
        i = j;
      } else if (c == '*' && i + 1 < s.size() && s[i + 1] == '*') {
        if (strong) return i;
        ++i;
      } else if (!strong && em_star(i)) {
        return i;
      }
    }
    none = from;
    return std::string_view::npos;
  }

  // [text](target): the end of the text (the ']') and of the target (the ')'), or npos.
  std::pair<size_t, size_t> link_at(size_t open) {
    size_t i = open + 1;
    for (; i < s.size(); ++i) {
      if (s[i] == '\\' && i + 1 < s.size() && is_escapable(s[i + 1])) {
        ++i;
      } else if (s[i] == '`') {
        size_t j = close_tick(i + 1);
        if (j == std::string_view::npos) return {std::string_view::npos, 0};
        i = j;
      } else if (s[i] == ']' || s[i] == '[' || s[i] == '\n') {
        break;
      }
    }
    if (i >= s.size() || s[i] != ']' || i + 1 >= s.size() || s[i + 1] != '(') return {std::string_view::npos, 0};
    int depth = 0;
    for (size_t j = i + 2; j < s.size(); ++j) {
      if (is_space(s[j])) break;
      if (s[j] == '(') ++depth;
      if (s[j] == ')' && depth-- == 0)
        return j > i + 2 ? std::pair{i, j} : std::pair{std::string_view::npos, size_t{0}};
    }
    return {std::string_view::npos, 0};
  }

  // An unpaired backtick that opens a GNU-style quote, `name' (a word without spaces, at
  // most 80 bytes, closed by an apostrophe, escaped as &#39; in kHtml mode): where the
  // apostrophe starts, or npos.
  size_t gnu_quote(size_t open, size_t to) const {
    const std::string_view apos = mode == Mode::kHtml ? "&#39;" : "'";
    for (size_t k = open + 1; k < to && k < open + 80; ++k) {
      if (is_space(s[k]) || s[k] == '`') return std::string_view::npos;
      if (s.compare(k, apos.size(), apos) == 0) return k > open + 1 ? k : std::string_view::npos;
    }
    return std::string_view::npos;
  }

  void code(std::string_view body, std::string& out) const {
    switch (mode) {
      case Mode::kHtml:
        out += "<code>";
        out += body;
        out += "</code>";
        break;
      case Mode::kPlainTicks:
        out += '`';
        out += body;
        out += '`';
        break;
      case Mode::kPlainBare: out += body; break;
    }
  }

  void render(size_t from, size_t to, std::string& out) {
    size_t i = from;
    while (i < to) {
      char c = s[i];
      if (c == '\\' && i + 1 < to && is_escapable(s[i + 1])) {
        out += s[i + 1];
        i += 2;
      } else if (c == '`') {
        size_t j = close_tick(i + 1);
        size_t gnu = j == std::string_view::npos || j >= to ? gnu_quote(i, to) : std::string_view::npos;
        if (gnu != std::string_view::npos) {
          // `name' as GNU tools and Slurm quote: shown as ‘name’ in a page, kept in plain text.
          unmatched = true;
          out += mode == Mode::kHtml ? "\xE2\x80\x98" : "`";
          out += s.substr(i + 1, gnu - i - 1);
          out += mode == Mode::kHtml ? "\xE2\x80\x99" : "'";
          i = gnu + (mode == Mode::kHtml ? 5 : 1);  // past the &#39; or the apostrophe
        } else if (j == std::string_view::npos || j >= to) {
          unmatched = true;
          out += c;
          ++i;
        } else {
          code(s.substr(i + 1, j - i - 1), out);
          i = j + 1;
        }
      } else if (c == '*' && i + 1 < to && s[i + 1] == '*') {
        size_t j = close_star(i + 2, true);
        if (j == std::string_view::npos || j >= to || j == i + 2) {
          unmatched = true;
          out += "**";
          i += 2;
        } else {
          out += mode == Mode::kHtml ? "<strong>" : "";
          render(i + 2, j, out);
          out += mode == Mode::kHtml ? "</strong>" : "";
          i = j + 2;
        }
      } else if (c == '*' && em_star(i)) {
        size_t j = close_star(i + 1, false);
        if (j == std::string_view::npos || j >= to || j == i + 1) {
          unmatched = true;
          out += c;
          ++i;
        } else {
          out += mode == Mode::kHtml ? "<em>" : "";
          render(i + 1, j, out);
          out += mode == Mode::kHtml ? "</em>" : "";
          i = j + 1;
        }
      } else if (c == '[') {
        auto [text_end, url_end] = link_at(i);
        if (text_end == std::string_view::npos || url_end >= to) {
          out += c;
          ++i;
          continue;
        }
        std::string_view url = s.substr(text_end + 2, url_end - text_end - 2);
        if (mode == Mode::kHtml && url.substr(0, 8) == "https://") {
          out += "<a href=\"";
          out += url;
          out += "\" rel=\"noopener noreferrer\">";
          render(i + 1, text_end, out);
          out += "</a>";
        } else {
          render(i + 1, text_end, out);
          out += " (";
          out += url;
          out += ")";
        }
        i = url_end + 1;
      } else {
        out += c;
        ++i;
      }
    }
  }
};

std::string run(std::string_view text, Mode mode, bool* balanced = nullptr) {
  std::string escaped;
  if (mode == Mode::kHtml) {
    escaped = escape_html(text);
    text = escaped;
  }
  Parser p{text, mode};
  std::string out;
  out.reserve(text.size() + 16);
  p.render(0, text.size(), out);
  if (balanced) *balanced = !p.unmatched;
  return out;
}

}  // namespace

std::string markdown_html(std::string_view text) { return run(text, Mode::kHtml); }

std::string markdown_plain(std::string_view text, PlainCode code) {
  return run(text, code == PlainCode::kBare ? Mode::kPlainBare : Mode::kPlainTicks);
}

bool markdown_balanced(std::string_view text) {
  bool ok = true;
  run(text, Mode::kPlainBare, &ok);
  return ok;
}

}  // namespace ff
