// watch/live.history.cc — `firstfault history`: the diagnoses kept (history/history.h), newest
// first, with how often each failure recurred this week.
#include <fmt/format.h>

#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "history/history.h"
#include "watch/live_internal.h"
#include "base/escape.h"

namespace ff::app::live {

int run_history(const LiveOptions& lo) {
  auto h = History::open(history_path());
  if (!h.ok()) {
    say_error(h.error().to_string());
    return 2;
  }
  const auto rows = h.value()->list(lo.limit);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (lo.format == "json") {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
      nlohmann::ordered_json j;
      j["time"] = r.unix_s;
      j["command"] = r.command;
      j["job"] = r.job;
      j["attempt"] = r.attempt >= 0 ? nlohmann::ordered_json(r.attempt) : nlohmann::ordered_json(nullptr);
      j["verdict"] = r.verdict;
      j["entry"] = r.entry.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.entry);
      j["category"] = r.category;
      j["fingerprint"] = r.fingerprint;
      j["rank"] = r.rank >= 0 ? nlohmann::ordered_json(r.rank) : nlohmann::ordered_json(nullptr);
      j["node"] = r.node.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.node);
      if (!r.job_id.empty()) {
        j["scheduler"] = {{"job_id", r.job_id},   {"user", r.user},           {"partition", r.partition},
                          {"account", r.account}, {"node_list", r.node_list}, {"gpu_hours", r.gpu_hours}};
      }
      const Recurrence rec = h.value()->recurrence(r, now);
      j["recurrence"] = {{"times_this_week", rec.times}, {"text", rec.line}};
      arr.push_back(std::move(j));
    }
    std::cout << arr.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (rows.empty()) {
    fmt::print("no diagnosis kept yet ({})\n", escape_for_terminal(history_path()));
    return 0;
  }
  for (const auto& r : rows) {
    char when[32];
    const std::time_t t = static_cast<std::time_t>(r.unix_s);
    std::tm tm{};
    localtime_r(&t, &tm);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
    std::string what = r.entry.empty() ? std::string("-") : r.entry;
    if (r.rank >= 0) what += fmt::format(" rank {}", r.rank);
    if (!r.node.empty()) what += " on " + r.node;
    std::string job = r.job.substr(0, r.job.find('\n'));
    if (r.attempt >= 0) job += fmt::format(" (attempt {})", r.attempt);
    fmt::print("{}  {:<8} {:<10} {}  {}\n", when, r.command, r.verdict, escape_for_terminal(what),
               escape_for_terminal(job));
    const Recurrence rec = h.value()->recurrence(r, now);
    if (!rec.line.empty()) fmt::print("    {}\n", escape_for_terminal(rec.line));
  }
  return 0;
}

}  // namespace ff::app::live
