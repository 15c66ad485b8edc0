// scan.test.cc — the scan's seams on real runs (tests/data/scan, from the corpus): the
// Chunker frames a source into chunks as the framer frames it whole, whatever the pieces
// io hands it; the Merger gives the same events for any chunk size (tracebacks, the
// launcher's table and "raised:" wrappers cut across chunks); the pipeline gives the same
// events as one thread; and a line without its own time inherits its stream's last time
// in phase A and in phase B alike.
#include "scan/scan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "scan/scan_internal.h"

namespace ff::scan {
namespace {

const Engine& engine() {
  static const kb::KnowledgeBase* kb = new kb::KnowledgeBase(kb::load(kb::embedded_files()).kb);
  static const std::shared_ptr<const Engine> e = [] {
    auto r = Engine::create(*kb);
    EXPECT_TRUE(r.ok());
    return r.value();
  }();
  return *e;
}

const std::vector<std::string> kRuns = {"01_rank_exception__rankprefix.log", "06_hang__tee.log",
                                        "08_dataloader_worker_exception.log"};

std::string path_of(const std::string& name) { return std::string(FF_SOURCE_DIR) + "/tests/data/scan/" + name; }

std::string read_run(const std::string& name) {
  std::ifstream in(path_of(name), std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

// Every field of an event, as one text to compare.
std::string describe(const record::Event& e) {
  std::ostringstream o;
  o << record::event_kind_name(e.kind) << " src=" << e.source << " line=" << e.line << " off=" << e.offset
    << " seq=" << e.seq << " rank=" << e.rank << " lrank=" << e.local_rank << " pid=" << e.pid << " gpu=" << e.gpu
    << " node=" << e.node << " t=" << e.time_us << "/" << static_cast<int>(e.clock) << "/" << e.time_subsecond
    << " level=" << static_cast<int>(e.level) << " ttext=" << e.time_text << " text=" << e.text
    << " entry=" << e.entry_id << " pattern=" << e.pattern_id << " role=" << static_cast<int>(e.role)
    << " prio=" << e.priority << " mlen=" << e.match_len << " tb=" << e.traceback_first << "-" << e.traceback_last
    << " exc=" << e.exception_line << e.final_exception << e.chained_cause << " type=" << e.exc_type
    << " frame=" << e.exc_frame << " dropped=" << e.frames_dropped << " summary=" << e.in_launcher_summary << "/"
    << e.summary_rank << "/" << e.exitcode << "/" << e.summary_root_cause;
  for (const auto& [k, v] : e.captures) o << " cap:" << k << "=" << v;
  for (const auto& x : e.exc_chain) o << " chain:" << x;
  for (const auto& f : e.frames) o << " at:" << f.file << ":" << f.line << ":" << f.function;
  for (const auto& [n, t] : e.context_before) o << " before:" << n << ":" << t;
  return o.str();
}

// A job's events and statistics, as text.
struct Outcome {
  std::vector<std::string> events;
  std::string stats;
};

Outcome outcome_of(const CollectSink& sink, const JobStats& job) {
  Outcome out;
  for (const auto& e : sink.events) out.events.push_back(describe(e));
  std::ostringstream o;
  o << "lines=" << job.lines << " bytes=" << job.bytes << " last=" << job.last_time_us << "\n";
  for (const auto& s : job.sources) {
    o << s.name << " " << s.encoding << " " << s.bytes << " " << s.lines << " events=" << s.events
      << " dropped=" << s.events_dropped << " ok=" << s.ok << s.error << " cut=" << s.lines_cut
      << " with_rank=" << s.lines_with_rank << " with_time=" << s.lines_with_time << " ranks=";
    for (int r : s.ranks) o << r << ",";
    for (const auto& [r, n] : s.rank_node) o << " node:" << r << "=" << n;
    for (const auto& [k, r] : s.pid_rank) o << " pid:" << k.first << ":" << k.second << "=" << r;
    o << "\n";
  }
  for (const auto& [key, series] : job.series.all()) {
    o << "series " << key.first << "/" << key.second << " n=" << series.count << " min=" << series.min
      << " max=" << series.max << " points=" << series.points.size() << "\n";
  }
  for (const auto& n : job.notes) o << "note " << n << "\n";
  out.stats = o.str();
  return out;
}

Outcome scan_text_with(const std::string& name, const std::string& text, size_t chunk_bytes) {
  ScanOptions o;
  o.chunk_bytes = chunk_bytes;
  CollectSink sink;
  JobStats job = scan_text(engine(), name, text, sink, o);
  return outcome_of(sink, job);
}

void expect_same(const Outcome& want, const Outcome& got, const std::string& what) {
  EXPECT_EQ(want.stats, got.stats) << what;
  ASSERT_EQ(want.events.size(), got.events.size()) << what;
  for (size_t i = 0; i < want.events.size(); ++i) EXPECT_EQ(want.events[i], got.events[i]) << what << ", event " << i;
}

TEST(ScanSeams, TheChunkerFramesASourceAsTheFramerFramesItWhole) {
  for (const std::string& name : kRuns) {
    const std::string text = read_run(name);
    std::vector<record::RawLine> whole;
    std::vector<std::string> whole_bytes;
    record::LineFramer framer;
    auto keep = [&](const record::RawLine& l) {
      whole.push_back(l);
      whole_bytes.emplace_back(l.bytes);
    };
    framer.feed(text, keep);
    framer.finish(keep);

    ScanOptions opt;
    opt.chunk_bytes = 700;  // below the zero-copy size: chunks are cut as pieces come
    std::vector<std::unique_ptr<detail::Chunk>> chunks;
    detail::Chunker chunker(
        engine(), opt, [&](std::unique_ptr<detail::Chunk> c) { chunks.push_back(std::move(c)); },
        [] { return std::make_unique<detail::Chunk>(); });
    const io::SourceInfo info{name, text.size(), "plain"};
    chunker.begin(info);
    std::mt19937 rng(7);
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min<size_t>(text.size() - at, 1 + rng() % 300);
      chunker.data(std::string_view(text).substr(at, n));
      at += n;
    }
    chunker.end(info, Status::Ok());

    ASSERT_GE(chunks.size(), 3u) << name;
    EXPECT_EQ(chunks.front()->kind, detail::Chunk::Kind::kBegin);
    EXPECT_EQ(chunks.back()->kind, detail::Chunk::Kind::kEnd);
    EXPECT_EQ(chunks.back()->total_lines, whole.size());
    EXPECT_EQ(chunks.back()->source_bytes, text.size());
    size_t next = 0;
    for (size_t k = 0; k < chunks.size(); ++k) {
      const detail::Chunk& c = *chunks[k];
      EXPECT_EQ(c.seq, k) << name << ": chunks are numbered in the order phase B takes them";
      if (c.kind != detail::Chunk::Kind::kLines) continue;
      EXPECT_FALSE(c.lines.empty());
      EXPECT_EQ(c.first_line, next + 1) << name << ", chunk " << k;
      for (size_t i = 0; i < c.lines.size(); ++i, ++next) {
        ASSERT_LT(next, whole.size());
        EXPECT_EQ(c.line(i), whole_bytes[next]) << name << ", line " << next + 1;
        EXPECT_EQ(c.lines[i].offset, whole[next].offset) << name << ", line " << next + 1;
      }
    }
    EXPECT_EQ(next, whole.size()) << name;
  }
}

TEST(ScanSeams, AnyChunkSizeGivesTheSameEvents) {
  // Chunks of a few lines cut tracebacks, the launcher's table and the lines before each
  // event across chunks: phase B carries them over.
  for (const std::string& name : kRuns) {
    const std::string text = read_run(name);
    const Outcome whole = scan_text_with(name, text, 2 << 20);
    ASSERT_FALSE(whole.events.empty()) << name;
    for (size_t chunk : {size_t{97}, size_t{1000}, size_t{4096}, size_t{65536}})
      expect_same(whole, scan_text_with(name, text, chunk), name + " in chunks of " + std::to_string(chunk));
  }
}

TEST(ScanSeams, ThePipelineGivesWhatOneThreadGives) {
  std::vector<std::string> inputs;
  for (const std::string& name : kRuns) inputs.push_back(path_of(name));
  auto run = [&](unsigned threads, size_t chunk) {
    ScanOptions o;
    o.threads = threads;
    o.chunk_bytes = chunk;
    CollectSink sink;
    JobStats job = scan_job(engine(), inputs, sink, o);
    EXPECT_TRUE(job.errors.empty());
    return outcome_of(sink, job);
  };
  const Outcome one = run(1, 2 << 20);
  ASSERT_FALSE(one.events.empty());
  expect_same(one, run(1, 2048), "one thread, small chunks");
  expect_same(one, run(2, 2048), "two threads");
  expect_same(one, run(4, 1024), "four threads");
}

// Lines of a progress shape that no pattern can match are left out of the matcher (after
// ScanOptions::skip_matching_after lines): the events and statistics are those of matching
// every line, on real runs whose progress lines carry nan, inf and loss-scale events.
TEST(ScanSeams, LinesLeftUnmatchedGiveTheSameEvents) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(std::string(FF_SOURCE_DIR) + "/tests/data"))
    if (e.path().extension() == ".log") names.push_back(e.path().string());
  for (const std::string& name : kRuns) names.push_back(path_of(name));
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 8u);
  // And a run whose progress-shaped lines are also failures' symptoms: DeepSpeed's loss
  // scaler lines (its format string, deepspeed/runtime/fp16/loss_scaler.py) are read as the
  // new loss scale and are the overflow entry's hits.
  std::string ds;
  for (int step = 1, scale = 65536; step <= 400; ++step) {
    ds += "[2024-03-01 10:12:41,118] [INFO] [logging.py:96:log_dist] [Rank 0] step=" + std::to_string(step) +
          ", skipped=" + std::to_string(step / 10) + ", lr=[0.0001], mom=[(0.9, 0.999)]\n";
    if (step % 10 == 0 && scale > 1) {
      ds += "[2024-03-01 10:12:41,118] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 "
            "Skipping step. Attempted loss scale: " + std::to_string(scale) + ", reducing to " +
            std::to_string(scale / 2) + "\n";
      scale /= 2;
    }
  }
  ds += "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n";
  names.push_back("");  // the run above
  for (const std::string& name : names) {
    std::ifstream in(name, std::ios::binary);
    std::ostringstream text;
    if (name.empty())
      text << ds;
    else
      text << in.rdbuf();
    // Small chunks are matched line by line, large ones in one joined pass.
    for (size_t chunk : {size_t{4096}, size_t{2} << 20}) {
      auto run = [&](uint64_t after) {
        ScanOptions o;
        o.chunk_bytes = chunk;
        o.skip_matching_after = after;
        CollectSink sink;
        JobStats job = scan_text(engine(), name, text.str(), sink, o);
        return outcome_of(sink, job);
      };
      expect_same(run(UINT64_MAX), run(0), name + ": shapes left unmatched from the first line");
    }
  }
}

