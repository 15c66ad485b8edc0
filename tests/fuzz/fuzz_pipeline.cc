// Fuzz target: the pipeline end to end, as `firstfault diagnose --format json` runs it on
// one source: scan::scan_text with the embedded KB's engine -> analyze::diagnose ->
// report::render_json (and render_text). The JSON must parse back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "analyze/analyze.h"
#include "kb/kb.h"
#include "report/report.h"
#include "scan/scan.h"

namespace {

struct Setup {
  ff::kb::KnowledgeBase kb;
  std::shared_ptr<const ff::scan::Engine> engine;
};

const Setup& setup() {
  static const Setup* s = [] {
    auto* out = new Setup;
    out->kb = ff::kb::load(ff::kb::embedded_files()).kb;
    auto e = ff::scan::Engine::create(out->kb, {});
    if (!e.ok()) std::abort();
    out->engine = e.value();
    return out;
  }();
  return *s;
}

}  // namespace

// The databases are compiled here, before the fuzzing starts: under ASan the first
// compile takes seconds, and inside a unit it would count against -timeout. A text of
// many lines also builds the joined-lines database the scan uses for long chunks.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const Setup& s = setup();
  std::string warm;
  for (int i = 0; i < 1024; ++i) warm += "[rank0]: step " + std::to_string(i) + " | loss 1.0\n";
  ff::scan::CollectSink sink;
  ff::scan::scan_text(*s.engine, "warm.log", warm, sink, {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Setup& s = setup();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ff::scan::CollectSink sink;
  ff::scan::ScanOptions opt;
  opt.max_line = 4096;
  ff::scan::JobStats stats = ff::scan::scan_text(*s.engine, "fuzz.log", text, sink, opt);
  std::vector<ff::analyze::SourceSummary> sources;
  for (const auto& src : stats.sources) sources.push_back(src);  // its SourceSummary part, as the CLI passes it
  ff::analyze::Diagnosis d = ff::analyze::diagnose(sink.events, sources, s.kb);
  d.notes = stats.notes;
  std::string json = ff::report::render_json(d);
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j["schema"] != "firstfault.diagnosis/2") __builtin_trap();
  (void)ff::report::render_text(d, {});
  return 0;
}
