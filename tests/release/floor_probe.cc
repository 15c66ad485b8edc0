// The glibc floor's probe (tests/release/floor-shim.sh): a small program linked the way the
// portable binary is (-static-libstdc++ -static-libgcc, src/app/glibc_floor.cc and the wraps
// of glibc_floor.def), exercising what the floor replaces: the constructors that
// __libc_start_main's wrapper runs (once), C++ exceptions through the static unwinder
// (_dl_find_object), threads, a steady-clock wait (pthread_cond_clockwait), stat, libm's
// exp/log/pow, random bytes (arc4random) and a signal's abbreviation (sigabbrev_np).
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace {
int constructed = 0;
struct Counted {
  Counted() { ++constructed; }
} counted;
const std::string kBuilt = "built";  // a constructor in the init array

[[gnu::noinline]] void thrower(int i) {
  if (i >= 0) throw std::runtime_error("thrown " + std::to_string(i));
}

int fail(const char* what) {
  std::printf("floor_probe: FAILED: %s\n", what);
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (constructed != 1 || kBuilt != "built") return fail("the constructors ran other than once");
  std::string caught;
  try {
    thrower(argc);
  } catch (const std::exception& e) { caught = e.what(); }
  if (caught != "thrown " + std::to_string(argc)) return fail("an exception was not caught");
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::string in_thread;
  std::thread t([&] {
    try {
      thrower(7);
    } catch (const std::runtime_error& e) { in_thread = e.what(); }
    std::lock_guard<std::mutex> g(m);
    done = true;
    cv.notify_one();
  });
  {
    std::unique_lock<std::mutex> l(m);
    if (!cv.wait_for(l, std::chrono::seconds(20), [&] { return done; })) return fail("the thread's wait");
  }
  t.join();
  if (in_thread != "thrown 7") return fail("an exception in a thread");
  {
    std::unique_lock<std::mutex> l(m);
    const auto start = std::chrono::steady_clock::now();
    cv.wait_for(l, std::chrono::milliseconds(50));  // times out: the clockwait shim's deadline
    if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(40)) return fail("a timed wait");
  }
  auto shared = std::make_shared<int>(3);
  auto copy = shared;
  if (shared.use_count() != 2) return fail("shared_ptr counts");
  struct stat st;
  if (stat(argv[0], &st) != 0 || st.st_size <= 0) return fail("stat");
  if (lstat(argv[0], &st) != 0 || st.st_size <= 0) return fail("lstat");
  const int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
  const bool fstat_ok = fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0;
  if (fd >= 0) close(fd);
  if (!fstat_ok) return fail("fstat");
  const double x = std::exp(1.0) * std::log(std::exp(2.0)) + std::pow(2.0, 10.0);
  if (std::fabs(x - (2.0 * 2.718281828459045 + 1024.0)) > 1e-9) return fail("exp/log/pow");
  uint32_t a = arc4random(), b = arc4random();
  unsigned char buf[64] = {0};
  arc4random_buf(buf, sizeof buf);
  int nonzero = 0;
  for (unsigned char c : buf) nonzero += c != 0;
  if (a == b && nonzero < 8) return fail("arc4random");
  const char* segv = sigabbrev_np(11);
  if (segv == nullptr || strcmp(segv, "SEGV") != 0 || sigabbrev_np(9999) != nullptr) return fail("sigabbrev_np");
  std::printf(
      "floor_probe: constructors once, exceptions (main and a thread), waits, stat, libm, random, signals: ok\n");
  return 0;
}
