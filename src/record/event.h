// record/event.h — the Event value: one recognised fact from a log, with its context.
// Produced by scan, consumed by analyze (which never links the scanner).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kb/kb.h"
#include "record/record.h"

namespace ff::record {

enum class EventKind : uint8_t {
  kPattern,          // a KB pattern matched a line
  kException,        // a joined Python traceback (its final exception line)
  kLauncherFailure,  // one entry of torchrun's failure summary
};
const char* event_kind_name(EventKind kind);

struct Event : Origin {
  EventKind kind = EventKind::kPattern;
  uint32_t source = 0;  // index into the job's source list
  uint64_t line = 0;    // 1-based line in the source
  uint64_t offset = 0;  // byte offset of the line
  uint64_t seq = 0;     // global order of arrival in (source, line) order
  std::string time_text;
  std::string text;  // the line's message (prefixes removed), valid UTF-8, capped

  // kPattern
  std::string entry_id;
  std::string pattern_id;
  kb::Role role = kb::Role::kContext;
  int priority = 0;
  size_t match_len = 0;
  std::map<std::string, std::string> captures;

  // Traceback context: set on pattern events inside a traceback and on kException.
  uint64_t traceback_first = 0;  // first line of the enclosing traceback, 0 if none
  uint64_t traceback_last = 0;
  bool exception_line = false;   // this line is one of the traceback's exception lines
  bool final_exception = false;  // ... and the final one
  std::string exc_type;
  std::string exc_frame;               // innermost frame's file for the exception (kException)
  bool chained_cause = false;          // an exception that caused the later ones in its traceback
  std::vector<std::string> exc_chain;  // earlier exception lines of the same traceback
  std::vector<Frame> frames;           // the frames of this exception line (outermost first)
  uint64_t frames_dropped = 0;         // outer frames not kept (Traceback::kMaxFrames)
  // The lines before this one on the same stream (source and rank), oldest first: up to
  // kContextLines of them, looked for among the kContextWindow lines before it in the
  // source; kept for the events that can be a failure (scan's context ring).
  static constexpr size_t kContextLines = 100;
  static constexpr size_t kContextWindow = 400;
  static constexpr size_t kContextLineBytes = 300;
  std::vector<std::pair<uint64_t, std::string>> context_before;

  // Launcher summary: the line is inside torchrun's failure table.
  bool in_launcher_summary = false;
  int summary_rank = -1;
  int exitcode = 0;  // kLauncherFailure
  bool summary_root_cause = false;
};

// What the scan of one source says about it, as the analysis reads it (analyze's
// SourceSummary); scan::SourceStats is one, with the scan's own counters besides.
struct SourceSummary {
  std::string name;
  std::string encoding;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t events = 0;
  bool ok = true;
  std::string error;
  std::vector<int> ranks;                               // ranks seen in the source's prefixes (capped)
  std::map<int, std::string> rank_node;                 // rank -> node, as the log states it
  std::map<std::pair<std::string, int>, int> pid_rank;  // (node, pid) -> rank
};

}  // namespace ff::record
