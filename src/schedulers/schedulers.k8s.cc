// schedulers/schedulers.k8s.cc — `firstfault k8s POD|job/NAME`: a pod's (or a Job's pods') logs from
// `kubectl logs --prefix --timestamps --all-containers`, diagnosed with what Kubernetes
// knows of them taken as evidence: the pods' events (`kubectl get events -o json`:
// BackOff, Evicted, FailedScheduling, Unhealthy ...) and their containers' last
// termination (`kubectl get pod -o json`: OOMKilled, exit code 137).
//
// The events and statuses become lines in the shape `kubectl describe pod` prints them
// (`Warning  BackOff  kubelet  Back-off restarting failed container ...`, `Reason:
// OOMKilled, Exit Code: 137`), behind the same `[pod/NAME/CONTAINER] TIME ` prefix as
// the logs, so the KB's kubernetes entries (kb/kubernetes/) and prefix formats
// (kb/formats/prefixes.yaml: kubectl-prefix, iso-time) read them as they read a pasted
// describe output: no Kubernetes knowledge in code but where the JSON is.
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "pipeline/pipeline.h"
#include "schedulers/process.h"
#include "schedulers/schedulers.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "io/io.h"
#include "report/report.h"
#include "scan/scan.h"

namespace ff::app {

namespace {

using json = nlohmann::json;

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& sub(const json& j, const char* key) {
  static const json kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}

// One line, whatever the text holds: newlines inside a message become spaces.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// "spec.containers{trainer}" -> "trainer"
std::string container_of(const std::string& field_path) {
  const size_t a = field_path.find('{'), b = field_path.rfind('}');
  return a != std::string::npos && b != std::string::npos && b > a ? field_path.substr(a + 1, b - a - 1)
                                                                   : std::string();
}

struct Kubectl {
  std::vector<std::string> base;  // kubectl [--context C] [-n NS]
  std::vector<std::string> args(std::initializer_list<std::string> more) const {
    std::vector<std::string> a = base;
    a.insert(a.end(), more);
    return a;
  }
};

// Lines for a pod's events, oldest first.
void event_lines(const json& list, std::vector<std::pair<std::string, std::string>>& out) {
  const json& items = sub(list, "items");
  if (!items.is_array()) return;
  for (const json& e : items) {
    if (!e.is_object()) continue;
    const json& obj = sub(e, "involvedObject");
    std::string when = str(e, "lastTimestamp");
    if (when.empty()) when = str(e, "eventTime");
    if (when.empty()) when = str(e, "firstTimestamp");
    if (when.empty()) when = str(sub(e, "metadata"), "creationTimestamp");
    std::string source = str(sub(e, "source"), "component");
    if (source.empty()) source = str(e, "reportingComponent");
    std::string count;
    if (auto c = e.find("count"); c != e.end() && c->is_number_integer() && c->get<long long>() > 1)
      count = fmt::format(" (x{})", c->get<long long>());
    const std::string kind = str(obj, "kind");
    const std::string name = str(obj, "name");
    const std::string who =
        kind == "Pod" || kind.empty() ? "pod/" + name + "/" + container_of(str(obj, "fieldPath")) : "pod/" + name + "/";
    std::string line =
        fmt::format("[{}] {}{}{}  {}{}  {}  {}", one_line(who), when, when.empty() ? "" : " ", one_line(str(e, "type")),
                    one_line(str(e, "reason")), count, one_line(source), one_line(str(e, "message")));
    out.emplace_back(when, std::move(line));
  }
}

// Lines for a pod's status: a pod-level reason (Evicted) and each container's last
// termination, as `kubectl describe pod` words them.
void status_lines(const json& pod, std::vector<std::pair<std::string, std::string>>& out) {
  const std::string name = str(sub(pod, "metadata"), "name");
  const json& status = sub(pod, "status");
  if (const std::string reason = str(status, "reason"); !reason.empty()) {
    out.emplace_back("", fmt::format("[pod/{}/] Status: Failed, Reason: {}, Message: {}", one_line(name),
                                     one_line(reason), one_line(str(status, "message"))));
  }
  for (const char* which : {"initContainerStatuses", "containerStatuses"}) {
    const json& list = sub(status, which);
    if (!list.is_array()) continue;
    for (const json& c : list) {
      const std::string cname = str(c, "name");
      for (const char* state : {"lastState", "state"}) {
        const json& t = sub(sub(c, state), "terminated");
        if (!t.is_object()) continue;
        const std::string finished = str(t, "finishedAt");
        long long code = 0;
        if (auto it = t.find("exitCode"); it != t.end() && it->is_number_integer()) code = it->get<long long>();
        std::string line = fmt::format("[pod/{}/{}] {}{}{} container {} terminated: Reason: {}, Exit Code: {}",
                                       one_line(name), one_line(cname), finished, finished.empty() ? "" : " ",
                                       std::string(state) == "lastState" ? "Last State:" : "State:", one_line(cname),
                                       one_line(str(t, "reason")), code);
        if (const std::string msg = str(t, "message"); !msg.empty()) line += ", Message: " + one_line(msg);
        out.emplace_back(finished, std::move(line));
      }
    }
  }
}

// A memory file holding text, as a readable descriptor at its start.
int text_fd(const std::string& text) {
  const int fd = ::memfd_create("firstfault-k8s", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t k = ::write(fd, text.data() + done, text.size() - done);
    if (k <= 0) {
      ::close(fd);
      return -1;
    }
    done += static_cast<size_t>(k);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

// The sources: Kubernetes' own record first (a memory file), then each pod's logs as
// kubectl streams them.
class KubeFeed : public io::StreamFeed {
 public:
  KubeFeed(const Kubectl& k, std::vector<std::string> pods, std::string record, bool previous)
      : k_(k), pods_(std::move(pods)), record_(std::move(record)), previous_(previous) {}
  ~KubeFeed() override { reap(); }
  bool next(std::string& name, int& fd) override {
    reap();
    if (!record_done_) {
      record_done_ = true;
      if (!record_.empty()) {
        fd = text_fd(record_);
        if (fd >= 0) {
          name = "kubectl get events,pods";
          return true;
        }
      }
    }
    while (at_ < pods_.size()) {
      const std::string& pod = pods_[at_++];
      std::vector<std::string> a = k_.args({"logs", "--prefix", "--timestamps", "--all-containers"});
      if (previous_) a.emplace_back("--previous");
      a.push_back("pod/" + pod);
      if (!start_streaming(a, running_)) {
        problems.push_back(fmt::format("kubectl logs {}: could not start: {}", pod, running_.error));
        continue;
      }
      running_pod_ = pod;
      fd = running_.fd;
      running_.fd = -1;  // read_streams closes it
      name = "kubectl logs pod/" + pod;
      return true;
    }
    return false;
  }
  std::vector<std::string> problems;

 private:
  void reap() {
    if (running_.pid <= 0) return;
    CommandResult r = finish_streaming(running_);
    if (!r.ok()) problems.push_back(r.describe("kubectl logs " + running_pod_));
  }
  const Kubectl& k_;
  std::vector<std::string> pods_;
  std::string record_;
  bool previous_;
  bool record_done_ = false;
  size_t at_ = 0;
  StreamingCommand running_;
  std::string running_pod_;
};

std::optional<json> get_json(const Kubectl& k, std::initializer_list<std::string> what, std::string& problem) {
  CommandResult r = run_command(k.args(what), CommandOptions{std::chrono::milliseconds(30000), 256u << 20});
  if (!r.ok()) {
    problem = r.describe("kubectl " + fmt::format("{}", fmt::join(what, " ")));
    return std::nullopt;
  }
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    problem = fmt::format("kubectl {}: its output is not JSON", fmt::join(what, " "));
    return std::nullopt;
  }
  return j;
}

}  // namespace

// Over 80 lines: one job's whole course in order (kubectl's JSON, the pods, the memory
// file, the log streams fed as they come, the diagnosis), each step said if it fails.
int run_k8s(Options opt, const SchedulerOptions& so) {
  Kubectl k;
  k.base = {"kubectl"};
  if (!so.k8s_context.empty()) k.base.insert(k.base.end(), {"--context", so.k8s_context});
  if (!so.k8s_namespace.empty()) k.base.insert(k.base.end(), {"--namespace", so.k8s_namespace});
  std::string target = so.target;
  bool is_job = false;
  for (const char* p : {"job/", "jobs/", "job.batch/", "jobs.batch/"}) {
    if (target.rfind(p, 0) == 0) {
      target = target.substr(std::string(p).size());
      is_job = true;
    }
  }
  for (const char* p : {"pod/", "pods/", "po/"}) {
    if (!is_job && target.rfind(p, 0) == 0) target = target.substr(std::string(p).size());
  }
  if (target.empty() || target.find('/') != std::string::npos) {
    fmt::print(stderr, "firstfault: k8s: '{}' is not a pod (NAME or pod/NAME) or a Job (job/NAME)\n",
               escape_for_terminal(so.target));
    return 2;
  }
  std::string problem;
  std::vector<json> pods;
  if (is_job) {
    auto list = get_json(k, {"get", "pods", "-l", "job-name=" + target, "-o", "json"}, problem);
    if (!list) {
      fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(problem));
      return 2;
    }
    if (const json& items = sub(*list, "items"); items.is_array())
      for (const json& p : items) pods.push_back(p);
    if (pods.empty()) {
      fmt::print(stderr, "firstfault: k8s: job/{} has no pods (kubectl get pods -l job-name={})\n",
                 escape_for_terminal(target), escape_for_terminal(target));
      return 2;
    }
  } else {
    auto pod = get_json(k, {"get", "pod", target, "-o", "json"}, problem);
    if (!pod) {
      fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(problem));
      return 2;
    }
    pods.push_back(std::move(*pod));
  }
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> record;  // (time, line)
  for (const json& p : pods) {
    const std::string name = str(sub(p, "metadata"), "name");
    if (name.empty()) continue;
    names.push_back(name);
    status_lines(p, record);
    std::string why;
    if (auto ev = get_json(k, {"get", "events", "-o", "json", "--field-selector", "involvedObject.name=" + name}, why))
      event_lines(*ev, record);
    else
      fmt::print(stderr, "firstfault: {} (diagnosing without its events)\n", escape_for_terminal(why));
  }
  if (is_job) {
    std::string why;
    if (auto ev =
            get_json(k, {"get", "events", "-o", "json", "--field-selector", "involvedObject.name=" + target}, why))
      event_lines(*ev, record);
  }
  std::sort(names.begin(), names.end());
  std::stable_sort(record.begin(), record.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string text;
  for (const auto& [t, line] : record) text += line + "\n";

  auto loaded = load_or_say(opt, false, KbFields::kDiagnosis);
  if (!loaded) return 2;
  install_interrupt_handlers();
  KubeFeed feed(k, names, text, so.previous);
  scan::ScanOptions sopt;
  sopt.threads = opt.threads;
  if (opt.max_bytes > 0) sopt.read.max_total_bytes = opt.max_bytes;
  const ScanFn scan_fn = [&](const scan::Engine& engine, scan::EventSink& sink) {
    return scan::scan_feed(engine, feed, sink, sopt);
  };
  std::vector<std::string> shown;
  for (const auto& n : names) shown.push_back("pod/" + n);
  DiagnosedJob job;
  if (!diagnose_loaded(*loaded, opt, scan_fn, shown, job)) return 2;
  for (const auto& p : feed.problems) fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(p));
  for (const auto& e : job.input_errors) fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  fmt::print(stderr, "firstfault: k8s {}: {}\n", escape_for_terminal(so.target),
             escape_for_terminal(fmt::format("{}", fmt::join(shown, ", "))));
  return print_diagnosis(job, opt);
}

}  // namespace ff::app