TEST(ScanSeams, ALineWithoutItsOwnTimeInheritsItsStreamsLastTime) {
  // Rank 1's traceback has no stamps: its events take rank 1's last time (not rank 0's
  // later one), marked not sub-second; in one chunk (phase A) and a line per chunk
  // (phase B, from the stream's time before the chunk) alike.
  const std::string text =
      "[rank1]:2026-11-30 10:20:42,398 INFO train: step 1\n"
      "[rank0]:2026-11-30 10:20:43,000 INFO train: step 1\n"
      "[rank1]:Traceback (most recent call last):\n"
      "[rank1]:  File \"train.py\", line 3, in <module>\n"
      "[rank1]:RuntimeError: CUDA error: an illegal memory access was encountered\n";
  const Outcome whole = scan_text_with("t.log", text, 2 << 20);
  expect_same(whole, scan_text_with("t.log", text, 40), "a line per chunk");
  CollectSink sink;
  scan_text(engine(), "t.log", text, sink);
  ASSERT_FALSE(sink.events.empty());
  record::Clock clock;
  int64_t want = 0;
  bool sub;
  ASSERT_TRUE(record::parse_time("2026-11-30 10:20:42,398", "iso", want, clock, sub));
  for (const auto& e : sink.events) {
    EXPECT_EQ(e.rank, 1) << describe(e);
    EXPECT_EQ(e.time_us, want) << describe(e);
    EXPECT_FALSE(e.time_subsecond) << describe(e);
    EXPECT_TRUE(e.time_text.empty()) << describe(e);
  }
}

}  // namespace
}  // namespace ff::scan
