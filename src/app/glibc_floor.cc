// The glibc floor of the portable build (issue 35): linked into firstfault only when
// FF_PORTABLE, so that a binary linked on Debian 12 (glibc 2.36) asks for no symbol newer
// than GLIBC_2.28 (RHEL/Rocky 8, Debian 10, Ubuntu 20.04 and newer). tools/release-check
// reads the binary's symbol versions and fails on a newer one.
//
// Three kinds of symbol raise the floor; each is answered here:
//  - a function glibc versioned anew but kept at its first version (pthread_create@2.34
//    beside pthread_create@GLIBC_2.2.5, exp@2.29 beside exp@GLIBC_2.2.5): glibc_floor.def's
//    FF_OLD lines. The link wraps each (-Wl,--wrap=NAME, cmake/FFPortable.cmake) and
//    __wrap_NAME jumps to NAME at the first version, which every glibc since still exports
//    (on glibc 2.28 the pthread and dl functions live in libpthread.so.0 and libdl.so.2, so
//    the link keeps both NEEDED);
//  - a function that older glibc spelt otherwise (FF_SHIM lines): stat and its kin (2.33;
//    before, __xstat and its kin, which glibc keeps), pthread_cond_clockwait (2.30;
//    pthread_cond_timedwait on the realtime clock), __libc_start_main (2.34; see below);
//  - a symbol older glibc did not have, defined here and so bound in the static link
//    before libc.so.6 is looked at: _dl_find_object (2.35, the static libgcc unwinder's
//    way to find an address's unwind table), arc4random* (2.36, libarchive.a),
//    sigabbrev_np (2.32, app/watch.run.cc) and __libc_single_threaded (2.32, libstdc++.a).
#if defined(__x86_64__)
#define FF_GLIBC_BASE "GLIBC_2.2.5"
#define FF_STAT_VER 1  // _STAT_VER_LINUX of the __xstat family
#elif defined(__aarch64__)
#define FF_GLIBC_BASE "GLIBC_2.17"
#define FF_STAT_VER 0
#else
#error "glibc_floor.cc: the portable build knows x86-64 and aarch64"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// FF_OLD(name, version): __wrap_name, a jump to name@version with the arguments untouched
// (a tail call: whatever the signature, the registers and the stack are the caller's).
#if defined(__x86_64__)
#define FF_TRAMPOLINE(name, version)                                                                                 \
  __asm__(".text\n.globl __wrap_" #name "\n.type __wrap_" #name ",@function\n__wrap_" #name ":\n\tjmp ff_old_" #name \
          "@PLT\n.size __wrap_" #name ",.-__wrap_" #name "\n.symver ff_old_" #name "," #name "@" version "\n");
#else
#define FF_TRAMPOLINE(name, version)                                                                               \
  __asm__(".text\n.globl __wrap_" #name "\n.type __wrap_" #name ",%function\n__wrap_" #name ":\n\tb ff_old_" #name \
          "\n.size __wrap_" #name ",.-__wrap_" #name "\n.symver ff_old_" #name "," #name "@" FF_GLIBC_BASE "\n");
#endif
#define FF_OLD(name, version) FF_TRAMPOLINE(name, version)
#define FF_SHIM(name)
#include "glibc_floor.def"
#undef FF_OLD
#undef FF_SHIM

// A call to NAME at the first version (or the given one, x86-64's), from C++: ff_first_NAME.
#define FF_FIRST(name) __asm__(".symver ff_first_" #name "," #name "@" FF_GLIBC_BASE)
#if defined(__x86_64__)
#define FF_FIRST_AT(name, version) __asm__(".symver ff_first_" #name "," #name "@" version)
#else
#define FF_FIRST_AT(name, version) FF_FIRST(name)
#endif

extern "C" {

// ---- __libc_start_main ------------------------------------------------------------------
// glibc 2.34's crt1.o calls __libc_start_main@GLIBC_2.34 with no init function: that
// glibc runs the program's constructors itself. The first version, which glibc 2.28 has,
// runs only the init function it is given (2.28's crt1.o passed __libc_csu_init), and
// glibc 2.34 and later run that function instead of their own when one is given. So the
// wrapper hands the first version the function __libc_csu_init was: _init, then the
// init array (the preinit array of an executable linked dynamically is ld.so's job).
// The fini function stays null: ld.so runs the executable's fini array in both.
int ff_first___libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                               void (*init)(int, char**, char**), void (*fini)(void), void (*rtld_fini)(void),
                               void* stack_end);
FF_FIRST(__libc_start_main);

extern void (*__init_array_start[])(int, char**, char**) __attribute__((visibility("hidden")));
extern void (*__init_array_end[])(int, char**, char**) __attribute__((visibility("hidden")));
void _init(void);

static void ff_run_constructors(int argc, char** argv, char** envp) {
  _init();
  const size_t n = static_cast<size_t>(__init_array_end - __init_array_start);
  for (size_t i = 0; i < n; i++) __init_array_start[i](argc, argv, envp);
}

int __wrap___libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, void (*init)(int, char**, char**),
                             void (*fini)(void), void (*rtld_fini)(void), void* stack_end) {
  (void)init;  // null from glibc 2.34's crt1.o
  (void)fini;
  return ff_first___libc_start_main(main, argc, argv, ff_run_constructors, nullptr, rtld_fini, stack_end);
}

// ---- stat and its kin (2.33) -------------------------------------------------------------
// Before 2.33 these were inline wrappers (libc_nonshared.a) over __xstat and its kin,
// which every glibc since exports at the first version. On LP64 struct stat64 is struct stat.
int ff_first___xstat(int, const char*, struct stat*);
int ff_first___lxstat(int, const char*, struct stat*);
int ff_first___fxstat(int, int, struct stat*);
int ff_first___fxstatat(int, int, const char*, struct stat*, int);
FF_FIRST(__xstat);
FF_FIRST(__lxstat);
FF_FIRST(__fxstat);
FF_FIRST_AT(__fxstatat, "GLIBC_2.4");

int __wrap_stat(const char* path, struct stat* st) { return ff_first___xstat(FF_STAT_VER, path, st); }
int __wrap_lstat(const char* path, struct stat* st) { return ff_first___lxstat(FF_STAT_VER, path, st); }
int __wrap_fstat(int fd, struct stat* st) { return ff_first___fxstat(FF_STAT_VER, fd, st); }
int __wrap_fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return ff_first___fxstatat(FF_STAT_VER, dirfd, path, st, flags);
}
int __wrap_stat64(const char* path, struct stat* st) { return __wrap_stat(path, st); }
int __wrap_lstat64(const char* path, struct stat* st) { return __wrap_lstat(path, st); }
int __wrap_fstat64(int fd, struct stat* st) { return __wrap_fstat(fd, st); }
int __wrap_fstatat64(int dirfd, const char* path, struct stat* st, int flags) {
  return __wrap_fstatat(dirfd, path, st, flags);
}

