#include "template/template.h"

#include <cctype>
#include <cstdio>

#include "base/strings.h"

namespace ff::template_ {

namespace {

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

// Long because it is one pass over the line with a branch per kind of variable part
// (quoted values, paths, hex, numbers and sizes), in the order they must be tried.
std::string mask(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  auto emit_space = [&] {
    if (!out.empty() && out.back() != ' ') out.push_back(' ');
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == '\t') {
      emit_space();
      ++i;
      continue;
    }
    // Quoted values: 'x' "x" (short ones; long quoted text stays, it is usually prose).
    if ((c == '\'' || c == '"') && (i == 0 || !is_word(s[i - 1]))) {
      size_t close = s.find(c, i + 1);
      if (close != std::string_view::npos && close - i <= 200) {
        out += "<STR>";
        i = close + 1;
        continue;
      }
    }
    // Paths: a token that starts with '/' or './' or contains '/' between word chars.
    if (c == '/' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '(' || s[i - 1] == '=' || s[i - 1] == ':')) {
      size_t j = i;
      while (j < s.size() && s[j] != ' ' && s[j] != ',' && s[j] != ')' && s[j] != '\'' && s[j] != '"') ++j;
      if (j - i > 1) {
        out += "<PATH>";
        i = j;
        continue;
      }
    }
    // Hex: 0x... or long runs of hex digits with at least one digit and letter.
    if (c == '0' && i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X') && (i == 0 || !is_word(s[i - 1]))) {
      size_t j = i + 2;
      while (j < s.size() && is_hex(s[j])) ++j;
      out += "<HEX>";
      i = j;
      continue;
    }
    if (is_hex(c) && (i == 0 || !is_word(s[i - 1]))) {
      size_t j = i;
      bool digit = false, alpha = false;
      while (j < s.size() && is_hex(s[j])) {
        if (std::isdigit(static_cast<unsigned char>(s[j])))
          digit = true;
        else
          alpha = true;
        ++j;
      }
      if (j - i >= 8 && digit && alpha && (j == s.size() || !is_word(s[j]))) {
        out += "<HEX>";
        i = j;
        continue;
      }
    }
    // Numbers (with . : , - + e inside: versions, times, IPs, scientific).
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() &&
             (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == ':' ||
              ((s[j] == 'e' || s[j] == 'E') && j + 1 < s.size() &&
               (std::isdigit(static_cast<unsigned char>(s[j + 1])) || s[j + 1] == '-' || s[j + 1] == '+')) ||
              ((s[j] == '-' || s[j] == '+') && j > i && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
        ++j;
      // Drop a '-' that belonged to the number ("-3").
      if (!out.empty() && out.back() == '-' && (out.size() == 1 || !is_word(out[out.size() - 2]))) out.pop_back();
      // A size ("2.00 GiB", "512MB", "1073741824 bytes") is one placeholder whatever the unit.
      size_t u = j < s.size() && s[j] == ' ' ? j + 1 : j;
      size_t ue = u;
      while (ue < s.size() && std::isalpha(static_cast<unsigned char>(s[ue]))) ++ue;
      std::string_view unit = s.substr(u, ue - u);
      static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "bytes", "kB"};
      bool size = false;
      for (const char* k : kUnits) size = size || unit == k;
      if (size) {
        out += "<SIZE>";
        i = ue;
        continue;
      }
      out += "<N>";
      i = j;
      continue;
    }
    out.push_back(c);
    ++i;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string fingerprint(std::string_view id, std::string_view decisive_text) {
  uint64_t h = fnv1a64(id);
  h = fnv1a64("\x1f", h);
  h = fnv1a64(mask(trim(decisive_text)), h);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

TemplateMiner::TemplateMiner() : TemplateMiner(Options{}) {}
TemplateMiner::TemplateMiner(Options options) : opt_(options) {}

uint32_t TemplateMiner::add(std::string_view line, Where where) {
  ++lines_;
  std::string masked = mask(line);
  if (auto it = exact_.find(masked); it != exact_.end()) {
    Template& t = templates_[it->second];
    ++t.count;
    return t.id;
  }
  std::vector<std::string> toks;
  for (std::string_view tok : split(masked, ' ')) toks.emplace_back(tok);
  std::string key = std::to_string(toks.size()) + "|" + (toks.empty() ? "" : toks[0]);
  auto& bucket = buckets_[key];
  // Drain: the most similar template of the same length and first token.
  uint32_t best = kOverflow;
  double best_sim = 0;
  for (uint32_t id : bucket) {
    const auto& tt = tokens_[id];
    size_t same = 0;
    for (size_t k = 0; k < toks.size(); ++k) same += (tt[k] == toks[k] || tt[k] == "<*>");
    double sim = toks.empty() ? 1.0 : double(same) / double(toks.size());
    if (sim > best_sim) best_sim = sim, best = id;
  }
  if (best != kOverflow && best_sim >= opt_.similarity) {
    auto& tt = tokens_[best];
    bool changed = false;
    for (size_t k = 0; k < toks.size(); ++k) {
      if (tt[k] != toks[k] && tt[k] != "<*>") tt[k] = "<*>", changed = true;
    }
    Template& t = templates_[best];
    if (changed) {
      t.text.clear();
      for (size_t k = 0; k < tt.size(); ++k) t.text += (k ? " " : "") + tt[k];
    }
    ++t.count;
    if (exact_.size() < opt_.max_templates * 4) exact_.emplace(std::move(masked), best);
    return best;
  }
  if (templates_.size() >= opt_.max_templates || bucket.size() >= opt_.max_bucket) {
    ++overflow_;
    return kOverflow;
  }
  Template t;
  t.id = static_cast<uint32_t>(templates_.size());
  t.text = masked;
  t.count = 1;
  t.first = where;
  t.first_text = std::string(line.substr(0, 500));
  bucket.push_back(t.id);
  tokens_.push_back(std::move(toks));
  exact_.emplace(std::move(masked), t.id);
  templates_.push_back(std::move(t));
  return templates_.back().id;
}

}  // namespace ff::template_
