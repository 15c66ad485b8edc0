#include "watch/exporter.h"

#include <cmath>
#include <map>
#include <tuple>

#ifdef FF_WITH_PROMETHEUS
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#endif

#include "analyze/diagnosis.h"

namespace ff::watch {

namespace {

// "127.0.0.1:9464", ":9464", "9464" -> (host, port); loopback unless a host is named.
bool split_address(const std::string& address, std::string& host, std::string& port) {
  const size_t colon = address.rfind(':');
  host = colon == std::string::npos ? "" : address.substr(0, colon);
  port = colon == std::string::npos ? address : address.substr(colon + 1);
  if (host.empty()) host = "127.0.0.1";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
  }
  return std::stoi(port) <= 65535;
}

}  // namespace

#ifdef FF_WITH_PROMETHEUS

bool exporter_available() { return true; }

namespace {

class PromExporter : public Exporter {
 public:
  PromExporter() : registry_(std::make_shared<prometheus::Registry>()) {
    using prometheus::BuildCounter;
    using prometheus::BuildGauge;
    findings_ = &BuildCounter()
                     .Name("firstfault_findings_total")
                     .Help("Findings said, by KB entry, category and severity")
                     .Register(*registry_);
    verdict_ = &BuildGauge()
                    .Name("firstfault_verdict")
                    .Help("1 for the job's current verdict, 0 for the others")
                    .Register(*registry_);
    last_step_ = &BuildGauge()
                      .Name("firstfault_last_step")
                      .Help("The last step of each rank's progress lines")
                      .Register(*registry_);
    loss_ = &BuildGauge().Name("firstfault_loss").Help("The last loss per rank").Register(*registry_);
    loss_scale_ =
        &BuildGauge().Name("firstfault_loss_scale").Help("The last fp16 loss scale per rank").Register(*registry_);
    grad_norm_ =
        &BuildGauge().Name("firstfault_grad_norm").Help("The last gradient norm per rank").Register(*registry_);
    step_time_ =
        &BuildGauge().Name("firstfault_step_time_seconds").Help("The last step time per rank").Register(*registry_);
    auto& lines = BuildCounter().Name("firstfault_lines_read_total").Help("Log lines read").Register(*registry_);
    lines_ = &lines.Add({});
    auto& bytes = BuildCounter().Name("firstfault_bytes_read_total").Help("Log bytes read").Register(*registry_);
    bytes_ = &bytes.Add({});
    sources_ = &BuildGauge().Name("firstfault_sources").Help("Logs followed").Register(*registry_).Add({});
    silent_ = &BuildGauge()
                   .Name("firstfault_seconds_since_progress")
                   .Help("Seconds since the last new step on any rank")
                   .Register(*registry_)
                   .Add({});
    threshold_ = &BuildGauge()
                      .Name("firstfault_stall_threshold_seconds")
                      .Help("The silence that makes a stall (0: not learned yet)")
                      .Register(*registry_)
                      .Add({});
    stalled_ = &BuildGauge().Name("firstfault_stalled").Help("1 while the run is stalled").Register(*registry_).Add({});
    for (auto v : {analyze::VerdictKind::kFailed, analyze::VerdictKind::kDegraded, analyze::VerdictKind::kHealthy,
                   analyze::VerdictKind::kIncomplete, analyze::VerdictKind::kUnknown}) {
      verdicts_[v] = &verdict_->Add({{"verdict", analyze::verdict_name(v)}});
    }
  }

