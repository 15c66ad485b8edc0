// pipeline/redaction.h — `--redact`: the rules of kb/formats/secrets.yaml as a redact::Redactor,
// and the walks that pass every string that came from a log through it (a Diagnosis after
// the analysis, so the answer is computed on the original text; the events of `events`;
// input errors). The summary goes into the JSON as `redaction` and into the text as a line.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analyze/diagnosis.h"
#include "base/result.h"
#include "kb/kb.h"
#include "record/event.h"
#include "redact/redact.h"

namespace ff::app {

// The `redaction:` mapping of the first formats/secrets.yaml among `files`.
Result<redact::Rules> redaction_rules(const std::vector<kb::File>& files = kb::embedded_files());
// A Redactor from the embedded rules.
Result<redact::Redactor> make_redactor();

// Every node the diagnosis names becomes a known host, then every string from the log is
// replaced: evidence, decisive lines, context lines, frames, collateral, hypotheses,
// timeline, reasons, verdicts, sources, notes and errors, and the suggested commands.
void redact_diagnosis(analyze::Diagnosis& d, redact::Redactor& r);
// The events' nodes become known hosts (call before applying anything), then their texts.
void add_event_hosts(const std::vector<record::Event>& events, redact::Redactor& r);
void redact_events(std::vector<record::Event>& events, redact::Redactor& r);
void redact_errors(std::vector<Error>& errors, redact::Redactor& r);

// --redact: a Redactor in `out` that knows the events' nodes, and the input errors redacted
// (they are printed before the diagnosis); false, said on stderr, when the rules do not load.
bool start_redactor(std::optional<redact::Redactor>& out, const std::vector<record::Event>& events,
                    std::vector<Error>& errors);
// Every string value in `j` (not the keys), for diff and verify, whose JSON quotes the logs.
void redact_json(nlohmann::ordered_json& j, redact::Redactor& r);
// The summary as the JSON `redaction` object.
nlohmann::ordered_json redaction_object(const redact::Redactor& r);

// `render_json` output with a "redaction" object added at its end (docs/json-output.md).
std::string add_redaction_json(const std::string& json, const redact::Redactor& r);
// "Redacted (--redact): 4 host (2 distinct), 1 hf-token ...\n".
std::string redaction_line(const redact::Redactor& r);

}  // namespace ff::app
