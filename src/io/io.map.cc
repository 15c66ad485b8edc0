// io.map.cc — large quiet files delivered as windows of a read-only mapping, and the
// SIGBUS guard (mapguard) that keeps a window readable when its file is truncated.
#include <sys/mman.h>

#include <atomic>
#include <csignal>
#include <mutex>

#include "io/io_internal.h"

namespace ff::io::detail {

// ---- Mapped windows that survive truncation. A window stays mapped while the scan's
// chunks in flight point into it, long after it was mapped; a file truncated meanwhile
// (logrotate's copytruncate, a job that restarts and reopens its log with O_TRUNC) takes
// the pages past its new end away from every mapping, and touching one raises SIGBUS,
// which killed the run. Checking the size first cannot close that gap, and every reader of
// the window (framer, cleaner, matcher, in several threads) cannot be wrapped in a
// sigsetjmp. So a process-wide SIGBUS handler looks the faulting address up in a table of
// live windows: for one of ours it maps zero-filled pages over the rest of the window
// (MAP_FIXED replaces the file pages in place) and marks the window, and the faulting read
// resumes on zeros; any other SIGBUS goes to the handler that was there before (or to the
// default action: the crash it always was). The table is a fixed array of lock-free
// slots, since a signal handler may neither lock nor allocate; mmap is a plain system call
// on Linux, safe in a handler though POSIX does not list it.
namespace mapguard {

struct Slot {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> begin{0};  // 0: no window (yet)
  std::atomic<uintptr_t> end{0};
  std::atomic<std::atomic<bool>*> shrank{nullptr};
};
// Live windows are bounded by the chunks in flight (about 60 MiB of 4 MiB windows); a
// window that finds no free slot is read with pread instead.
constexpr size_t kSlots = 256;
Slot g_slots[kSlots];
struct sigaction g_previous {};
uintptr_t g_page_mask = 0;
bool g_installed = false;
std::once_flag g_once;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (info->si_code > 0) {  // a fault (si_code <= 0: sent by kill() or raise())
    for (Slot& s : g_slots) {
      const uintptr_t b = s.begin.load(std::memory_order_acquire);
      const uintptr_t e = s.end.load(std::memory_order_acquire);
      if (b == 0 || addr < b || addr >= e) continue;
      const uintptr_t page = addr & g_page_mask;
      void* p =
          ::mmap(reinterpret_cast<void*>(page), e - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (p == MAP_FAILED) break;
      if (std::atomic<bool>* f = s.shrank.load(std::memory_order_acquire)) f->store(true, std::memory_order_release);
      errno = saved_errno;
      return;
    }
  }
  // Not ours: the previous disposition takes it, as if this handler were not there.
  errno = saved_errno;
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    ::signal(SIGBUS, SIG_DFL);  // a fault comes back at once and kills; a sent one is raised again
    if (info->si_code <= 0) ::raise(SIGBUS);
  }
}

void install() {
  std::call_once(g_once, [] {
    g_page_mask = ~(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
    struct sigaction act {};
    act.sa_sigaction = on_sigbus;
    act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&act.sa_mask);
    g_installed = ::sigaction(SIGBUS, &act, &g_previous) == 0;
  });
}

class GuardedWindow final : public MappedWindow {
 public:
  // Maps len bytes of fd at off, registered with the handler; null when there is no free
  // slot or the mapping fails (the caller reads the window instead).
  static std::shared_ptr<const GuardedWindow> map(int fd, uint64_t off, size_t len) {
    install();
    if (!g_installed) return nullptr;
    size_t slot = kSlots;
    for (size_t i = 0; i < kSlots && slot == kSlots; ++i) {
      bool expected = false;
      if (g_slots[i].used.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) slot = i;
    }
    if (slot == kSlots) return nullptr;
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, static_cast<off_t>(off));
    if (p == MAP_FAILED) {
      g_slots[slot].used.store(false, std::memory_order_release);
      return nullptr;
    }
    auto w = std::shared_ptr<GuardedWindow>(new GuardedWindow(static_cast<const char*>(p), len, slot));
    Slot& s = g_slots[slot];
    s.shrank.store(&w->shrank_, std::memory_order_release);
    s.end.store(reinterpret_cast<uintptr_t>(p) + len, std::memory_order_release);
    s.begin.store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);  // last: live from here
    return w;
  }
  ~GuardedWindow() override {
    Slot& s = g_slots[slot_];
    s.begin.store(0, std::memory_order_release);  // first: nobody reads the window any more
    s.end.store(0, std::memory_order_release);
    s.shrank.store(nullptr, std::memory_order_release);
    ::munmap(const_cast<char*>(data_), len_);  // the zero pages too: they replaced part of this range
    s.used.store(false, std::memory_order_release);
  }
  bool shrank() const override { return shrank_.load(std::memory_order_acquire); }
  std::string_view bytes() const { return {data_, len_}; }

 private:
  GuardedWindow(const char* data, size_t len, size_t slot) : data_(data), len_(len), slot_(slot) {}
  const char* data_;
  size_t len_;
  size_t slot_;
  std::atomic<bool> shrank_{false};
};

}  // namespace mapguard

