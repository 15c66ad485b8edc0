// app/commands.report.cc — `firstfault report`: walks the folders for `.firstfault.json`
// files (and reads the history with --history) and hands each job to fleet::Aggregator,
// one at a time, so the memory is the aggregator's, not the jobs'.
#include "app/commands.report.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <iostream>

#include "history/history.h"
#include "base/escape.h"
#include "base/strings.h"
#include "fleet/fleet.h"

namespace ff::app {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSuffix = ".firstfault.json";
constexpr size_t kMaxDiagnosisBytes = 64u << 20;

// A file read whole (no link followed, at most `limit` bytes); false when it cannot be.
bool read_small_file(const std::string& path, std::string& out, int64_t& mtime, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > kMaxDiagnosisBytes) {
    why = "not a regular file under 64 MiB";
    ::close(fd);
    return false;
  }
  mtime = st.st_mtime;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  ::close(fd);
  return true;
}

bool parse_period(const std::string& from, const std::string& to, fleet::Period& p, std::string& why) {
  if (!from.empty()) {
    auto d = fleet::parse_day(from);
    if (!d) {
      why = "'" + from + "' is not a date (YYYY-MM-DD)";
      return false;
    }
    p.from = *d;
  }
  if (!to.empty()) {
    auto d = fleet::parse_day(to);
    if (!d) {
      why = "'" + to + "' is not a date (YYYY-MM-DD)";
      return false;
    }
    p.to = *d;
  }
  if (p.to <= p.from) {
    why = "the period ends before it starts";
    return false;
  }
  return true;
}

}  // namespace

// Over 80 lines: the command's course in order (periods, the walk, the history, the output).
int run_fleet_report(const Options& opt, const FleetReportOptions& fo) {
  (void)opt;
  auto fail = [](const std::string& why) {
    fmt::print(stderr, "firstfault report: {}\n", escape_for_terminal(why));
    return 2;
  };
  if (fo.paths.empty() && !fo.history)
    return fail("name folders of job outputs (or .firstfault.json files), or --history");
  fleet::Period period;
  std::string why;
  if (!parse_period(fo.since, fo.until, period, why)) return fail(why);
  std::optional<fleet::Period> compare;
  if (!fo.compare_to.empty()) {
    const size_t dots = fo.compare_to.find("..");
    if (dots == std::string::npos) return fail("--compare-to takes FROM..TO (YYYY-MM-DD..YYYY-MM-DD)");
    fleet::Period c;
    if (!parse_period(fo.compare_to.substr(0, dots), fo.compare_to.substr(dots + 2), c, why)) return fail(why);
    compare = c;
  }
  fleet::Aggregator agg(period, compare);
  std::string text;
  auto add_file = [&](const std::string& path) {
    int64_t mtime = 0;
    if (!read_small_file(path, text, mtime, why)) {
      agg.skipped(path, why);
      return;
    }
    auto o = fleet::outcome_from_json(text, path, mtime);
    if (!o.ok()) {
      agg.skipped(path, o.error().message);
      return;
    }
    agg.add(o.value());
  };
  for (const std::string& p : fo.paths) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) return fail("'" + p + "' does not exist");
    if (fs::is_regular_file(st)) {
      add_file(p);
      continue;
    }
    // Folders walked without following links (as diagnose's walk), one file at a time.
    fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) return fail("cannot read '" + p + "': " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) {
        agg.skipped(p, ec.message());
        ec.clear();
        continue;
      }
      const std::string name = it->path().filename().string();
      if (name.size() > kSuffix.size() && ends_with(name, kSuffix) && it->is_regular_file(ec) && !it->is_symlink(ec))
        add_file(it->path().string());
    }
  }
  if (fo.history) {
    auto h = History::open(history_path());
    if (!h.ok()) return fail(h.error().to_string());
    const Status st = h.value()->each([&](const HistoryRow& r) {
      fleet::JobOutcome o;
      o.source = "history";
      o.verdict = r.verdict;
      o.entry = r.entry;
      o.category = r.category;
      o.title = r.title;
      o.fingerprint = r.fingerprint;
      o.node = r.node;
      o.job_id = r.job_id;
      o.user = r.user;
      o.partition = r.partition;
      o.account = r.account;
      o.node_list = r.node_list;
      o.gpu_hours = r.gpu_hours;
      o.ended_unix = r.unix_s;
      agg.add(o);
    });
    if (!st.ok()) return fail(st.error().to_string());
  }
  const fleet::Report report = agg.report();
  fleet::RenderOptions ro;
  ro.generator = "firstfault " FF_VERSION;
  ro.title = fo.title;
  ro.now_unix = static_cast<int64_t>(std::time(nullptr));
  const std::string out = fo.format == "html"   ? fleet::render_html(report, ro)
                          : fo.format == "json" ? fleet::render_json(report, ro)
                                                : fleet::render_markdown(report, ro);
  if (fo.output.empty() || fo.output == "-") {
    std::cout << out;
  } else if (std::string p = write_output_file(fo.output, out); !p.empty()) {
    return fail("cannot write " + fo.output + ": " + p);
  }
  fmt::print(stderr, "firstfault report: {} diagnoses read, {} in the period{}{}\n", report.read, report.current.jobs,
             report.skipped ? fmt::format(", {} files skipped", report.skipped) : "",
             report.outside ? fmt::format(", {} outside it", report.outside) : "");
  return 0;
}

}  // namespace ff::app