// ---- pthread_cond_clockwait (2.30) -------------------------------------------------------
// libstdc++'s condition_variable waits on the steady clock with it. Before 2.30: the same
// deadline on the realtime clock (a clock step during the wait moves it; the callers loop).
int __wrap_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                                  const struct timespec* deadline) {
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, deadline);
  if (clock != CLOCK_MONOTONIC) return EINVAL;
  struct timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  int64_t left =
      (static_cast<int64_t>(deadline->tv_sec) - mono.tv_sec) * 1000000000 + (deadline->tv_nsec - mono.tv_nsec);
  if (left < 0) left = 0;
  const int64_t at = static_cast<int64_t>(real.tv_nsec) + left % 1000000000;
  struct timespec when;
  when.tv_sec = real.tv_sec + static_cast<time_t>(left / 1000000000 + at / 1000000000);
  when.tv_nsec = static_cast<long>(at % 1000000000);
  return pthread_cond_timedwait(cond, mutex, &when);
}

// ---- _dl_find_object (2.35) --------------------------------------------------------------
// gcc 12's libgcc_eh.a, built against glibc 2.35+, finds the unwind table of a frame only
// through _dl_find_object (unwind-dw2-fde-dip.c: no dl_iterate_phdr fallback is compiled
// in): the object whose PT_LOAD segments hold the address, and its PT_GNU_EH_FRAME
// (.eh_frame_hdr). The same answer from dl_iterate_phdr (glibc 2.2.5). Only the fields
// libgcc reads are filled: the mapping, the eh_frame pointer (x86-64 and aarch64 have no
// dlfo_eh_dbase); dlfo_link_map stays null.
namespace {
struct FindObject {
  uintptr_t pc;
  struct dl_find_object* out;
  bool found;
};

int find_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* want = static_cast<FindObject*>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  bool inside = false;
  const ElfW(Phdr)* eh = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
      const uintptr_t end = start + ph.p_memsz;
      if (start < lo) lo = start;
      if (end > hi) hi = end;
      if (want->pc >= start && want->pc < end) inside = true;
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh = &ph;
    }
  }
  if (!inside) return 0;
  memset(want->out, 0, sizeof *want->out);
  want->out->dlfo_map_start = reinterpret_cast<void*>(lo);
  want->out->dlfo_map_end = reinterpret_cast<void*>(hi);
  want->out->dlfo_eh_frame = eh ? reinterpret_cast<void*>(info->dlpi_addr + eh->p_vaddr) : nullptr;
  want->found = true;
  return 1;
}
}  // namespace

