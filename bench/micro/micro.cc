// Micro-benchmarks of the scan's hot path, on lines like bench/genlog.py's (a 64-rank
// torchrun job: step lines with six metrics, NCCL chatter). Throughput is in bytes of
// log per second. Results and the machine are in BENCHMARKS.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kb/kb.h"
#include "match/match.h"
#include "metrics/metrics.h"
#include "record/record.h"
#include "scan/scan.h"

namespace {

using namespace ff;

// About 1 MiB of genlog-style lines: 99% step lines, some NCCL INFO lines.
const std::string& sample_log() {
  static const std::string log = [] {
    std::mt19937 rng(1);
    std::string s;
    char buf[512];
    for (int i = 0; s.size() < (1u << 20); ++i) {
      int r = static_cast<int>(rng() % 64);
      if (i % 100 == 7) {
        std::snprintf(buf, sizeof buf, "[rank%d]:node-%03d:%d:%d [%d] NCCL INFO Channel 00/0 : %d[%d] -> %d[%d] via P2P/IPC\n",
                      r, r / 8, 10000 + r, 10007 + r, r % 8, r, r % 8, (r + 1) % 64, (r + 1) % 8);
      } else {
        std::snprintf(buf, sizeof buf,
                      "[rank%d]:2026-11-30 10:%02d:%02d,%03d INFO [rank%d] train: step %d | loss %.4f | lr %.3e | "
                      "grad_norm %.3f | loss_scale 65536 | %.1f ms/step | %d tokens/s\n",
                      r, (i / 6000) % 60, (i / 100) % 60, i % 1000, r, i / 64, 2.5 - i * 1e-5, 3e-4, 0.5 + (rng() % 700) / 1000.0,
                      830 + (rng() % 400) / 10.0, 15000 + static_cast<int>(rng() % 1000));
      }
      s += buf;
    }
    return s;
  }();
  return log;
}

std::vector<std::string_view> lines_of(const std::string& s) {
  std::vector<std::string_view> out;
  size_t p = 0;
  for (size_t n = s.find('\n'); n != std::string::npos; p = n + 1, n = s.find('\n', p)) out.emplace_back(s.data() + p, n - p);
  return out;
}

const kb::KnowledgeBase& the_kb() {
  static const kb::KnowledgeBase k = kb::load(kb::embedded_files()).kb;
  return k;
}

const scan::Engine& engine() {
  static std::shared_ptr<const scan::Engine> e = [] {
    scan::EngineOptions o;
    if (const char* x = std::getenv("XDG_CACHE_HOME")) o.cache_dir = std::string(x) + "/firstfault";
    else if (const char* h = std::getenv("HOME")) o.cache_dir = std::string(h) + "/.cache/firstfault";
    return scan::Engine::create(the_kb(), o).value();
  }();
  return *e;
}

// The prefix-peeled messages of the sample (what the matcher and the progress parser see).
const std::vector<std::string>& messages() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> out;
    record::Record rec;
    for (auto l : lines_of(sample_log())) {
      engine().prefixes().parse(l, rec);
      out.emplace_back(rec.message);
    }
    return out;
  }();
  return m;
}

void BM_LineFraming(benchmark::State& st) {
  const std::string& log = sample_log();
  const size_t piece = static_cast<size_t>(st.range(0));
  for (auto _ : st) {
    record::LineFramer f;
    uint64_t n = 0;
    auto cb = [&](const record::RawLine& l) { n += l.bytes.size(); };
    for (size_t off = 0; off < log.size(); off += piece) f.feed(std::string_view(log).substr(off, piece), cb);
    f.finish(cb);
    benchmark::DoNotOptimize(n);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * log.size()));
}
BENCHMARK(BM_LineFraming)->Arg(64 << 10)->Arg(1 << 20);