  bool listen(const std::string& host, const std::string& port, std::string& problem) {
    try {
      exposer_ = std::make_unique<prometheus::Exposer>(
          (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port, 1);
      exposer_->RegisterCollectable(registry_);
    } catch (const std::exception& e) {
      problem = e.what();
      return false;
    }
    return true;
  }

  int port() const override {
    auto ports = exposer_->GetListeningPorts();
    return ports.empty() ? 0 : ports[0];
  }

  void update(Session& s, const metrics::Aliases& aliases, int64_t now_ms) override {
    for (const auto& [key, n] : s.alert_counts()) {
      double& was = said_[key];
      if (static_cast<double>(n) > was) {
        findings_->Add({{"entry", std::get<0>(key)}, {"category", std::get<1>(key)}, {"severity", std::get<2>(key)}})
            .Increment(static_cast<double>(n) - was);
        was = static_cast<double>(n);
      }
    }
    const analyze::VerdictKind v = s.analysed() ? s.diagnosis().verdict : analyze::VerdictKind::kUnknown;
    for (auto& [kind, g] : verdicts_) g->Set(kind == v ? 1 : 0);
    const scan::JobStats& job = s.job();
    for (const auto& [rank, p] : job.series.last_progress()) gauge(*last_step_, rank).Set(p.step);
    for (const auto& [key, series] : job.series.all()) {
      const std::string& name = aliases.name(key.first);
      prometheus::Family<prometheus::Gauge>* fam = nullptr;
      double scale = 1;
      if (name == "loss")
        fam = loss_;
      else if (name == "loss_scale")
        fam = loss_scale_;
      else if (name == "grad_norm")
        fam = grad_norm_;
      else if (name == "step_time_ms")
        fam = step_time_, scale = 1e-3;
      if (fam && series.count > 0) gauge(*fam, key.second).Set(series.last.value * scale);
    }
    const double lines = static_cast<double>(s.live().lines()), bytes = static_cast<double>(s.live().bytes());
    if (lines > lines_->Value()) lines_->Increment(lines - lines_->Value());
    if (bytes > bytes_->Value()) bytes_->Increment(bytes - bytes_->Value());
    sources_->Set(static_cast<double>(job.sources.size()));
    silent_->Set(static_cast<double>(s.silent_ms(now_ms)) / 1000.0);
    threshold_->Set(static_cast<double>(s.stall_threshold_ms()) / 1000.0);
    stalled_->Set(s.stalled() ? 1 : 0);
  }

 private:
  prometheus::Gauge& gauge(prometheus::Family<prometheus::Gauge>& fam, int rank) {
    auto key = std::make_pair(&fam, rank);
    auto it = gauges_.find(key);
    if (it != gauges_.end()) return *it->second;
    prometheus::Gauge& g = fam.Add({{"rank", rank >= 0 ? std::to_string(rank) : std::string("unknown")}});
    gauges_.emplace(key, &g);
    return g;
  }

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  prometheus::Family<prometheus::Counter>* findings_;
  prometheus::Family<prometheus::Gauge>*verdict_, *last_step_, *loss_, *loss_scale_, *grad_norm_, *step_time_;
  prometheus::Counter *lines_, *bytes_;
  prometheus::Gauge *sources_, *silent_, *threshold_, *stalled_;
  std::map<analyze::VerdictKind, prometheus::Gauge*> verdicts_;
  std::map<std::pair<void*, int>, prometheus::Gauge*> gauges_;
  std::map<std::tuple<std::string, std::string, std::string>, double> said_;
};

}  // namespace

Result<std::unique_ptr<Exporter>> Exporter::create(const std::string& address) {
  std::string host, port, problem;
  if (!split_address(address, host, port))
    return make_error(ErrorCode::kInvalidArg, "--metrics: not an address: " + address + " (e.g. 127.0.0.1:9464)");
  auto e = std::make_unique<PromExporter>();
  if (!e->listen(host, port, problem))
    return make_error(ErrorCode::kIo, "--metrics: cannot listen on " + host + ":" + port + ": " + problem);
  return std::unique_ptr<Exporter>(std::move(e));
}

#else

bool exporter_available() { return false; }

Result<std::unique_ptr<Exporter>> Exporter::create(const std::string& address) {
  std::string host, port;
  if (!split_address(address, host, port))
    return make_error(ErrorCode::kInvalidArg, "--metrics: not an address: " + address + " (e.g. 127.0.0.1:9464)");
  return make_error(ErrorCode::kInvalidArg,
                    "--metrics: this firstfault was built without prometheus-cpp "
                    "(Debian: prometheus-cpp-dev)");
}

#endif

}  // namespace ff::watch
