// watch/exporter.h — what a watch sees, for Prometheus (`--metrics 127.0.0.1:9464`).
//
// The exposition is prometheus-cpp's (Debian's prometheus-cpp-dev: the registry, the
// text format and the pull server, civetweb inside), on /metrics at the address given:
// a port alone, or ":port", binds 127.0.0.1. The families (docs/prometheus.md lists
// them with their labels; docs/alerting-rules.yml alerts on them):
//   firstfault_findings_total{entry,category,severity}   alerts said, by what they are
//   firstfault_verdict{verdict}                          1 for the current verdict, else 0
//   firstfault_last_step{rank} firstfault_loss{rank} firstfault_loss_scale{rank}
//   firstfault_grad_norm{rank} firstfault_step_time_seconds{rank}   the last value per rank
//   firstfault_lines_read_total firstfault_bytes_read_total firstfault_sources
//   firstfault_seconds_since_progress firstfault_stall_threshold_seconds firstfault_stalled
//
// Thread-safety: update() from the watch's thread; the server reads the values from its
// own threads through prometheus-cpp's registry (its metrics are atomic).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "metrics/metrics.h"
#include "watch/watch.h"

namespace ff::watch {

class Exporter {
 public:
  // Listening on `address` ("127.0.0.1:9464", ":9464", "9464"; port 0 picks a free one),
  // or an error (the address in use, prometheus-cpp not built in).
  static Result<std::unique_ptr<Exporter>> create(const std::string& address);
  virtual ~Exporter() = default;
  // The port it listens on.
  virtual int port() const = 0;
  // Publishes the session's state as of now.
  virtual void update(Session& session, const metrics::Aliases& aliases, int64_t now_ms) = 0;
};

// Whether this build has the exporter (prometheus-cpp found at build time).
bool exporter_available();

}  // namespace ff::watch
