// serve/serve.admission.cc — Admission: a bounded number of diagnoses at once, and a
// bounded queue behind them.
#include "serve/serve.h"

namespace ff::serve {

Admission::Outcome Admission::enter(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (in_ < running_) {
    ++in_;
    return Outcome::kAdmitted;
  }
  if (queued_ >= waiting_) return Outcome::kQueueFull;
  ++queued_;
  const bool got = cv_.wait_for(lock, wait, [&] { return in_ < running_; });
  --queued_;
  if (!got) return Outcome::kTimedOut;
  ++in_;
  return Outcome::kAdmitted;
}

void Admission::leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_;
  }
  cv_.notify_one();
}

unsigned Admission::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_;
}

unsigned Admission::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

}  // namespace ff::serve
