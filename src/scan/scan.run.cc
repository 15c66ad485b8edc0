// scan.run.cc — the two ways to run a job: Inline (one thread: each chunk through phases
// A and B at once) and Pipeline (a reading thread, scanning threads, phase B in chunk
// order by whichever thread finishes the next chunk); scan_job, scan_feed and scan_text.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "scan/scan_internal.h"

namespace ff::scan {

using namespace detail;  // NOLINT(google-build-using-namespace): the module's own internals

// ---------------------------------------------------------------------------------------
// The two ways to run: inline (one thread) and the pipeline.

namespace {

class Inline {
 public:
  Inline(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt)
      : worker_(engine, opt, job.series.grids(engine.metric_aliases().size())), merger_(engine, sink, job, opt) {}
  void emit(std::unique_ptr<Chunk> c) {
    worker_.run(*c);
    merger_.process(*c);
    c->release_mapping();
    spare_ = std::move(c);
  }
  std::unique_ptr<Chunk> fresh() {
    if (spare_) return std::move(spare_);
    return std::make_unique<Chunk>();
  }

 private:
  LineWorker worker_;
  Merger merger_;
  std::unique_ptr<Chunk> spare_;
};

class Pipeline {
 public:
  Pipeline(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt, unsigned threads)
      : engine_(engine),
        opt_(opt),
        merger_(engine, sink, job, opt),
        grids_(job.series.grids(engine.metric_aliases().size())),
        max_in_flight_(2 * threads + 2) {}

  // Reader side. While too many chunks are in flight (memory stays bounded), the reader
  // does a queued chunk's work itself rather than wait: on a machine with as many
  // scanning threads as cores, the reader (idle most of the time with mmap) then takes
  // its share instead of competing with the scanning threads for a core.
  void submit(std::unique_ptr<Chunk> c) {
    std::unique_lock<std::mutex> lk(mu_);
    while (in_flight_ >= max_in_flight_) {
      if (queue_.empty()) {
        space_.wait(lk);
        continue;
      }
      if (!reader_worker_) reader_worker_ = std::make_unique<LineWorker>(engine_, opt_, grids_);
      run_one(*reader_worker_, lk);
    }
    ++in_flight_;
    queue_.push_back(std::move(c));
    work_.notify_one();
  }
  std::unique_ptr<Chunk> fresh() {
    std::lock_guard<std::mutex> lk(mu_);
    if (spares_.empty()) return std::make_unique<Chunk>();
    auto c = std::move(spares_.back());
    spares_.pop_back();
    return c;
  }
  void close() {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
    work_.notify_all();
  }

  // A scanning thread: phase A on whatever chunk comes next, then phase B on every chunk
  // whose turn it is (one thread at a time).
  void work() {
    LineWorker worker(engine_, opt_, grids_);
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      work_.wait(lk, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;
      run_one(worker, lk);
    }
  }

 private:
  // Phase A on the next queued chunk, then phase B on every chunk whose turn it is
  // (unless another thread is merging). Called with lk held and queue_ not empty.
  void run_one(LineWorker& worker, std::unique_lock<std::mutex>& lk) {
    {
      std::unique_ptr<Chunk> c = std::move(queue_.front());
      queue_.pop_front();
      lk.unlock();
      worker.run(*c);
      lk.lock();
      uint64_t seq = c->seq;
      done_.emplace(seq, std::move(c));
      if (merging_) return;
      merging_ = true;
      for (auto it = done_.find(next_merge_); it != done_.end(); it = done_.find(next_merge_)) {
        std::unique_ptr<Chunk> m = std::move(it->second);
        done_.erase(it);
        ++next_merge_;
        lk.unlock();
        merger_.process(*m);
        m->release_mapping();
        lk.lock();
        spares_.push_back(std::move(m));
        --in_flight_;
        space_.notify_one();
      }
      merging_ = false;
    }
  }

