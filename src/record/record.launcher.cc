// record.launcher.cc — LauncherSummaryTracker: torchrun's "Failures:" table (rank, host,
// exit code, error file) read line by line into LauncherFailure rows.
#include "base/strings.h"
#include "record/record.h"

namespace ff::record {

// ---------------------------------------------------------------------------
// torchrun's failure summary

void LauncherSummaryTracker::close_entry() {
  if (cur_) done_.push_back(std::move(*cur_));
  cur_.reset();
}

// Long because it is one state machine over the lines of torchrun's table (header, rows,
// their fields, the end), each state a few lines.
bool LauncherSummaryTracker::feed(const Record& rec, uint64_t line) {
  std::string_view t = trim(rec.message);
  if (t.empty() && active_) t = trim(rec.text);
  if (!active_) {
    if (t.find("ChildFailedError") != std::string_view::npos && ends_with(t, ":")) {
      active_ = true;
      rules_ = 0;
      in_root_cause_ = false;
      return true;
    }
    return false;
  }
  if (starts_with(t, "=====")) {
    if (++rules_ >= 2) {
      close_entry();
      active_ = false;
    }
    return true;
  }
  if (starts_with(t, "-----")) {
    close_entry();
    return true;
  }
  if (starts_with(t, "Root Cause")) {
    in_root_cause_ = true;
    return true;
  }
  if (t.size() >= 4 && t[0] == '[' && ends_with(t, "]:")) {
    long long n = 0;
    close_entry();
    cur_.emplace();
    cur_->line = line;
    cur_->root_cause = in_root_cause_;
    if (parse_int(t.substr(1, t.size() - 3), n)) cur_->rank = static_cast<int>(n);
    return true;
  }
  if (!cur_) return true;
  auto field = [&](std::string_view key) -> std::optional<std::string_view> {
    if (!starts_with(t, key)) return std::nullopt;
    std::string_view rest = trim_left(t.substr(key.size()));
    if (rest.empty() || rest[0] != ':') return std::nullopt;
    return trim(rest.substr(1));
  };
  if (auto v = field("time")) {
    cur_->time_text = std::string(*v);
  } else if (auto v = field("host")) {
    cur_->host = std::string(*v);
  } else if (auto v = field("rank")) {
    // "3 (local_rank: 3)"
    long long n = 0;
    size_t sp = v->find(' ');
    if (parse_int(v->substr(0, sp), n)) cur_->rank = static_cast<int>(n);
    size_t lr = v->find("local_rank: ");
    if (lr != std::string_view::npos) {
      std::string_view rest = v->substr(lr + 12);
      if (parse_int(rest.substr(0, rest.find(')')), n)) cur_->local_rank = static_cast<int>(n);
    }
  } else if (auto v = field("exitcode")) {
    // "-9 (pid: 1177)"
    std::string_view num = v->substr(0, v->find(' '));
    long long n = 0;
    bool neg = starts_with(num, "-");
    if (parse_int(neg ? num.substr(1) : num, n)) cur_->exitcode = static_cast<int>(neg ? -n : n);
    size_t p = v->find("pid: ");
    if (p != std::string_view::npos) {
      std::string_view rest = v->substr(p + 5);
      if (parse_int(rest.substr(0, rest.find(')')), n)) cur_->pid = static_cast<int>(n);
    }
  } else if (auto v = field("traceback")) {
    if (!starts_with(*v, "Traceback") && !starts_with(*v, "To enable traceback")) {
      cur_->error = std::string(*v);
      cur_->error_line = line;
    }
  } else {
    std::string type, msg;
    if (parse_exception_line(t, type, msg)) {
      cur_->error = std::string(t);
      cur_->error_line = line;
    }
  }
  return true;
}

std::vector<LauncherFailure> LauncherSummaryTracker::take() {
  close_entry();
  return std::move(done_);
}

}  // namespace ff::record
