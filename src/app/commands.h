// app/commands.h — one function per subcommand; each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace ff::app {

struct Options {
  std::vector<std::string> inputs;
  std::vector<std::string> kb_dirs;
  std::string format = "text";
  std::string color = "auto";
  bool verbose = false;
  bool no_cache = false;
  std::string filter_category;
  std::string filter_framework;
  std::string entry_id;
};

int run_diagnose(const Options& opt);
int run_events(const Options& opt);
int run_kb_check(const Options& opt);
int run_kb_list(const Options& opt);
int run_explain(const Options& opt);

}  // namespace ff::app
