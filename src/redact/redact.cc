#include "redact/redact.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace ff::redact {

struct Redactor::Compiled {
  const Rule* rule = nullptr;
  std::unique_ptr<re2::RE2> re;
  int secret_group = 0;  // 0: the whole match
};

constexpr size_t kVerbatim = SIZE_MAX;

struct Redactor::Span {
  size_t begin, end;
  size_t rule;  // index in rules_, or rules_.size() for a known host
};

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `set` holds characters, or the word "alnum" (letters and digits) with other characters.
bool in_set(std::string_view set, char c) {
  if (set.empty()) return false;
  std::string_view rest = set;
  if (rest.substr(0, 5) == "alnum") {
    if (std::isalnum(static_cast<unsigned char>(c))) return true;
    rest.remove_prefix(5);
  }
  return rest.find(c) != std::string_view::npos;
}

bool host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

bool is_number(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

std::string format_pseudonym(std::string_view pattern, uint64_t n) {
  std::string out;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i, 3) == "{n}") {
      out += std::to_string(n);
      i += 3;
    } else if (pattern.substr(i, 3) == "{n:" && i + 6 <= pattern.size() && pattern[i + 3] == '0' &&
               std::isdigit(static_cast<unsigned char>(pattern[i + 4])) && pattern[i + 5] == '}') {
      std::string num = std::to_string(n);
      size_t width = static_cast<size_t>(pattern[i + 4] - '0');
      if (num.size() < width) num.insert(0, width - num.size(), '0');
      out += num;
      i += 6;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

Redactor::Redactor() = default;
Redactor::Redactor(Redactor&&) noexcept = default;
Redactor& Redactor::operator=(Redactor&&) noexcept = default;
Redactor::~Redactor() = default;

Result<Redactor> Redactor::create(const Rules& rules) {
  Redactor r;
  r.data_ = rules;
  r.keep_.insert(rules.keep.begin(), rules.keep.end());
  r.keep_users_.insert(rules.keep_users.begin(), rules.keep_users.end());
  bool host_seen = false;
  for (const Rule& rule : r.data_.rules) {
    Compiled c;
    c.rule = &rule;
    re2::RE2::Options o;
    o.set_log_errors(false);
    c.re = std::make_unique<re2::RE2>(rule.regex, o);
    if (!c.re->ok())
      return make_error(ErrorCode::kInvalidKb, "redaction rule '" + rule.kind + "': " + c.re->error(),
                        {"", 0, "regex"});
    auto groups = c.re->NamedCapturingGroups();
    if (auto it = groups.find("secret"); it != groups.end()) c.secret_group = it->second;
    if (rule.replace == Replace::kPseudonym && rule.pseudonym.empty())
      return make_error(ErrorCode::kInvalidKb,
                        "redaction rule '" + rule.kind + "': replace: pseudonym needs a pseudonym");
    if (rule.kind == "host" && !host_seen) {
      host_seen = true;
      r.host_pseudonym_ = rule.pseudonym;
    }
    if (!contains(r.kinds_, rule.kind)) r.kinds_.push_back(rule.kind);
    r.rules_.push_back(std::move(c));
  }
  if (!contains(r.kinds_, "host")) r.kinds_.push_back("host");
  return r;
}

void Redactor::add_host(std::string_view name) {
  if (name.size() < 2 || is_number(name) || keep_.count(name) || given_.count(name)) return;
  if (contains(hosts_, name)) return;
  hosts_.emplace_back(name);
  hosts_dirty_ = true;
}

void Redactor::rebuild_hosts() {
  hosts_dirty_ = false;
  std::vector<std::string> sorted = hosts_;
  // Longest first: "gpu-1-2" before "gpu-1".
  std::sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  std::string alt;
  for (const auto& h : sorted) alt += (alt.empty() ? "" : "|") + re2::RE2::QuoteMeta(h);
  re2::RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(64 << 20);
  hosts_re_ = sorted.empty() ? nullptr : std::make_unique<re2::RE2>("(?:" + alt + ")", o);
  if (hosts_re_ && !hosts_re_->ok()) hosts_re_.reset();
}

bool Redactor::accept(const Compiled& c, std::string_view text, size_t m_begin, size_t m_end, size_t s_begin,
                      size_t s_end) const {
  const Rule& rule = *c.rule;
  std::string_view value = text.substr(s_begin, s_end - s_begin);
  if (value.empty()) return false;
  if (m_begin > 0 && in_set(rule.not_after, text[m_begin - 1])) return false;
  if (m_end < text.size() && in_set(rule.not_before, text[m_end])) return false;
  if (value.size() < rule.min_length) return false;
  if (rule.needs_digit &&
      std::none_of(value.begin(), value.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
    return false;
  if (keep_.count(value) || given_.count(value)) return false;
  if (rule.kind == "user" && keep_users_.count(value)) return false;
  if (rule.check == "ipv4") {
    // 1.2.3.4.5 is a version, not an address.
    if (m_end + 1 < text.size() && text[m_end] == '.' && std::isdigit(static_cast<unsigned char>(text[m_end + 1])))
      return false;
  } else if (rule.check == "hostname") {
    std::string name = lower(value);
    size_t labels = 1 + static_cast<size_t>(std::count(name.begin(), name.end(), '.'));
    std::string_view last = std::string_view(name).substr(name.rfind('.') + 1);
    bool ok = (labels >= 2 && contains(data_.private_suffixes, last)) ||
              (labels >= 3 && contains(data_.public_suffixes, last));
    if (!ok) return false;
    for (const auto& d : data_.public_domains) {
      if (name == d || (name.size() > d.size() && name.compare(name.size() - d.size(), d.size(), d) == 0 &&
                        name[name.size() - d.size() - 1] == '.'))
        return false;
    }
  }
  return true;
}

std::string Redactor::replacement(const Compiled& c, const std::string& kind, std::string_view value) {
  counts_[kind]++;
  if (!c.rule || c.rule->replace == Replace::kPseudonym) {
    const std::string& pattern = c.rule ? c.rule->pseudonym : host_pseudonym_;
    auto& table = names_[kind];
    // A host is one host however its name is cased.
    std::string key = kind == "host" ? lower(value) : std::string(value);
    auto it = table.find(key);
    if (it != table.end()) return it->second;
    // Same-kind tables share no numbers with others, but the user in an e-mail address and
    // in a path are different kinds; each counts from 1.
    std::string name = format_pseudonym(pattern, table.size() + 1);
    table.emplace(key, name);
    given_.insert(name);
    return name;
  }
  seen_[kind].insert(std::string(value));
  return "[REDACTED:" + kind + "]";
}

std::string Redactor::apply(std::string_view text) {
  if (hosts_dirty_) rebuild_hosts();
  std::vector<Span> spans;
  auto free_at = [&](size_t b, size_t e) {
    for (const Span& s : spans)
      if (b < s.end && s.begin < e) return false;
    return true;
  };
  // Placeholders already in the text stay as they are (applying twice changes nothing).
  static constexpr std::string_view kMark = "[REDACTED:";
  for (size_t at = text.find(kMark); at != std::string_view::npos; at = text.find(kMark, at + 1)) {
    size_t close = text.find(']', at);
    if (close == std::string_view::npos) break;
    spans.push_back({at, close + 1, kVerbatim});
  }
  // Rules in order; the known hosts right before the first host rule (after the tokens and
  // e-mail addresses, so a host inside a password or an address goes with it).
  size_t first_host = rules_.size();
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].rule->kind == "host") {
      first_host = i;
      break;
    }
  }
  auto scan_hosts = [&] {
    if (!hosts_re_) return;
    re2::StringPiece m;
    size_t pos = 0;
    while (pos < text.size() && hosts_re_->Match(re2::StringPiece(text.data(), text.size()), pos, text.size(),
                                                 re2::RE2::UNANCHORED, &m, 1)) {
      size_t b = static_cast<size_t>(m.data() - text.data()), e = b + m.size();
      bool word =
          (b == 0 || (!host_char(text[b - 1]) && text[b - 1] != '.')) && (e == text.size() || !host_char(text[e]));
      if (word && free_at(b, e)) spans.push_back({b, e, rules_.size()});
      pos = word ? std::max(e, b + 1) : b + 1;
    }
  };
  for (size_t i = 0; i <= rules_.size(); ++i) {
    if (i == first_host) scan_hosts();
    if (i == rules_.size()) break;
    const Compiled& c = rules_[i];
    const int n = c.secret_group + 1;
    std::vector<re2::StringPiece> groups(static_cast<size_t>(n));
    size_t pos = 0;
    while (pos <= text.size() && c.re->Match(re2::StringPiece(text.data(), text.size()), pos, text.size(),
                                             re2::RE2::UNANCHORED, groups.data(), n)) {
      size_t mb = static_cast<size_t>(groups[0].data() - text.data()), me = mb + groups[0].size();
      const re2::StringPiece& sec = groups[static_cast<size_t>(c.secret_group)];
      bool ok = sec.data() != nullptr;
      size_t sb = ok ? static_cast<size_t>(sec.data() - text.data()) : 0, se = sb + sec.size();
      if (ok && accept(c, text, mb, me, sb, se) && free_at(sb, se)) {
        spans.push_back({sb, se, i});
        pos = std::max(me, mb + 1);
      } else {
        pos = mb + 1;
      }
    }
  }
  if (spans.empty()) return std::string(text);
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  static const Compiled kKnownHost{};
  for (const Span& s : spans) {
    out.append(text.substr(at, s.begin - at));
    if (s.rule == kVerbatim) {
      out.append(text.substr(s.begin, s.end - s.begin));
      at = s.end;
      continue;
    }
    const Compiled& c = s.rule < rules_.size() ? rules_[s.rule] : kKnownHost;
    const std::string kind = c.rule ? c.rule->kind : "host";
    out += replacement(c, kind, text.substr(s.begin, s.end - s.begin));
    at = s.end;
  }
  out.append(text.substr(at));
  return out;
}

std::vector<KindCount> Redactor::summary() const {
  std::vector<KindCount> out;
  for (const auto& k : kinds_) {
    auto it = counts_.find(k);
    if (it == counts_.end() || it->second == 0) continue;
    KindCount kc{k, it->second, 0};
    if (auto n = names_.find(k); n != names_.end()) kc.distinct += n->second.size();
    if (auto s = seen_.find(k); s != seen_.end()) kc.distinct += s->second.size();
    out.push_back(kc);
  }
  return out;
}

uint64_t Redactor::total() const {
  uint64_t n = 0;
  for (const auto& [k, c] : counts_) n += c;
  return n;
}

std::string Redactor::pseudonym_of(std::string_view kind, std::string_view value) const {
  auto t = names_.find(kind);
  if (t == names_.end()) return "";
  auto it = t->second.find(kind == "host" ? lower(value) : std::string(value));
  return it == t->second.end() ? "" : it->second;
}

}  // namespace ff::redact
