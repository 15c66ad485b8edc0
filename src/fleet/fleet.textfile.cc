// fleet/fleet.textfile.cc — firstfault's series in node_exporter's textfile-collector
// format, read back and added to, and written atomically (see fleet.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/strings.h"
#include "fleet/fleet.h"

namespace ff::fleet {

namespace {

constexpr std::string_view kJobs = "firstfault_jobs_diagnosed_total";
constexpr std::string_view kFailures = "firstfault_job_failures_total";
constexpr std::string_view kGpuSeconds = "firstfault_gpu_seconds_lost_total";
constexpr std::string_view kLast = "firstfault_last_failure_timestamp_seconds";

struct Family {
  std::string_view name, type, help;
};
constexpr Family kFamilies[] = {
    {kJobs, "counter", "Failed jobs the Slurm epilog diagnosed on this node, by verdict."},
    {kFailures, "counter", "Jobs whose first fault was this KB entry, on this node (the node the diagnosis names)."},
    {kGpuSeconds, "counter", "GPU-seconds of the jobs that failed so (GPUs x the seconds each had run; /3600: GPU-hours)."},
    {kLast, "gauge", "Unix time of the last job that failed so."},
};

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string series_key(std::string_view name, const Labels& labels) {
  std::string k(name);
  k += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) k += ',';
    k += labels[i].first + "=\"" + escape_label_value(labels[i].second) + '"';
  }
  k += '}';
  return k;
}

// Where `key`'s label set starts and the metric name.
std::string_view name_of(std::string_view key) { return key.substr(0, key.find('{')); }

// A sample line of the text format: `name{labels} value`. Returns false for anything else.
// Label values are kept escaped (the key is the text as written).
bool parse_sample(std::string_view line, std::string& key, double& value) {
  const size_t brace = line.find('{');
  if (brace == std::string_view::npos || brace == 0) return false;
  size_t i = brace + 1;
  bool in_value = false;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    if (in_value) {
      if (c == '\\') {
        ++i;  // the escaped byte
      } else if (c == '"') {
        in_value = false;
      }
    } else if (c == '"') {
      in_value = true;
    } else if (c == '}') {
      break;
    }
  }
  if (i >= line.size()) return false;
  key = std::string(line.substr(0, i + 1));
  std::string v(trim(line.substr(i + 1)));
  char* end = nullptr;
  value = std::strtod(v.c_str(), &end);
  return !v.empty() && end == v.c_str() + v.size();
}

std::string format_value(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v < 9e15 && v > -9e15)
    return std::to_string(static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

}  // namespace

std::string_view failure_class(std::string_view category) {
  if (category.empty()) return {};
  return category == "hardware" ? "hardware" : "software";
}

std::string escape_label_value(std::string_view v) {
  const std::string clean = sanitize_utf8(v);
  std::string out;
  out.reserve(clean.size());
  for (char c : clean) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

Textfile Textfile::parse(std::string_view text) {
  Textfile t;
  for (std::string_view line : split(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    std::string key;
    double v = 0;
    if (!parse_sample(line, key, v)) continue;
    const std::string_view name = name_of(key);
    if (name == kJobs || name == kFailures || name == kGpuSeconds || name == kLast) t.values_[key] = v;
  }
  return t;
}

void Textfile::add(const JobOutcome& job, const std::vector<std::string>& label_names, const std::string& node) {
  Labels extra;
  for (const std::string& n : label_names) {
    const std::string& v = n == "partition" ? job.partition : n == "account" ? job.account : job.user;
    extra.emplace_back(n, v);
  }
  Labels jobs = {{"verdict", job.verdict.empty() ? "unknown" : job.verdict}};
  jobs.insert(jobs.end(), extra.begin(), extra.end());
  values_[series_key(kJobs, jobs)] += 1;
  if (job.entry.empty()) return;
  auto failure_labels = [&](const std::string& entry) {
    Labels l = {{"entry", entry},
                {"category", job.category},
                {"class", std::string(failure_class(job.category))},
                {"node", job.node.empty() ? node : job.node}};
    l.insert(l.end(), extra.begin(), extra.end());
    return l;
  };
  Labels labels = failure_labels(job.entry);
  if (!values_.count(series_key(kFailures, labels))) {
    size_t failure_series = 0;
    for (const auto& [k, v] : values_) failure_series += name_of(k) == kFailures;
    if (failure_series >= kMaxFailureSeries) labels = failure_labels("other");
  }
  values_[series_key(kFailures, labels)] += 1;
  values_[series_key(kGpuSeconds, labels)] += job.gpu_hours * 3600;
  double& last = values_[series_key(kLast, labels)];
  last = std::max(last, static_cast<double>(job.ended_unix));
}

std::string Textfile::render() const {
  std::string out;
  for (const Family& f : kFamilies) {
    bool any = false;
    for (const auto& [k, v] : values_) {
      if (name_of(k) != f.name) continue;
      if (!any) out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
      any = true;
      out += k + ' ' + format_value(v) + '\n';
    }
  }
  return out;
}

Status update_textfile(const std::string& dir, const std::string& name, const std::vector<std::string>& label_names,
                       const JobOutcome& job, const std::string& node, int wait_ms) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return make_error(ErrorCode::kIo, fmt::format("cannot open the folder: {}", std::strerror(errno)), {dir, 0, ""});
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{dfd};
  // The lock: two epilogs on one node (jobs ending together) read and write in turn.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (::flock(dfd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      return make_error(ErrorCode::kIo, fmt::format("cannot lock the folder: {}", std::strerror(errno)), {dir, 0, ""});
    if (std::chrono::steady_clock::now() >= until)
      return make_error(ErrorCode::kIo, "the folder stayed locked by another writer", {dir, 0, ""});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string old;
  if (const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); fd >= 0) {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 && old.size() < (64u << 20)) old.append(buf, static_cast<size_t>(n));
    ::close(fd);
  }
  Textfile t = Textfile::parse(old);
  t.add(job, label_names, node);
  const std::string text = t.render();
  // The collector reads only *.prom: the temporary file is never half-read.
  const std::string tmp = fmt::format(".{}.{}.tmp", name, ::getpid());
  const int fd = ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error(ErrorCode::kIo, fmt::format("cannot write: {}", std::strerror(errno)), {dir + "/" + tmp, 0, ""});
  ::fchmod(fd, 0644);  // whatever the umask: node_exporter runs as its own user
  size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(n);
  }
  const int saved = errno;
  ok = ok && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) {
    const int e = ok ? errno : saved;
    ::unlinkat(dfd, tmp.c_str(), 0);
    return make_error(ErrorCode::kIo, fmt::format("cannot write: {}", std::strerror(e)), {dir + "/" + name, 0, ""});
  }
  return Status::Ok();
}

}  // namespace ff::fleet