void BM_CleanLine(benchmark::State& st) {
  // 0: the no-copy view on clean lines; 1: the copying clean_line on the same lines;
  // 2: the view on lines with ANSI colours (cleaned into the buffer).
  const int mode = static_cast<int>(st.range(0));
  std::vector<std::string> lines;
  for (auto l : lines_of(sample_log())) lines.emplace_back(mode == 2 ? "\x1b[32m" + std::string(l) + "\x1b[0m" : std::string(l));
  std::string buf;
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size();
  for (auto _ : st) {
    for (const auto& l : lines) {
      if (mode == 1) {
        record::clean_line(l, buf);
        benchmark::DoNotOptimize(buf.data());
      } else {
        benchmark::DoNotOptimize(record::clean_line_view(l, buf).data());
      }
    }
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
}
BENCHMARK(BM_CleanLine)->Arg(0)->Arg(1)->Arg(2);

void BM_PrefixParse(benchmark::State& st) {
  // 0: hand-written matchers with the two-byte filter; 1: RE2 for every format (the reference).
  static auto fast = record::PrefixParser::create(the_kb().prefixes, record::PrefixParser::Matchers::kFast).value();
  static auto regex = record::PrefixParser::create(the_kb().prefixes, record::PrefixParser::Matchers::kRegexOnly).value();
  const record::PrefixParser& p = st.range(0) == 0 ? *fast : *regex;
  auto lines = lines_of(sample_log());
  record::Record rec;
  for (auto _ : st) {
    for (auto l : lines) {
      p.parse(l, rec);
      benchmark::DoNotOptimize(rec.rank);
    }
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * sample_log().size()));
}
BENCHMARK(BM_PrefixParse)->Arg(0)->Arg(1);

void BM_ProgressLine(benchmark::State& st) {
  // 0: the tokenizer (parse_progress_line); 1: ProgressParser, which reads lines of a shape it
  // has seen by their numbers only.
  const auto& a = engine().metric_aliases();
  const auto& msgs = messages();
  metrics::ProgressParser pp(a);
  metrics::ProgressLine out;
  size_t bytes = 0;
  for (const auto& m : msgs) bytes += m.size();
  for (auto _ : st) {
    for (const auto& m : msgs) {
      bool ok = st.range(0) == 0 ? metrics::parse_progress_line(m, a, out) : pp.parse(m, out);
      benchmark::DoNotOptimize(ok);
    }
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
}
BENCHMARK(BM_ProgressLine)->Arg(0)->Arg(1);

void BM_Series(benchmark::State& st) {
  // 0: SeriesSet::add per line; 1: SeriesBatch per 6,000 lines, appended (what the scan does).
  const auto& a = engine().metric_aliases();
  std::vector<std::pair<int, metrics::ProgressLine>> parsed;
  metrics::ProgressParser pp(a);
  record::Record rec;
  for (auto l : lines_of(sample_log())) {
    engine().prefixes().parse(l, rec);
    metrics::ProgressLine p;
    if (pp.parse(rec.message, p)) parsed.emplace_back(rec.rank, p);
  }
  for (auto _ : st) {
    metrics::SeriesSet set;
    metrics::SeriesBatch batch;
    uint64_t n = 0;
    for (const auto& [rank, p] : parsed) {
      if (st.range(0) == 0) {
        set.add(rank, p, 0, ++n, 0, "text");
      } else {
        batch.add(rank, p, 0, ++n, 0, 0);
        if (n % 6000 == 0) set.append(batch, [](uint32_t) { return std::string_view("text"); });
      }
    }
    if (st.range(0) == 1) set.append(batch, [](uint32_t) { return std::string_view("text"); });
    benchmark::DoNotOptimize(set.all().size());
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations() * parsed.size()));
}
BENCHMARK(BM_Series)->Arg(0)->Arg(1);

void BM_Match(benchmark::State& st) {
  // 0: one scan per message (what the scan does); 1: one scan of all the messages joined
  // by newlines (a whole chunk per call, the hits not yet mapped back to lines).
  const auto& msgs = messages();
  match::Scanner scanner(engine().db());
  std::vector<uint32_t> hits;
  std::string joined;
  for (const auto& m : msgs) joined += m + "\n";
  for (auto _ : st) {
    hits.clear();
    if (st.range(0) == 0) {
      for (const auto& m : msgs) scanner.scan(m, hits);
    } else {
      scanner.scan(joined, hits);
    }
    benchmark::DoNotOptimize(hits.size());
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * joined.size()));
}
BENCHMARK(BM_Match)->Arg(0)->Arg(1);

void BM_ScanText(benchmark::State& st) {
  // The whole per-source scan (frame, clean, parse, match, series, events) on one thread.
  const std::string& log = sample_log();
  for (auto _ : st) {
    scan::CollectSink sink;
    scan::ScanOptions o;
    auto job = scan::scan_text(engine(), "bench.log", log, sink, o);
    benchmark::DoNotOptimize(job.lines);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * log.size()));
}
BENCHMARK(BM_ScanText);

}  // namespace

BENCHMARK_MAIN();
