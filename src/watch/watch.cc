#include "watch/watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "base/escape.h"
#include "base/strings.h"
#include "base/wrap.h"

namespace ff::watch {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kDegraded: return "degraded";
    case Severity::kFailed: return "failed";
  }
  return "info";
}

bool parse_severity(std::string_view text, Severity& out) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kDegraded, Severity::kFailed}) {
    if (text == severity_name(s)) {
      out = s;
      return true;
    }
  }
  return false;
}

namespace {

using Json = nlohmann::ordered_json;

Json opt_int(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }
Json opt_str(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

std::string iso_utc(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, unix_ms % 1000);
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) s += fmt::format(",... ({} ranks)", ranks.size());
  return s;
}

std::string step_text(double step) {
  return std::floor(step) == step && std::fabs(step) < 1e15 ? fmt::format("{}", static_cast<long long>(step))
                                                            : fmt::format("{}", step);
}

Severity severity_of_verdict(analyze::VerdictKind v) {
  switch (v) {
    case analyze::VerdictKind::kFailed: return Severity::kFailed;
    case analyze::VerdictKind::kDegraded: return Severity::kDegraded;
    default: return Severity::kWarning;
  }
}

// Trend verdicts that are bad news; the others (stable, transient, bounded) are information.
bool bad_trend(const std::string& verdict) {
  for (const char* v :
       {"terminal", "unbounded", "first", "spike", "straggler", "stall", "drop", "stalled", "diverging"}) {
    if (verdict == v) return true;
  }
  return false;
}

void fill_evidence(Alert& a, const std::vector<analyze::Evidence>& ev) {
  if (ev.empty()) return;
  a.source = ev[0].source;
  a.line = ev[0].line;
  a.text = ev[0].text;
}

// An alert of a finding (the primary, a symptom): what it is, who, where.
Alert from_finding(const analyze::Finding& f, const char* kind, Severity severity, const std::string& verdict,
                   int64_t unix_ms) {
  Alert a;
  a.kind = kind;
  a.severity = severity;
  a.id = f.id;
  a.title = f.title;
  a.category = f.category;
  a.rank = f.rank;
  a.node = f.node;
  fill_evidence(a, f.evidence);
  a.fingerprint = f.fingerprint;
  a.verdict = verdict;
  a.unix_ms = unix_ms;
  return a;
}

}  // namespace