// deliver() for a plain regular file, as windows of a read-only mapping (MAP_POPULATE:
// the pages are mapped here, in the reading thread, not faulted in one by one by the
// threads that parse them). A window that cannot be mapped is read with pread instead.
constexpr size_t kMapWindow = 4 << 20;  // a multiple of the page size

Outcome deliver_mapped(Context& c, const Mappable& m, const SourceInfo& info, Tally& tally) {
  c.begin_source(info, tally);
  uint64_t delivered = 0;
  Status status;
  for (uint64_t off = 0; off < m.size;) {
    const size_t window = static_cast<size_t>(std::min<uint64_t>(kMapWindow, m.size - off));
    size_t len = c.allowed(window);
    const bool over = len < window;
    if (len > 0) {
      // A file that got shorter since it was opened is not mapped past its end (touching
      // such a page would fault): that window is read instead, and the read says so.
      // (A file that shrinks after this is mapguard's to handle.)
      struct stat now {};
      const bool whole = ::fstat(m.fd, &now) == 0 && static_cast<uint64_t>(now.st_size) >= off + len;
      std::shared_ptr<const mapguard::GuardedWindow> w = whole ? mapguard::GuardedWindow::map(m.fd, off, len) : nullptr;
      if (w) {
        const std::string_view bytes = w->bytes();
        c.sink.data_mapped(bytes, std::move(w));
      } else {
        // Read the window instead, in chunk_size pieces.
        const size_t chunk = std::max<size_t>(c.options.chunk_size, 1);
        size_t done = 0;
        while (done < len && status.ok()) {
          char* buf = c.sink.data_buffer(c.buffer.size());
          if (buf == nullptr) buf = c.buffer.data();
          const size_t want = std::min({len - done, c.buffer.size(), chunk});
          const ssize_t r = ::pread(m.fd, buf, want, static_cast<off_t>(off + done));
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) {
            status =
                make_error(ErrorCode::kIo, r < 0 ? "read error: " + errno_message(errno) : std::string(kShrankMessage),
                           at(info.name));
            len = done;
            break;
          }
          c.sink.data(std::string_view(buf, static_cast<size_t>(r)));
          done += static_cast<size_t>(r);
        }
      }
    }
    c.count_delivered(len);
    delivered += len;
    off += len;
    if (!status.ok()) break;
    if (c.check_interrupt()) {
      status = c.interrupt_error(info.name, delivered);
      break;
    }
    if (over) {
      c.stopped = true;
      status = c.limit_error(info.name, delivered);
      break;
    }
  }
  return c.end_source(info, status, tally);
}
}  // namespace ff::io::detail
