// serve/serve.reports.cc — ReportStore: the newest diagnoses, in memory, under ids no
// one can guess, for the page's frame and downloads (/report/<id>.html|md|json).
#include <fmt/format.h>

#include "serve/serve_internal.h"

namespace ff::serve {

std::string ReportStore::put(std::shared_ptr<const Diagnosed> d) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string id;
  do { id = fmt::format("{:016x}", rng_()); } while (by_id_.count(id) > 0);
  by_id_[id] = std::move(d);
  order_.push_back(id);
  while (order_.size() > most_) {
    by_id_.erase(order_.front());
    order_.pop_front();
  }
  return id;
}

std::shared_ptr<const Diagnosed> ReportStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

}  // namespace ff::serve
