// report/report.h — Diagnosis -> text for a terminal, or the JSON contract.
//
// Renderers take only the Diagnosis model, so the views can never disagree on content.
// The JSON schema is versioned (kSchema, "firstfault.diagnosis/2"); fields are only added
// within a version (docs/json-output.md).
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "analyze/diagnosis.h"

namespace ff::report {

struct TextOptions {
  bool color = false;     // ANSI colour (only on a TTY, never with NO_COLOR)
  bool verbose = false;   // all collateral and the per-source table
  size_t width = 0;       // wrap at word boundaries to this many columns (0: no wrapping)
  size_t rows = 0;        // the screen's height: the answer (verdict to verify) fits in it (0: no limit)
};

std::string render_text(const analyze::Diagnosis& d, const TextOptions& options = {});
extern const char* const kSchema;
std::string render_json(const analyze::Diagnosis& d, int indent = 2);

}  // namespace ff::report
