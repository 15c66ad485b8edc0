// app/commands.report.h — `firstfault report`: the fleet report over many jobs' diagnoses
// (the `.firstfault.json` files the epilog leaves, or the history), rendered by fleet/.
#pragma once

#include <string>
#include <vector>

#include "app/commands.h"

namespace ff::app {

struct FleetReportOptions {
  std::vector<std::string> paths;   // folders walked for *.firstfault.json, or such files
  bool history = false;             // --history: the history database's rows too
  std::string since, until;         // --since/--until YYYY-MM-DD: the period (until excluded)
  std::string compare_to;           // --compare-to FROM..TO: the period to compare with
  std::string format = "markdown";  // html, markdown (md), json
  std::string output;               // -o FILE ("" or "-": stdout)
  std::string title = "Fleet report";
};

int run_fleet_report(const Options& opt, const FleetReportOptions& fo);

}  // namespace ff::app
