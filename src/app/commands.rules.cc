// app/commands.rules.cc — `rules`: the reasoning rules of analyze, in the order they apply; what the build includes (-V);
// and `serve` in a build without the web server.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "analyze/analyze.h"
#include "app/commands.h"
#include "base/wrap.h"
#include "pipeline/terminal.h"
#include "watch/exporter.h"

namespace ff::app {

// The parts found at build time (a build without one says so when it is asked for).
std::string build_includes() {
#ifdef FF_HAVE_VECTORSCAN
  std::string with = "vectorscan";
#else
  std::string with = "re2-only matcher";
#endif
#ifdef FF_HAVE_SERVE
  with += ", serve";
#else
  with += ", no serve";
#endif
  with += watch::exporter_available() ? ", --metrics" : ", no --metrics";
  return with;
}

#ifndef FF_HAVE_SERVE
int run_serve(const Options&) {
  fmt::print(stderr,
             "firstfault: this build has no web server (it was built without civetweb). Build from source with "
             "libcivetweb-dev installed (make run), take the portable build (make release), or use firstfault "
             "diagnose --format html.\n");
  return 2;
}
#endif

int run_rules(const Options& opt) {
  const auto& rules = analyze::rules();
  if (opt.format == "json") {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (size_t i = 0; i < rules.size(); ++i)
      arr.push_back({{"order", i + 1}, {"name", rules[i].name}, {"what", rules[i].what}});
    std::cout << arr.dump(2) << "\n";
    return 0;
  }
  std::string out;
  for (size_t i = 0; i < rules.size(); ++i)
    out += fmt::format("{:>2}. {:<32} {}\n", i + 1, rules[i].name, rules[i].what);
  out = wrap_text(out, output_width(STDOUT_FILENO));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace ff::app