  const Engine& engine_;
  const ScanOptions& opt_;
  Merger merger_;
  const metrics::StepGrids* grids_;
  const size_t max_in_flight_;
  std::mutex mu_;
  std::condition_variable work_, space_;
  std::deque<std::unique_ptr<Chunk>> queue_;
  std::map<uint64_t, std::unique_ptr<Chunk>> done_;
  std::vector<std::unique_ptr<Chunk>> spares_;
  uint64_t next_merge_ = 0;
  size_t in_flight_ = 0;
  bool merging_ = false;
  bool closed_ = false;
  std::unique_ptr<LineWorker> reader_worker_;  // the reader's, made when it first helps
};

// Threads for a job: as asked; by default one per core, but one for a small job (a
// pasted snippet: starting threads would cost more than they save).
unsigned threads_for(const std::vector<std::string>& inputs, const ScanOptions& options) {
  if (options.threads != 0) return options.threads;
  unsigned t = std::max(1u, std::thread::hardware_concurrency());
  if (t <= 1) return 1;
  uint64_t total = 0;
  for (const auto& in : inputs) {
    struct stat st {};
    if (in == "-" || ::stat(in.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return t;  // unknown size
    // A small compressed file can hold a big log: decompress in a thread of its own.
    for (const char* ext : {".gz", ".tgz", ".zst", ".xz", ".bz2", ".tar"}) {
      if (ends_with(in, ext)) return t;
    }
    total += static_cast<uint64_t>(st.st_size);
  }
  return total < (4u << 20) ? 1 : t;
}

}  // namespace

namespace {

// One job over whatever `read` hands the chunker (named inputs, or a feed of streams).
JobStats scan_with(const Engine& engine, unsigned threads, EventSink& sink, const ScanOptions& options,
                   const std::function<io::InputReport(io::ByteSink&, const io::ReadOptions&)>& read) {
  JobStats job;
  io::ReadOptions ro = options.read;
  if (options.chunk_bytes < ro.chunk_size) ro.chunk_size = std::max<size_t>(options.chunk_bytes, 1);
  io::InputReport rep;
  uint64_t left_out = 0;
  if (threads <= 1) {
    Inline run(engine, sink, job, options);
    Chunker chunker(
        engine, options, [&](std::unique_ptr<Chunk> c) { run.emit(std::move(c)); }, [&] { return run.fresh(); });
    rep = read(chunker, ro);
    left_out = chunker.left_out();
  } else {
    Pipeline pipe(engine, sink, job, options, threads);
    // Ctrl-C and SIGTERM go to the reading thread only (base/interrupt.h), so a read()
    // blocked on a pipe that never ends returns at once: the other threads block them.
    sigset_t stop_signals, before;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
    std::thread reader([&] {
      pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
      Chunker chunker(
          engine, options, [&](std::unique_ptr<Chunk> c) { pipe.submit(std::move(c)); }, [&] { return pipe.fresh(); });
      rep = read(chunker, ro);
      left_out = chunker.left_out();
      pipe.close();
    });
    // `threads` in all: the reader (which scans too, when the scanning threads fall
    // behind), this thread, and threads - 2 more.
    std::vector<std::thread> workers;
    for (unsigned i = 2; i < threads; ++i) workers.emplace_back([&] { pipe.work(); });
    pipe.work();
    for (auto& w : workers) w.join();
    reader.join();
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  for (auto& e : rep.errors) job.errors.push_back(std::move(e));
  for (auto& n : rep.notes) job.notes.push_back(std::move(n));
  if (!options.only_host.empty() || !options.only_unit.empty()) {
    std::string which = !options.only_host.empty() ? "host " + options.only_host : "";
    if (!options.only_unit.empty()) which += (which.empty() ? "unit " : ", unit ") + options.only_unit;
    job.notes.push_back(
        fmt::format("{} line{} of other hosts or units left out (only {})", left_out, left_out == 1 ? "" : "s", which));
  }
  return job;
}

}  // namespace

JobStats scan_job(const Engine& engine, const std::vector<std::string>& inputs, EventSink& sink,
                  const ScanOptions& options) {
  return scan_with(
      engine, threads_for(inputs, options), sink, options,
      [&](io::ByteSink& chunker, const io::ReadOptions& ro) { return io::read_inputs(inputs, chunker, ro); });
}

JobStats scan_feed(const Engine& engine, io::StreamFeed& feed, EventSink& sink, const ScanOptions& options) {
  // The size is unknown until the end: as asked, else one per core.
  const unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  return scan_with(engine, threads, sink, options, [&](io::ByteSink& chunker, const io::ReadOptions& ro) {
    return io::read_streams(feed, chunker, ro);
  });
}

JobStats scan_text(const Engine& engine, std::string_view name, std::string_view text, EventSink& sink,
                   const ScanOptions& options) {
  JobStats job;
  Inline run(engine, sink, job, options);
  Chunker chunker(
      engine, options, [&](std::unique_ptr<Chunk> c) { run.emit(std::move(c)); }, [&] { return run.fresh(); });
  io::SourceInfo info{std::string(name), text.size(), "plain"};
  chunker.begin(info);
  // Pieces of at most chunk_bytes, copied into chunks (the text is not io's to read).
  for (size_t off = 0; off < text.size(); off += options.chunk_bytes) {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
      chunker.end(info, Status(make_error(ErrorCode::kInternal, "cancelled")));
      return job;
    }
    chunker.data(text.substr(off, std::max<size_t>(options.chunk_bytes, 1)));
    chunker.cut();
  }
  chunker.end(info, Status::Ok());
  return job;
}

}  // namespace ff::scan
