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
  std::string cache_dir;  // compiled-database cache; empty disables it
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
  // Identity lines and rank headers (kb/formats/prefixes.yaml `identity:`, `rank_headers:`).
  const record::LineIdentity& identity() const { return *identity_; }
  const metrics::Aliases& metric_aliases() const { return aliases_; }

 private:
  Engine(const kb::KnowledgeBase& kb) : kb_(kb) {}
  const kb::KnowledgeBase& kb_;
  std::shared_ptr<const match::Database> db_;
  std::unique_ptr<record::PrefixParser> prefixes_;
  std::vector<PatternRef> refs_;
  std::vector<Error> warnings_;
  std::unique_ptr<record::PrefixParser> source_names_;  // the sources formats, as prefixes
  std::unique_ptr<record::LineIdentity> identity_;
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

// A source's statistics: what the analysis reads (record::SourceSummary: name, encoding,
// bytes, lines, events, ok and error, the distinct ranks seen in line prefixes, sorted
// and capped, and the identity facts the log states: rank -> node from a line with both,
// (node, pid) -> rank from NCCL's "comm ... rank R" lines and lines with a rank prefix
// and NCCL's host:pid), and the scan's own counters.
struct SourceStats : record::SourceSummary {
  uint64_t lines_cut = 0;  // longer than the line limit
  uint64_t lines_with_rank = 0;
  uint64_t lines_with_time = 0;
  uint64_t traceback_starts = 0;  // lines that may start a traceback, or a launcher summary's header
  uint64_t events_dropped = 0;  // over the per-pattern cap
  // Defaults for lines of this source, read from its name (kb/formats/sources.yaml):
  // a torchrun --log_dir path gives the local rank, "node-12.log" the node.
  record::Origin name_origin;
};

struct ScanOptions {
  size_t max_line = 1 << 20;               // bytes of one line that are examined
  uint64_t max_events_per_pattern = 2000;  // per source; further hits are counted only
  io::ReadOptions read;                    // scan_job's input limits (expansion, archive members)
  // Threads; 0: one per core. With 2 or more, one of them reads (and decompresses) and
  // scans too when the others fall behind; with 1, everything runs on the calling thread.
  // The result is the same for every value: see "Threads" in scan_internal.h.
  unsigned threads = 0;
  // Bytes of lines per chunk, the unit of parallel work. Small values (tests) cross chunk
  // boundaries often; below 64 KiB the bytes are copied into chunks instead of read there.
  // 2 MiB: each chunk's per-rank work (series parts, facts) is spread over more lines than
  // with 1 MiB (3-10% faster on a 64-rank log), and peak RSS stays near 60 MiB.
  size_t chunk_bytes = 2 << 20;
  // After this many lines a thread has read, the lines of a progress shape that no pattern
  // can match (match::Database::may_match_between_numbers) are no longer matched: the
  // same events, a fifth fewer instructions on a long run. UINT64_MAX: every line matched
  // (tests compare the two).
  uint64_t skip_matching_after = 50000;
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
  metrics::SeriesSet series;               // numbers from progress lines and metric captures
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

// Sources that grow while they are scanned (`firstfault watch`, `firstfault run`): each
// source's bytes are fed as they arrive, split anywhere, and go through the same framing,
// cleaning, matching, joining and series as scan_job, on the calling thread; nothing is
// read twice. A source's events come out in line order as soon as nothing open on its
// streams (a traceback being joined, a launcher summary, a "raised:" wrapper) can still
// change them, or at settle() / close(). A line still being written (no newline yet)
// waits for its end. job() is the job as far as it has been read: every source's bytes
// and lines so far, the series, the last time seen.
//
//   scan::LiveScan live(engine);
//   uint32_t s = live.open("train.log");
//   live.feed(s, new_bytes);           // again and again
//   live.take_events(events);          // what came out
//   live.close(s, Status::Ok());
//
// Thread-safety: one thread at a time. Memory: as scan_job's (events capped per pattern
// and source, series bounded), plus the lines of one source's open chunk.
class LiveScan {
 public:
  explicit LiveScan(const Engine& engine, const ScanOptions& options = {});
  ~LiveScan();
  LiveScan(const LiveScan&) = delete;
  LiveScan& operator=(const LiveScan&) = delete;

  // A new source, known by `name` (its index in job().sources and in its events).
  uint32_t open(const std::string& name);
  // The source's next bytes.
  void feed(uint32_t source, std::string_view bytes);
  // The source was cut (truncated or rotated): a line begun before the cut ends there.
  void break_line(uint32_t source);
  // The source went quiet: what is open on its streams is closed, as at its end (a
  // traceback that is the last thing a crashed rank wrote), and its events come out.
  // Later bytes continue the source (its line numbers go on).
  void settle(uint32_t source);
  // The source ends (status: why it could not be read to its end, if so).
  void close(uint32_t source, const Status& status = Status::Ok());
  // An input that could not be read (in job().errors: the verdict is then never healthy).
  void add_error(Error e);
  bool is_open(uint32_t source) const;
  // Events of the source wait on something open (a traceback being joined).
  bool holds_open(uint32_t source) const;
  // Appends the events that came out since the last call (in line order per source) and
  // returns how many.
  size_t take_events(std::vector<record::Event>& out);
  // The job as read so far (bytes and lines of open sources up to date).
  const JobStats& job();
  // Lines and bytes read so far over all sources.
  uint64_t lines() const;
  uint64_t bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ff::scan
