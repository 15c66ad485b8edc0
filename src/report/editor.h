// report/editor.h — a Diagnosis for editors and code-scanning tools.
//
//   render_vimgrep(d)   `file:line:col: severity: message` lines, the layout of grep -n
//                       --column and of Vim's 'grepformat' ("%f:%l:%c:%m"), for a quickfix
//                       or location list: the decisive line (error), the collateral lines
//                       (info, each naming the line that explains it) and the user's own
//                       frame of the traceback (note). Text is one line each, escaped for a
//                       terminal (base/escape.h).
//   render_sarif(d, o)  SARIF 2.1.0 (OASIS), one run: tool.driver.rules are the KB
//                       entries that fired, results the primary (level error, with the
//                       user's frame as a related location and the traceback as a stack)
//                       and the collateral (level note, related to the decisive line); the
//                       fix and the verify command in the rule's help and the result's
//                       message. tests/sarif validates it against the official schema.
//
// Thread-safety: pure functions. Failure behaviour: none; an empty diagnosis gives no lines
// and a run with no results.
#pragma once

#include <functional>
#include <string>

#include "analyze/diagnosis.h"

namespace ff::report {

std::string render_vimgrep(const analyze::Diagnosis& d);

struct SarifOptions {
  std::string version;  // tool.driver.version ("" leaves it out)
  // The encyclopedia page of an entry id, for each rule's helpUri ("" or unset: none).
  std::function<std::string(const std::string& id)> entry_link;
};
std::string render_sarif(const analyze::Diagnosis& d, const SarifOptions& options = {});

// A file name as a SARIF artifactLocation.uri (an RFC 3986 URI reference): relative names
// stay relative, absolute ones become file:// URIs; bytes outside the unreserved set and
// '/' are percent-encoded.
std::string path_to_uri_reference(const std::string& path);

}  // namespace ff::report