std::string alert_json(const Alert& a) {
  Json j;
  j["schema"] = "firstfault.alert/1";
  j["time"] = iso_utc(a.unix_ms);
  j["kind"] = a.kind;
  j["severity"] = severity_name(a.severity);
  j["id"] = a.id;
  j["title"] = a.title;
  j["category"] = a.category;
  j["rank"] = opt_int(a.rank);
  j["node"] = opt_str(a.node);
  j["verdict"] = a.verdict;
  if (!a.source.empty()) {
    j["evidence"] = {{"source", a.source}, {"line", a.line}, {"text", a.text}};
  } else {
    j["evidence"] = nullptr;
  }
  j["fix"] = opt_str(a.fix);
  j["verify"] = opt_str(a.verify);
  j["fingerprint"] = opt_str(a.fingerprint);
  if (a.step) j["step"] = *a.step;
  if (!a.ranks.empty() || a.kind == "stall") j["ranks"] = a.ranks;
  if (a.kind == "stall") {
    j["silent_seconds"] = std::round(a.silent_s * 10) / 10;
    j["threshold_seconds"] = std::round(a.threshold_s * 10) / 10;
  }
  j["key"] = a.key;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string alert_text(const Alert& a, size_t width) {
  std::string who;
  if (a.rank) who = fmt::format(" rank {}", *a.rank);
  if (!a.node.empty()) who += " on " + escape_for_terminal(a.node);
  std::string head = fmt::format("{} {} {} {}{}", iso_utc(a.unix_ms).substr(11, 8), severity_name(a.severity), a.kind,
                                 escape_for_terminal(a.id), who);
  std::string out = head + ": " + escape_for_terminal(a.title) + "\n";
  if (a.kind == "stall") {
    out += fmt::format("  no progress line for {:.0f} s (threshold {:.0f} s); last step {}", a.silent_s, a.threshold_s,
                       a.step ? step_text(*a.step) : std::string("unknown"));
    out += a.ranks.empty() ? "; every rank stopped together\n" : "; silent first: rank " + ranks_text(a.ranks) + "\n";
  } else if (!a.ranks.empty() && a.kind == "collateral") {
    out += "  ranks " + ranks_text(a.ranks) + "\n";
  }
  if (!a.source.empty())
    out += fmt::format("  {}:{}: {}\n", escape_for_terminal(a.source), a.line, escape_for_terminal(a.text));
  if (!a.fix.empty()) out += "  fix: " + escape_for_terminal(a.fix) + "\n";
  if (!a.verify.empty()) {
    // Every line of it (a Python snippet is several), each whole.
    out += "  verify:\n";
    for (std::string_view line : split(trim(a.verify), '\n'))
      out += std::string(1, kVerbatim) + "    " + escape_for_terminal(std::string(line)) + "\n";
  }
  return wrap_text(out, width);
}

Session::Session(const scan::Engine& engine, DiagnoseFn diagnose, SessionOptions options,
                 const scan::ScanOptions& scan_options)
    : engine_(engine), diagnose_(std::move(diagnose)), options_(options), live_(engine, scan_options) {}

uint32_t Session::open(const std::string& name) {
  const uint32_t s = live_.open(name);
  if (sources_.size() <= s) sources_.resize(s + 1);
  return s;
}

void Session::feed(uint32_t source, std::string_view bytes, int64_t now_ms) {
  if (bytes.empty()) return;
  live_.feed(source, bytes);
  SourceState& st = sources_[source];
  st.last_data_ms = now_ms;
  st.settled = false;
  if (live_.holds_open(source)) {
    if (st.open_since_ms < 0) st.open_since_ms = now_ms;
  } else {
    st.open_since_ms = -1;
  }
  if (live_.take_events(events_) > 0) dirty_ = true;
}

void Session::cut(uint32_t source) { live_.break_line(source); }

void Session::close(uint32_t source, const Status& status) {
  if (source >= sources_.size() || !sources_[source].open) return;
  sources_[source].open = false;
  live_.close(source, status);
  if (live_.take_events(events_) > 0) dirty_ = true;
}

int64_t Session::stall_threshold_ms() const {
  if (options_.stall_after_ms > 0) return options_.stall_after_ms;
  std::vector<int64_t> all;
  for (const auto& [rank, r] : ranks_) all.insert(all.end(), r.intervals.begin(), r.intervals.end());
  if (all.size() < static_cast<size_t>(std::max(1, options_.stall_min_intervals))) return 0;
  std::nth_element(all.begin(), all.begin() + static_cast<long>(all.size() / 2), all.end());
  const double typical = static_cast<double>(all[all.size() / 2]);
  return std::max(options_.stall_floor_ms, static_cast<int64_t>(options_.stall_factor * typical));
}

void Session::track_progress(int64_t now_ms) {
  const auto& last = live_.job().series.last_progress();
  for (const auto& [rank, p] : last) {
    auto [it, fresh] = ranks_.try_emplace(rank);
    RankProgress& r = it->second;
    if (fresh) {
      r.step = p.step;
      r.at_ms = now_ms;
      last_step_ms_ = std::max(last_step_ms_, now_ms);
      continue;
    }
    if (p.step == r.step) continue;
    if (p.step > r.step) {
      r.intervals.push_back(std::max<int64_t>(1, now_ms - r.at_ms));
      if (r.intervals.size() > 16) r.intervals.erase(r.intervals.begin());
    }
    r.step = p.step;
    r.at_ms = now_ms;
    last_step_ms_ = std::max(last_step_ms_, now_ms);
  }
}

std::optional<Alert> Session::check_stall(int64_t now_ms, int64_t unix_ms) {
  if (ranks_.empty()) return std::nullopt;
  double max_step = -INFINITY;
  for (const auto& [rank, r] : ranks_) max_step = std::max(max_step, r.step);
  if (stalled_ && max_step != stalled_at_step_) {
    stalled_ = false;
    stall_.reset();
  }
  const int64_t threshold = stall_threshold_ms();
  if (threshold <= 0 || stalled_ || now_ms - last_step_ms_ < threshold) return std::nullopt;
  // A run that died or finished is not hung: the diagnosis says so already.
  if (analyses_ > 0 && (diagnosis_.verdict == analyze::VerdictKind::kFailed || diagnosis_.progress.completed))
    return std::nullopt;
  stalled_ = true;
  stalled_at_step_ = max_step;
  Alert a;
  a.kind = "stall";
  a.severity = Severity::kFailed;
  a.id = "watch.stall";
  a.category = "hang";
  a.step = max_step;
  a.silent_s = static_cast<double>(now_ms - last_step_ms_) / 1000.0;
  a.threshold_s = static_cast<double>(threshold) / 1000.0;
  a.key = "stall:" + step_text(max_step);
  // Who went silent first: the ranks behind the others; else those whose last step came
  // earliest, by more than half a typical interval; else none (all stopped together).
  double min_step = INFINITY;
  int64_t first_at = INT64_MAX, last_at = 0;
  for (const auto& [rank, r] : ranks_) {
    min_step = std::min(min_step, r.step);
    first_at = std::min(first_at, r.at_ms);
    last_at = std::max(last_at, r.at_ms);
  }
  if (min_step < max_step) {
    for (const auto& [rank, r] : ranks_)
      if (r.step == min_step && rank >= 0) a.ranks.push_back(rank);
  } else if (ranks_.size() > 1) {
    const int64_t th = stall_threshold_ms();
    const int64_t slack =
        std::max<int64_t>(50, options_.stall_after_ms > 0 ? th / 20 : th / (2 * std::max(1.0, options_.stall_factor)));
    if (last_at - first_at > slack) {
      for (const auto& [rank, r] : ranks_)
        if (r.at_ms <= first_at + slack && rank >= 0) a.ranks.push_back(rank);
    }
  }
  a.title = a.ranks.empty() ? fmt::format("no progress since step {}", step_text(max_step))
                            : fmt::format("no progress since step {}; rank {} went silent first", step_text(max_step),
                                          ranks_text(a.ranks));
  if (a.ranks.size() == 1) a.rank = a.ranks[0];
  a.fix =
      "Check the silent ranks first: py-spy dump --pid PID (the stack of a hung rank), "
      "TORCH_NCCL_DUMP_ON_TIMEOUT=1 for the stuck collective";
  a.verdict = analyses_ > 0 ? analyze::verdict_name(diagnosis_.verdict) : "unknown";
  a.unix_ms = unix_ms;
  stall_ = a;
  return a;
}

void Session::analyse() {
  diagnosis_ = diagnose_(events_, live_.job());
  ++analyses_;
  dirty_ = false;
  lines_at_analysis_ = live_.lines();
}

bool Session::say(Alert& a, std::vector<Alert>& out) {
  if (!said_.insert(a.key).second) return false;
  ++counts_[{a.id, a.category, severity_name(a.severity)}];
  out.push_back(std::move(a));
  return true;
}

std::vector<Alert> Session::alerts_from(const analyze::Diagnosis& d, int64_t unix_ms) {
  std::vector<Alert> out;
  const std::string verdict = analyze::verdict_name(d.verdict);
  if (d.primary) {
    const analyze::Finding& p = *d.primary;
    Alert a = from_finding(p, "failure", severity_of_verdict(d.verdict), verdict, unix_ms);
    if (!p.fix.empty()) a.fix = p.fix[0];
    a.verify = p.verify;
    a.step = d.progress.failed_at;
    a.key = "incident:" + (p.fingerprint.empty() ? p.id : p.fingerprint);
    say(a, out);
  }
  for (const auto& c : d.collateral) {
    Alert a;
    a.kind = "collateral";
    a.severity = Severity::kWarning;
    a.id = c.id;
    a.title = c.title + (c.explained_by.empty() ? "" : " (explained by " + c.explained_by + ")");
    a.category = c.category;
    a.ranks = c.ranks;
    if (c.ranks.size() == 1) a.rank = c.ranks[0];
    if (c.nodes.size() == 1) a.node = c.nodes[0];
    a.source = c.first.source;
    a.line = c.first.line;
    a.text = c.first.text;
    a.fingerprint = c.fingerprint;
    a.verdict = verdict;
    a.key = "incident:" + (c.fingerprint.empty() ? c.id : c.fingerprint);
    a.unix_ms = unix_ms;
    say(a, out);
  }
  for (const auto& s : d.symptoms) {
    Alert a = from_finding(s, "symptom", Severity::kInfo, verdict, unix_ms);
    a.key = "symptom:" + s.id;
    say(a, out);
  }
  // A trend of the primary's own kind (the loss scale's floor under a numerical failure, a
  // straggler under a hang) is the same incident seen in the numbers: said with the
  // failure's key, so a failure already said is not said again as a warning.
  const std::string primary_key =
      d.primary ? "incident:" + (d.primary->fingerprint.empty() ? d.primary->id : d.primary->fingerprint) : "";
  for (const auto& v : d.verdicts) {
    Alert a;
    a.kind = "trend";
    a.severity = bad_trend(v.verdict) ? Severity::kWarning : Severity::kInfo;
    a.id = v.id;
    a.title = v.summary;
    a.category = v.id == "straggler" || v.id == "stall" ? "hang" : "numerical";
    a.rank = v.rank;
    fill_evidence(a, v.evidence);
    a.step = v.step;
    a.verdict = verdict;
    a.key = "trend:" + v.id + ":" + v.verdict + (v.rank ? ":" + std::to_string(*v.rank) : "");
    if (d.primary && d.primary->category == a.category) a.key = primary_key;
    a.unix_ms = unix_ms;
    say(a, out);
  }
  return out;
}

std::vector<Alert> Session::tick(int64_t now_ms, int64_t unix_ms) {
  std::vector<Alert> out;
  if (finished_) return out;
  for (uint32_t s = 0; s < sources_.size(); ++s) {
    SourceState& st = sources_[s];
    if (!st.open || st.settled) continue;
    const bool quiet = now_ms - st.last_data_ms >= options_.settle_quiet_ms;
    const bool held = st.open_since_ms >= 0 && now_ms - st.open_since_ms >= options_.settle_open_ms;
    if (quiet || held) {
      live_.settle(s);
      st.open_since_ms = -1;
      if (quiet) st.settled = true;
      if (live_.take_events(events_) > 0) dirty_ = true;
    }
  }
  track_progress(now_ms);
  const bool due = last_analysis_ms_ < 0 || now_ms - last_analysis_ms_ >= options_.analyze_every_ms;
  const bool numbers_due = live_.lines() != lines_at_analysis_ &&
                           (last_analysis_ms_ < 0 || now_ms - last_analysis_ms_ >= options_.numbers_every_ms);
  if ((dirty_ && due) || numbers_due) {
    analyse();
    last_analysis_ms_ = now_ms;
    out = alerts_from(diagnosis_, unix_ms);
  }
  if (auto stall = check_stall(now_ms, unix_ms)) say(*stall, out);
  return out;
}

std::vector<Alert> Session::finish(int64_t unix_ms) {
  if (finished_) return {};
  for (uint32_t s = 0; s < sources_.size(); ++s) close(s);
  analyse();
  finished_ = true;
  // A stall the watch saw and that still held when it stopped stays in the verdict: the
  // log alone cannot show it (its lines only stop), but the watch timed the silence.
  if (stall_ && diagnosis_.verdict != analyze::VerdictKind::kFailed && !diagnosis_.progress.completed) {
    const Alert& a = *stall_;
    analyze::Verdict v;
    v.id = "stall";
    v.verdict = "stalled";
    v.metric = "step";
    v.step = a.step;
    v.rank = a.rank;
    v.summary = fmt::format("{} (watched live: {:.0f} s without a new step; a stall is {:.0f} s here)", a.title,
                            a.silent_s, a.threshold_s);
    std::erase_if(diagnosis_.verdicts, [](const analyze::Verdict& x) { return x.id == "stall"; });
    diagnosis_.verdicts.insert(diagnosis_.verdicts.begin(), v);
    diagnosis_.verdict = analyze::VerdictKind::kFailed;
    diagnosis_.reasons.insert(diagnosis_.reasons.begin(), analyze::Reason{"watch.stall", "a hang: " + v.summary, {}});
  }
  return alerts_from(diagnosis_, unix_ms);
}

const record::Event* Session::job_end() {
  if (end_) return &events_[*end_];
  for (; end_scanned_ < events_.size(); ++end_scanned_) {
    const record::Event& e = events_[end_scanned_];
    bool ends = e.kind == record::EventKind::kLauncherFailure ||
                (e.kind == record::EventKind::kPattern && e.role == kb::Role::kCompletion);
    if (!ends && e.kind == record::EventKind::kPattern) {
      const kb::Entry* entry = engine_.kb().find(e.entry_id);
      ends = entry && std::find(entry->tags.begin(), entry->tags.end(), "job-end") != entry->tags.end();
    }
    if (ends) {
      end_ = end_scanned_;
      return &e;
    }
  }
  return nullptr;
}

}  // namespace ff::watch
