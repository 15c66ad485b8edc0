// report/report.h — Diagnosis -> text for a terminal, or the JSON contract.
//
// Renderers take only the Diagnosis model, so the views can never disagree on content.
// The JSON schema is versioned ("firstfault.diagnosis/1"); fields are only added.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "analyze/diagnosis.h"

namespace ff::report {

struct TextOptions {
  bool color = false;     // ANSI colour (only on a TTY, never with NO_COLOR)
  bool verbose = false;   // all collateral and the per-source table
};

std::string render_text(const analyze::Diagnosis& d, const TextOptions& options = {});
std::string render_json(const analyze::Diagnosis& d, int indent = 2);

}  // namespace ff::report
