// scan.live.cc — LiveScan: sources that grow (watch, run). Each source has its own
// Chunker and Merger, all share one LineWorker and the job, on the calling thread; the
// events nothing open can change are handed over after every piece.
#include <algorithm>
#include <iterator>

#include "scan/scan_internal.h"

namespace ff::scan {

using namespace detail;  // NOLINT(google-build-using-namespace): the module's own internals

// ---------------------------------------------------------------------------------------
// Live sources: each has its own Chunker (framing) and Merger (phase B state: tracebacks,
// summary, caps), all share one LineWorker (phase A) and the job; everything runs on the
// calling thread, a chunk per piece fed.

struct LiveScan::Impl {
  class Collect : public EventSink {
   public:
    void event(const record::Event& e) override { events.push_back(e); }
    std::vector<record::Event> events;
  };
  struct Source {
    std::unique_ptr<Merger> merger;
    std::unique_ptr<Chunker> chunker;
    io::SourceInfo info;
    bool open = true;
    bool fed = false;
    char last = '\n';  // the last byte fed
  };
  Impl(const Engine& e, const ScanOptions& o)
      : engine(e), options(o), worker(e, options, job.series.grids(e.metric_aliases().size())) {}

  std::unique_ptr<Chunk> fresh() {
    if (spare) return std::move(spare);
    return std::make_unique<Chunk>();
  }

  const Engine& engine;
  ScanOptions options;
  JobStats job;
  Collect sink;
  LineWorker worker;
  std::vector<std::unique_ptr<Source>> sources;
  std::unique_ptr<Chunk> spare;
  uint64_t closed_lines = 0, closed_bytes = 0;
};

// Pieces fed are cut to this size: each source's chunk keeps the capacity of its largest
// piece, so 64 sources hold at most a few MiB between them.
static constexpr size_t kLivePiece = 256 << 10;

LiveScan::LiveScan(const Engine& engine, const ScanOptions& options) : impl_(std::make_unique<Impl>(engine, options)) {}

LiveScan::~LiveScan() = default;

uint32_t LiveScan::open(const std::string& name) {
  Impl& m = *impl_;
  auto src = std::make_unique<Impl::Source>();
  Impl::Source* raw = src.get();
  const uint32_t index = static_cast<uint32_t>(m.job.sources.size());
  raw->merger = std::make_unique<Merger>(m.engine, m.sink, m.job, m.options);
  raw->chunker = std::make_unique<Chunker>(
      m.engine, m.options,
      [&m, raw](std::unique_ptr<Chunk> c) {
        m.worker.run(*c);
        raw->merger->process(*c);
        c->release_mapping();
        m.spare = std::move(c);
      },
      [&m] { return m.fresh(); });
  raw->chunker->number_from(index);
  raw->info = io::SourceInfo{name, 0, "plain"};
  m.sources.push_back(std::move(src));
  raw->chunker->begin(raw->info);
  return index;
}

void LiveScan::feed(uint32_t source, std::string_view bytes) {
  Impl::Source& s = *impl_->sources.at(source);
  if (!s.open || bytes.empty()) return;
  for (size_t off = 0; off < bytes.size(); off += kLivePiece) {
    s.chunker->data(bytes.substr(off, kLivePiece));
    s.chunker->sync();
    s.merger->flush_settled();
  }
  s.fed = true;
  s.last = bytes.back();
}

void LiveScan::break_line(uint32_t source) {
  Impl::Source& s = *impl_->sources.at(source);
  if (s.open && s.fed && s.last != '\n' && s.last != '\r') feed(source, "\n");
}

void LiveScan::settle(uint32_t source) {
  Impl::Source& s = *impl_->sources.at(source);
  if (!s.open) return;
  s.chunker->sync();
  s.merger->settle();
}

void LiveScan::close(uint32_t source, const Status& status) {
  Impl& m = *impl_;
  Impl::Source& s = *m.sources.at(source);
  if (!s.open) return;
  // Merger::end adds the source's lines and bytes to the job's: from the closed ones'.
  m.job.lines = m.closed_lines;
  m.job.bytes = m.closed_bytes;
  s.chunker->end(s.info, status);
  m.closed_lines = m.job.lines;
  m.closed_bytes = m.job.bytes;
  s.open = false;
}

void LiveScan::add_error(Error e) { impl_->job.errors.push_back(std::move(e)); }

bool LiveScan::is_open(uint32_t source) const { return impl_->sources.at(source)->open; }

bool LiveScan::holds_open(uint32_t source) const {
  const Impl::Source& s = *impl_->sources.at(source);
  return s.open && s.merger->holds_open();
}

size_t LiveScan::take_events(std::vector<record::Event>& out) {
  std::vector<record::Event>& ev = impl_->sink.events;
  const size_t n = ev.size();
  if (n == 0) return 0;
  // In (source, line) order, as scan_job gives them (an earlier source may have been
  // waiting on an open traceback while a later one went on): the new ones sorted, then
  // merged after the old ones (linear; equal keys keep their order).
  const auto before = [](const record::Event& a, const record::Event& b) {
    return a.source != b.source ? a.source < b.source : a.line < b.line;
  };
  std::stable_sort(ev.begin(), ev.end(), before);
  const size_t old = out.size();
  out.insert(out.end(), std::make_move_iterator(ev.begin()), std::make_move_iterator(ev.end()));
  ev.clear();
  if (old > 0 && before(out[old], out[old - 1]))
    std::inplace_merge(out.begin(), out.begin() + static_cast<long>(old), out.end(), before);
  return n;
}

const JobStats& LiveScan::job() {
  Impl& m = *impl_;
  m.job.lines = m.closed_lines;
  m.job.bytes = m.closed_bytes;
  for (size_t i = 0; i < m.sources.size(); ++i) {
    Impl::Source& s = *m.sources[i];
    if (!s.open) continue;
    s.merger->live_stats(s.chunker->bytes(), s.chunker->lines());
    m.job.lines += s.chunker->lines();
    m.job.bytes += s.chunker->bytes();
  }
  return m.job;
}

uint64_t LiveScan::lines() const {
  uint64_t n = impl_->closed_lines;
  for (const auto& s : impl_->sources)
    if (s->open) n += s->chunker->lines();
  return n;
}

uint64_t LiveScan::bytes() const {
  uint64_t n = impl_->closed_bytes;
  for (const auto& s : impl_->sources)
    if (s->open) n += s->chunker->bytes();
  return n;
}

}  // namespace ff::scan
