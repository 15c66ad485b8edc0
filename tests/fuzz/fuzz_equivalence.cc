// Differential fuzz target (issue 14): the same input read from a file through scan_job
// on one thread with the default chunks, on two threads with chunks of a size the input
// chooses (boundaries everywhere: inside tracebacks, launcher tables, multi-byte
// characters), and on one thread with 700-byte chunks must give the identical diagnosis
// JSON, events included (the one-line scan and the pipeline agree, DESIGN.md "Threads").
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "analyze/analyze.h"
#include "kb/kb.h"
#include "report/report.h"
#include "scan/scan.h"

namespace {

struct Setup {
  ff::kb::KnowledgeBase kb;
  std::shared_ptr<const ff::scan::Engine> engine;
  std::string path;  // the input file, rewritten for each input
};

Setup& setup() {
  static Setup* s = [] {
    auto* out = new Setup;
    out->kb = ff::kb::load(ff::kb::embedded_files()).kb;
    auto e = ff::scan::Engine::create(out->kb, {});
    if (!e.ok()) std::abort();
    out->engine = e.value();
    std::error_code ec;
    auto dir = std::filesystem::temp_directory_path(ec) / ("ff-fuzz-eq-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir, ec);
    out->path = (dir / "job.log").string();
    return out;
  }();
  return *s;
}

std::string diagnose_json(const Setup& s, unsigned threads, size_t chunk) {
  ff::scan::CollectSink sink;
  ff::scan::ScanOptions opt;
  opt.max_line = 4096;
  opt.threads = threads;
  opt.chunk_bytes = chunk;
  ff::scan::JobStats stats = ff::scan::scan_job(*s.engine, {s.path}, sink, opt);
  std::vector<ff::analyze::SourceSummary> sources;
  for (const auto& src : stats.sources) sources.push_back(src);  // its SourceSummary part
  ff::analyze::JobNumbers numbers;
  numbers.series = &stats.series;
  numbers.aliases = &s.engine->metric_aliases();
  numbers.last_time_us = stats.last_time_us;
  numbers.last_time_clock = stats.last_time_clock;
  for (const auto& e : stats.errors) numbers.unread.push_back(e.to_string());
  ff::analyze::Diagnosis d = ff::analyze::diagnose(sink.events, sources, s.kb, numbers);
  d.notes = stats.notes;
  std::string out = ff::report::render_json(d, -1);
  for (const auto& e : sink.events) out += "\n" + std::to_string(e.line) + " " + e.entry_id + " " + e.text;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Setup& s = setup();
  std::string warm;
  for (int i = 0; i < 1024; ++i) warm += "[rank0]: step " + std::to_string(i) + " | loss 1.0\n";
  std::ofstream(s.path, std::ios::binary) << warm;
  (void)diagnose_json(s, 1, 2 << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Setup& s = setup();
  {
    std::ofstream f(s.path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const size_t small = 1 + (size > 0 ? (static_cast<size_t>(data[0]) * 37 + size) % 4096 : 0);
  const std::string one = diagnose_json(s, 1, 2 << 20);
  const std::string two = diagnose_json(s, 2, small);
  const std::string tiny = diagnose_json(s, 1, 700);
  if (one != two || one != tiny) {
    std::fprintf(stderr, "fuzz_equivalence: results differ (chunk %zu)\n--- 1 thread:\n%s\n--- 2 threads:\n%s\n--- 700:\n%s\n",
                 small, one.c_str(), two.c_str(), tiny.c_str());
    __builtin_trap();
  }
  return 0;
}
