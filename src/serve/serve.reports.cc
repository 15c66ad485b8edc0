// serve/serve.reports.cc — ReportStore: the newest diagnoses, in memory, under ids no
// one can guess, for the page's frame and downloads (/report/<id>.html|md|json).
//
// An id is 128 bits from the kernel's CSPRNG (getrandom(2)), not from a seeded PRNG: the
// ids a client is given must tell it nothing about the ids of other clients' reports
// (312 outputs of a std::mt19937_64 give away its state, and so every later id).
#include <sys/random.h>

#include <cerrno>
#include <cstdlib>

#include "serve/serve_internal.h"

namespace ff::serve {

std::string random_report_id() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::abort();  // no kernel randomness: no id can be safe (Linux >= 3.17 has it)
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(2 * sizeof bytes, '0');
  for (size_t i = 0; i < sizeof bytes; ++i) {
    id[2 * i] = kHex[bytes[i] >> 4];
    id[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return id;
}

std::string download_name(std::string_view log_name, std::string_view kind) {
  static constexpr std::string_view kDropped[] = {".gz", ".zst", ".xz", ".bz2", ".tgz", ".tar",
                                                   ".log", ".txt", ".out", ".err", ".jsonl"};
  std::string stem;
  for (char c : log_name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
    stem += keep ? c : '_';
  }
  for (bool again = true; again;) {
    again = false;
    for (std::string_view ext : kDropped) {
      if (stem.size() > ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0) {
        stem.resize(stem.size() - ext.size());
        again = true;
      }
    }
  }
  while (!stem.empty() && (stem.front() == '.' || stem.front() == '-')) stem.erase(0, 1);
  if (stem.size() > 100) stem.resize(100);
  if (stem.empty() || stem.find_first_not_of("._") == std::string::npos) return "firstfault-report." + std::string(kind);
  return stem + ".firstfault." + std::string(kind);
}

namespace {

uint64_t size_of(const Diagnosed& d) { return d.json.size() + d.html.size() + d.markdown.size() + d.verdict.size() + d.name.size(); }

}  // namespace

std::string ReportStore::put(std::shared_ptr<const Diagnosed> d) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string id;
  do { id = random_report_id(); } while (by_id_.count(id) > 0);
  bytes_ += size_of(*d);
  by_id_[id] = std::move(d);
  order_.push_back(id);
  while (order_.size() > 1 && (order_.size() > most_ || bytes_ > most_bytes_)) {
    auto it = by_id_.find(order_.front());
    bytes_ -= size_of(*it->second);
    by_id_.erase(it);
    order_.pop_front();
  }
  return id;
}

uint64_t ReportStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::shared_ptr<const Diagnosed> ReportStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

}  // namespace ff::serve
