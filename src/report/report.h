// report/report.h — Diagnosis -> text for a terminal, the JSON contract, an HTML page, Markdown.
//
// Renderers take only the Diagnosis model, so the views can never disagree on content.
// The JSON schema is versioned (kSchema, "firstfault.diagnosis/2"); fields are only added
// within a version (docs/json-output.md).
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>

#include "analyze/diagnosis.h"

namespace ff::report {

struct TextOptions {
  bool color = false;    // ANSI colour (only on a TTY, never with NO_COLOR)
  bool verbose = false;  // all collateral and the per-source table
  size_t width = 0;      // wrap at word boundaries to this many columns (0: no wrapping)
  size_t rows = 0;       // the screen's height: the answer (verdict to verify) fits in it (0: no limit)
  bool brief = false;    // only the answer: verdict, first failure, decisive line, fix, verify (and
                         // what could not be read); no explanation, collateral, numbers or timeline
};

std::string render_text(const analyze::Diagnosis& d, const TextOptions& options = {});

struct HtmlOptions {
  std::string generator = "firstfault";  // named at the foot of the page
  // The encyclopedia page of an entry id (a path or URL), or empty for none: filled by the
  // caller, who knows where `firstfault site` wrote it.
  std::function<std::string(const std::string& id)> entry_link;
};
// One self-contained page (html.cc): inline CSS and SVG (a timeline with a lane per rank,
// plots of the series with the verdicts marked), no script, no external request.
std::string render_html(const analyze::Diagnosis& d, const HtmlOptions& options = {});

struct MarkdownOptions {
  std::string generator = "firstfault";
  size_t max_rows = 10;  // rows per table (collateral, timeline)
};
// For a GitHub issue or a chat (markdown.cc): no HTML, log text in code blocks.
std::string render_markdown(const analyze::Diagnosis& d, const MarkdownOptions& options = {});
extern const char* const kSchema;
std::string render_json(const analyze::Diagnosis& d, int indent = 2);

}  // namespace ff::report
