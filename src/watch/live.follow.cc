// watch/live.follow.cc — `firstfault watch`: files and folders followed (watch::Follower)
// into the session, each finding said as it happens, the diagnosis at the end.
#include <fmt/format.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "analyze/analyze.h"
#include "watch/live_internal.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "report/report.h"
#include "watch/follow.h"

namespace ff::app::live {

namespace {

// The Follower's files into the session, one source each (a rotated file goes on as the
// same source).
class FollowInto : public watch::FollowSink {
 public:
  explicit FollowInto(watch::Session& s) : s_(s) {}
  void opened(uint32_t file, const std::string& name) override {
    if (sources_.size() <= file) sources_.resize(file + 1);
    sources_[file] = s_.open(name);
  }
  void data(uint32_t file, std::string_view bytes) override { s_.feed(sources_[file], bytes, steady_ms()); }
  void cut(uint32_t file, const std::string&) override { s_.cut(sources_[file]); }
  void note(const std::string& text) override {
    s_.note(text);
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(text));
  }
  void error(const Error& e) override {
    s_.input_error(e);
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  }

 private:
  watch::Session& s_;
  std::vector<uint32_t> sources_;
};

}  // namespace

int run_watch(const Options& opt, const LiveOptions& lo) {
  int64_t poll_ms = 100, idle_ms = 0;
  if (!parse_duration_ms(lo.poll, poll_ms) || poll_ms <= 0) {
    say_error("--poll: not a duration: " + lo.poll);
    return 2;
  }
  if (!lo.idle_exit.empty() && (!parse_duration_ms(lo.idle_exit, idle_ms) || idle_ms <= 0)) {
    say_error("--idle-exit: not a duration: " + lo.idle_exit);
    return 2;
  }
  Live live(opt, lo, true);
  if (int rc = live.start(lo.paths); rc != 0) return rc;
  install_interrupt_handlers();
  watch::FollowOptions fo;
  fo.follow_symlinks = opt.follow_symlinks;
  watch::Follower follower(lo.paths, fo);
  FollowInto into(live.session());
  int64_t last_growth = steady_ms();
  // --until-done: the files' last growth must be this long past the job's end.
  constexpr int64_t kEndQuietMs = 2000;
  bool end_said = false;
  bool first = true;
  while (!interrupted()) {
    const watch::PollStats ps = follower.poll(into);
    if (first) {
      for (const auto& m : follower.missing()) say_error(m + ": not found (yet); watched for");
      first = false;
    }
    const int64_t now = steady_ms();
    if (ps.grew) last_growth = now;
    live.tick();
    if (live.exit_on_met() || live.stdout_gone()) break;
    if (idle_ms > 0 && now - last_growth >= idle_ms) break;
    if (lo.until_done) {
      if (const record::Event* end = live.session().job_end()) {
        if (!end_said) {
          const auto& names = live.session().live().job().sources;
          const std::string where =
              end->source < names.size() ? names[end->source].name + ":" + std::to_string(end->line) : "";
          say_error("the job ended (" + where + "); stopping when the files have been quiet for 2 s (--until-done)");
          end_said = true;
        }
        if (now - last_growth >= kEndQuietMs) break;
      }
    }
    if (!ps.grew) sleep_ms(poll_ms);
  }
  const analyze::Diagnosis& d = live.finish();
  const std::string recurrence = live.remember("watch", lo.paths);
  if (lo.format == "jsonl") {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(report::render_json(d));
    if (!recurrence.empty()) j["recurrence"] = recurrence;
    write_all(STDOUT_FILENO, j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  } else {
    std::string s = "\n" + final_text(d, opt, STDOUT_FILENO);
    if (!recurrence.empty()) s += "Seen before: " + escape_for_terminal(recurrence) + "\n";
    write_all(STDOUT_FILENO, s);
  }
  if (live.exit_on_met()) return 1;
  if (live.stdout_gone()) return 128 + SIGPIPE;
  return analyze::verdict_exit_code(d.verdict);
}

}  // namespace ff::app::live
