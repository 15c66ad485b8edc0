// fleet/fleet.report.cc — a diagnosis JSON as a JobOutcome, and the Aggregator that adds
// jobs up one at a time into a Report (see fleet.h).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/civil.h"
#include "fleet/fleet.h"

namespace ff::fleet {

namespace {

using nlohmann::json;

std::string str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "2026-11-30T04:10:28Z" (the epilog's "ended"), or with an offset; nullopt otherwise.
std::optional<int64_t> parse_iso(std::string_view t) {
  auto day = parse_day(t.substr(0, std::min<size_t>(t.size(), 10)));
  if (!day || t.size() < 19 || t[10] != 'T') return day;
  auto num = [&](size_t at) { return (t[at] - '0') * 10 + (t[at + 1] - '0'); };
  for (size_t at : {11, 14, 17}) {
    if (!std::isdigit(static_cast<unsigned char>(t[at])) || !std::isdigit(static_cast<unsigned char>(t[at + 1])))
      return day;
  }
  int64_t s = *day + num(11) * 3600 + num(14) * 60 + num(17);
  size_t i = 19;
  while (i < t.size() && (t[i] == '.' || std::isdigit(static_cast<unsigned char>(t[i])))) ++i;
  if (i + 6 <= t.size() && (t[i] == '+' || t[i] == '-') && t[i + 3] == ':') {
    const int64_t off = num(i + 1) * 3600 + num(i + 4) * 60;
    s += t[i] == '+' ? -off : off;
  }
  return s;
}

}  // namespace

std::string day_text(int64_t unix_s) {
  const int64_t days = unix_s >= 0 ? unix_s / 86400 : (unix_s - 86399) / 86400;
  const auto c = civil_from_days(days);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", static_cast<int>(c.year), static_cast<int>(c.month),
                static_cast<int>(c.day));
  return buf;
}

std::optional<int64_t> parse_day(std::string_view t) {
  if (t.size() != 10 || t[4] != '-' || t[7] != '-') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return std::nullopt;
  }
  const int y = std::stoi(std::string(t.substr(0, 4)));
  const unsigned m = static_cast<unsigned>(std::stoi(std::string(t.substr(5, 2))));
  const unsigned d = static_cast<unsigned>(std::stoi(std::string(t.substr(8, 2))));
  if (m < 1 || m > 12 || d < 1 || d > 31) return std::nullopt;
  return days_from_civil(y, m, d) * 86400;
}

Result<JobOutcome> outcome_from_json(std::string_view text, const std::string& source, int64_t mtime_unix) {
  // Only what a fleet counts is kept: the big arrays (timeline, series, context) are
  // dropped while parsing, so a large diagnosis costs its parse, not its tree.
  const json::parser_callback_t keep = [](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) {
      static const char* kKeep[] = {"schema", "verdict", "primary", "job"};
      const auto& k = parsed.get_ref<const std::string&>();
      return std::any_of(std::begin(kKeep), std::end(kKeep), [&](const char* x) { return k == x; });
    }
    if (event == json::parse_event_t::key && depth == 2) {
      const auto& k = parsed.get_ref<const std::string&>();
      return k != "evidence" && k != "traceback" && k != "context_before" && k != "hypotheses";
    }
    return true;
  };
  json j = json::parse(text.begin(), text.end(), keep, false);
  if (j.is_discarded() || !j.is_object()) return make_error(ErrorCode::kFormat, "not JSON", {source, 0, ""});
  const std::string schema = str(j, "schema");
  if (schema.rfind("firstfault.diagnosis/", 0) != 0)
    return make_error(ErrorCode::kFormat, "not a firstfault diagnosis (no firstfault.diagnosis schema)",
                      {source, 0, ""});
  JobOutcome o;
  o.source = source;
  o.verdict = str(j, "verdict");
  o.ended_unix = mtime_unix;
  if (auto p = j.find("primary"); p != j.end() && p->is_object()) {
    o.entry = str(*p, "id");
    o.category = str(*p, "category");
    o.title = str(*p, "title");
    o.fingerprint = str(*p, "fingerprint");
    o.node = str(*p, "node");
  }
  if (auto jb = j.find("job"); jb != j.end() && jb->is_object()) {
    o.job_id = str(*jb, "id");
    o.user = str(*jb, "user");
    o.partition = str(*jb, "partition");
    o.account = str(*jb, "account");
    o.node_list = str(*jb, "node_list");
    if (auto g = jb->find("gpu_hours"); g != jb->end() && g->is_number()) o.gpu_hours = std::max(0.0, g->get<double>());
    if (auto t = parse_iso(str(*jb, "ended"))) o.ended_unix = *t;
  }
  return o;
}

