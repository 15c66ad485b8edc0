// scan/scan.h — the searcher: drives io, record and match over a job's inputs and
// produces Events.
//
// An Engine is built once from a KnowledgeBase (it compiles every pattern into one
// match::Database, cached on disk by KB hash, and the prefix formats). scan_job() reads
// every input (io), frames and parses lines (record), matches them (match), joins
// tracebacks and launcher summaries, and hands Events to an EventSink in (source, line)
// order.
//
//   auto engine = scan::Engine::create(kb, {.cache_dir = dir});
//   scan::CollectSink sink;
//   scan::JobStats stats = scan::scan_job(*engine.value(), {"job.log"}, sink, {});
//
// Thread-safety: an Engine is immutable and may be shared; scan_job() is reentrant. It
// runs ScanOptions::threads scanning threads plus a reading thread; the EventSink is
// called from one thread at a time, in (source, line) order, whatever the thread count.
// Failure behaviour: input problems are recorded in JobStats::errors and the rest of the
// job is still scanned; content never aborts a scan.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "io/io.h"
#include "kb/kb.h"
#include "match/match.h"
#include "metrics/metrics.h"
#include "record/event.h"
#include "record/record.h"

namespace ff::scan {

struct EngineOptions {
  std::string cache_dir;   // compiled-database cache; empty disables it
  bool use_vectorscan = true;
};

class Engine {
 public:
  static Result<std::shared_ptr<const Engine>> create(const kb::KnowledgeBase& kb, const EngineOptions& options = {});

  const kb::KnowledgeBase& kb() const { return kb_; }
  const match::Database& db() const { return *db_; }
  const record::PrefixParser& prefixes() const { return *prefixes_; }
  // Pattern id in the database -> (entry index, pattern index).
  struct PatternRef {
    size_t entry;
    size_t pattern;
  };
  const PatternRef& ref(uint32_t id) const { return refs_[id]; }
  // Problems found while compiling (patterns a backend rejected), as KB errors.
  const std::vector<Error>& warnings() const { return warnings_; }
  // What a source's name says about who wrote it (kb/formats/sources.yaml).
  record::Origin origin_of_source(std::string_view name) const;
  const record::PrefixParser& source_names() const { return *source_names_; }
  const metrics::Aliases& metric_aliases() const { return aliases_; }

 private:
  Engine(const kb::KnowledgeBase& kb) : kb_(kb) {}
  const kb::KnowledgeBase& kb_;
  std::shared_ptr<const match::Database> db_;
  std::unique_ptr<record::PrefixParser> prefixes_;
  std::vector<PatternRef> refs_;
  std::vector<Error> warnings_;
  std::unique_ptr<record::PrefixParser> source_names_;  // the sources formats, as prefixes
  metrics::Aliases aliases_;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void event(const record::Event& e) = 0;
};

class CollectSink : public EventSink {
 public:
  void event(const record::Event& e) override { events.push_back(e); }
  std::vector<record::Event> events;
};

struct SourceStats {
  std::string name;
  std::string encoding;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t lines_cut = 0;        // longer than the line limit
  uint64_t lines_with_rank = 0;
  uint64_t lines_with_time = 0;
  uint64_t events = 0;
  uint64_t events_dropped = 0;   // over the per-pattern cap
  bool ok = true;
  std::string error;
  std::vector<int> ranks;        // distinct ranks seen in line prefixes, sorted (capped)
  // Identity facts the log states: rank -> node (a line with both), and (node, pid) ->
  // rank (NCCL's "comm ... rank R" lines, lines with a rank prefix and NCCL's host:pid).
  std::map<int, std::string> rank_node;
  std::map<std::pair<std::string, int>, int> pid_rank;
  // Defaults for lines of this source, read from its name (kb/formats/sources.yaml):
  // a torchrun --log_dir path gives the local rank, "node-12.log" the node.
  record::Origin name_origin;
};

struct ScanOptions {
  size_t max_line = 1 << 20;              // bytes of one line that are examined
  uint64_t max_events_per_pattern = 2000; // per source; further hits are counted only
  io::ReadOptions read;                   // scan_job's input limits (expansion, archive members)
  // Threads; 0: one per core. With 2 or more, one of them reads (and decompresses) and
  // scans too when the others fall behind; with 1, everything runs on the calling thread.
  // The result is the same for every value: see "Threads" in scan.cc.
  unsigned threads = 0;
  // Bytes of lines per chunk, the unit of parallel work. Small values (tests) cross chunk
  // boundaries often; below 64 KiB the bytes are copied into chunks instead of read there.
  // 2 MiB: each chunk's per-rank work (series parts, facts) is spread over more lines than
  // with 1 MiB (3-10% faster on a 64-rank log), and peak RSS stays near 60 MiB.
  size_t chunk_bytes = 2 << 20;
  // Called from the reading thread as bytes arrive: the decompressed bytes read so far
  // over all sources (for a progress bar). Optional.
  std::function<void(uint64_t bytes)> progress;
  // --host, --unit: only the lines this host (its short name or FQDN) or this unit (a
  // syslog tag, an RFC 5424 APP-NAME, a journal's unit; "train" is "train.service") wrote,
  // out of a shared stream; a line that names no host or unit is kept. Empty: all lines.
  std::string only_host;
  std::string only_unit;
  // scan_text only: set (by another thread) to stop at the next chunk; the scan then ends
  // with an input error "cancelled" (the language server's superseded diagnoses). Optional.
  const std::atomic<bool>* cancel = nullptr;
};

struct JobStats {
  std::vector<SourceStats> sources;
  std::vector<Error> errors;
  std::vector<std::string> notes;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  metrics::SeriesSet series;     // numbers from progress lines and metric captures
  int64_t last_time_us = record::kNoTime;  // the latest wall-clock time seen in the job
  record::Clock last_time_clock = record::Clock::kNone;
};

JobStats scan_job(const Engine& engine, const std::vector<std::string>& inputs, EventSink& sink,
                  const ScanOptions& options = {});

// The same over streams that arrive while they are read (an upload: io::StreamFeed).
JobStats scan_feed(const Engine& engine, io::StreamFeed& feed, EventSink& sink, const ScanOptions& options = {});

// Scans an in-memory text as one source (tests, the KB self-check).
JobStats scan_text(const Engine& engine, std::string_view name, std::string_view text, EventSink& sink,
                   const ScanOptions& options = {});

}  // namespace ff::scan