int _dl_find_object(void* address, struct dl_find_object* result) noexcept {
  FindObject want{reinterpret_cast<uintptr_t>(address), result, false};
  dl_iterate_phdr(find_object, &want);
  return want.found ? 0 : -1;
}

// ---- arc4random (2.36) -------------------------------------------------------------------
// libarchive.a takes random bytes from arc4random_buf (archive_random.c). The kernel's
// getrandom (glibc 2.25), then /dev/urandom for kernels before 3.17; no bytes at all is fatal,
// as it is in glibc's.
namespace {
// Calls read_some(fd, p, size) until size bytes came, it fails (EINTR retried) or it gives none.
void fill_from(unsigned char*& p, size_t& size, ssize_t (*read_some)(int, unsigned char*, size_t), int fd) {
  while (size > 0) {
    const ssize_t n = read_some(fd, p, size);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
    } else if (!(n < 0 && errno == EINTR)) {
      return;
    }
  }
}
}  // namespace

void arc4random_buf(void* buffer, size_t size) noexcept {
  auto* p = static_cast<unsigned char*>(buffer);
  fill_from(p, size, [](int, unsigned char* at, size_t left) -> ssize_t { return getrandom(at, left, 0); }, -1);
  if (size == 0) return;
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    fill_from(p, size, [](int from, unsigned char* at, size_t left) -> ssize_t { return read(from, at, left); }, fd);
    close(fd);
  }
  if (size > 0) abort();
}

uint32_t arc4random(void) noexcept {
  uint32_t v;
  arc4random_buf(&v, sizeof v);
  return v;
}

uint32_t arc4random_uniform(uint32_t bound) noexcept {
  if (bound < 2) return 0;
  const uint32_t floor = (0u - bound) % bound;  // 2^32 mod bound: below it is biased
  for (;;) {
    const uint32_t v = arc4random();
    if (v >= floor) return v % bound;
  }
}

// ---- sigabbrev_np (2.32) -----------------------------------------------------------------
// A signal's abbreviation without "SIG" (app/watch.run.cc names a child's signal with it).
const char* sigabbrev_np(int sig) noexcept {
  static const struct {
    int sig;
    const char* name;
  } kSignals[] = {
      {SIGHUP, "HUP"},       {SIGINT, "INT"},   {SIGQUIT, "QUIT"},   {SIGILL, "ILL"},   {SIGTRAP, "TRAP"},
      {SIGABRT, "ABRT"},     {SIGBUS, "BUS"},   {SIGFPE, "FPE"},     {SIGKILL, "KILL"}, {SIGUSR1, "USR1"},
      {SIGSEGV, "SEGV"},     {SIGUSR2, "USR2"}, {SIGPIPE, "PIPE"},   {SIGALRM, "ALRM"}, {SIGTERM, "TERM"},
      {SIGSTKFLT, "STKFLT"}, {SIGCHLD, "CHLD"}, {SIGCONT, "CONT"},   {SIGSTOP, "STOP"}, {SIGTSTP, "TSTP"},
      {SIGTTIN, "TTIN"},     {SIGTTOU, "TTOU"}, {SIGURG, "URG"},     {SIGXCPU, "XCPU"}, {SIGXFSZ, "XFSZ"},
      {SIGVTALRM, "VTALRM"}, {SIGPROF, "PROF"}, {SIGWINCH, "WINCH"}, {SIGIO, "IO"},     {SIGPWR, "PWR"},
      {SIGSYS, "SYS"},
  };
  for (const auto& s : kSignals) {
    if (s.sig == sig) return s.name;
  }
  return nullptr;
}

// ---- __libc_single_threaded (2.32) -------------------------------------------------------
// libstdc++ skips atomic reference counts while it is nonzero. Zero: always atomic, which
// is what it did before glibc had the flag.
char __libc_single_threaded = 0;

}  // extern "C"