Aggregator::Aggregator(Period period, std::optional<Period> compare) {
  r_.period = period;
  if (compare) {
    r_.compare = *compare;
    r_.has_compare = true;
  }
}

void Aggregator::skipped(const std::string& source, const std::string& why) {
  ++r_.skipped;
  if (r_.problems.size() < 20) r_.problems.push_back(source + ": " + why);
}

void Aggregator::add(const JobOutcome& job) {
  ++r_.read;
  const bool now = r_.period.contains(job.ended_unix);
  const bool before = r_.has_compare && r_.compare.contains(job.ended_unix);
  if (!now && !before) {
    ++r_.outside;
    return;
  }
  const std::string_view cls = failure_class(job.category);
  for (Tally* t : {now ? &r_.current : nullptr, before ? &r_.previous : nullptr}) {
    if (!t) continue;
    ++t->jobs;
    ++t->verdicts[job.verdict.empty() ? "unknown" : job.verdict];
    if (job.entry.empty()) continue;
    ++t->failures;
    ++(cls == "hardware" ? t->hardware : t->software);
    t->gpu_hours_lost += job.gpu_hours;
    ++t->by_category[job.category];
    t->gpu_hours_by_category[job.category] += job.gpu_hours;
    ++t->by_entry[job.entry];
    if (t->entry_category.size() < 5000 || t->entry_category.count(job.entry)) {
      t->entry_category[job.entry] = job.category;
      t->entry_title[job.entry] = job.title;
    }
  }
  if (!now || job.entry.empty()) return;
  ++r_.per_day[job.ended_unix >= 0 ? job.ended_unix / 86400 : 0][job.category];
  if (!job.node.empty() && (r_.nodes.size() < kMaxNodes || r_.nodes.count(job.node))) {
    NodeFindings& n = r_.nodes[job.node];
    n.first_seen = n.failures ? std::min(n.first_seen, job.ended_unix) : job.ended_unix;
    n.last_seen = std::max(n.last_seen, job.ended_unix);
    ++n.failures;
    if (cls == "hardware") {
      ++n.hardware;
      if (n.entries.size() < 8 || n.entries.count(job.entry)) ++n.entries[job.entry];
    }
  }
  const std::string key = job.fingerprint.empty() ? job.entry : job.fingerprint;
  auto it = fingerprints_.find(key);
  if (it == fingerprints_.end()) {
    if (fingerprints_.size() >= kMaxFingerprints) {
      ++r_.fingerprints_dropped;
      return;
    }
    Fingerprint f;
    f.fingerprint = key;
    f.entry = job.entry;
    f.title = job.title;
    f.category = job.category;
    f.first_seen = f.last_seen = job.ended_unix;
    it = fingerprints_.emplace(key, std::move(f)).first;
  }
  Fingerprint& f = it->second;
  ++f.count;
  f.first_seen = std::min(f.first_seen, job.ended_unix);
  f.last_seen = std::max(f.last_seen, job.ended_unix);
  if (!job.node.empty() && (f.nodes.size() < 8 || f.nodes.count(job.node))) ++f.nodes[job.node];
}

Report Aggregator::report() const {
  Report r = r_;
  for (const auto& [k, f] : fingerprints_) {
    if (f.count > 1) r.fingerprints.push_back(f);
  }
  std::sort(r.fingerprints.begin(), r.fingerprints.end(), [](const Fingerprint& a, const Fingerprint& b) {
    return a.count != b.count ? a.count > b.count : a.fingerprint < b.fingerprint;
  });
  if (r.fingerprints.size() > 200) r.fingerprints.resize(200);
  return r;
}

}  // namespace ff::fleet
