// Hostile inputs (issue 7: "no log can crash firstfault"). The firstfault binary runs on
// inputs made at test time in a temp dir. Each must give a clear message or a correct
// result, in bounded time and memory, and must not cost the findings from the job's other
// inputs: most cases run next to tests/data/05_signal_kill__tee.log, whose first failure
// (SIGKILL of rank 1) must still be the primary.
//
// The binary is run with fork/exec, not system(), so that each run has a deadline (it is
// killed past it, and the test fails saying so) and its peak RSS is measured (wait4).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/strings.h"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The binary under test: FF_BINARY, or FIRSTFAULT_TEST_BINARY where CI runs a copy kept in
// root's home (.ci/run: the issue-32 gate for a checkout there).
const char* binary() {
  static const char* b = [] {
    const char* e = std::getenv("FIRSTFAULT_TEST_BINARY");
    return e && *e ? e : FF_BINARY;
  }();
  return b;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Sanitizer builds run several times slower; the bounds are about hangs and blow-ups, not
// speed, so they scale rather than disappear.
constexpr double kSlow = kSanitized ? 4.0 : 1.0;

const std::string kKilledLog = std::string(FF_SOURCE_DIR) + "/tests/data/05_signal_kill__tee.log";

// One pattern-database cache for the whole suite: compiling it is most of a run's start-up
// (seconds under ASan), and no test here is about the cache.
const fs::path& shared_cache() {
  static const fs::path dir = fs::temp_directory_path() / ("ff-hostile-cache-" + std::to_string(::getpid()));
  return dir;
}

class CacheCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(shared_cache(), ec);
  }
};
const auto* const kCacheCleanup = ::testing::AddGlobalTestEnvironment(new CacheCleanup);

struct Outcome {
  int rc = -1;
  bool timed_out = false;
  double seconds = 0;
  long max_rss_mb = 0;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ff-hostile-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  }
  void TearDown() override {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink()) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(dir_, ec);
  }

  std::string path(const std::string& rel) const { return (dir_ / rel).string(); }

  // Runs firstfault with `args`; killed after `deadline_s`. `in_child` runs in the child
  // before exec (to drop privileges); it returns false to make the child exit 77.
  // `while_running` is called (with the child's pid) every few milliseconds until it ends.
  Outcome run(const std::vector<std::string>& args, double deadline_s = 60,
          const std::function<bool()>& in_child = {}, const std::function<void(pid_t)>& while_running = {}) {
    const std::string out = path("stdout"), err = path("stderr");
    // Everything the child needs is made before fork(): the FIFO test forks while a writer
    // thread runs, so the child calls only async-signal-safe functions.
    std::vector<std::string> env = {"FIRSTFAULT_CACHE_DIR=" + (cache_dir_.empty() ? shared_cache().string() : cache_dir_),
                                    "NO_COLOR=1", "FIRSTFAULT_NO_HISTORY=1"};
    const char* asan = std::getenv("ASAN_OPTIONS");
    if (!asan_extra_.empty()) env.push_back("ASAN_OPTIONS=" + std::string(asan ? asan : "") + ":" + asan_extra_);
    for (char** e = environ; *e != nullptr; ++e) {
      std::string_view kv(*e);
      std::string_view key = kv.substr(0, kv.find('='));
      bool replaced = false;
      for (const auto& mine : env) replaced = replaced || std::string_view(mine).substr(0, mine.find('=')) == key;
      if (!replaced) env.emplace_back(kv);
    }
    std::vector<char*> envp, argv;
    for (auto& kv : env) envp.push_back(kv.data());
    envp.push_back(nullptr);
    argv.push_back(const_cast<char*>(binary()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const char* stdin_path = stdin_.empty() ? "/dev/null" : stdin_.c_str();
    auto t0 = std::chrono::steady_clock::now();
    pid_t pid = ::fork();
    if (pid == 0) {
      int in = ::open(stdin_path, O_RDONLY);
      int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || o < 0 || e < 0) ::_exit(126);
      ::dup2(in, 0);
      ::dup2(o, 1);
      ::dup2(e, 2);
      if (in_child && !in_child()) ::_exit(77);
      ::execve(binary(), argv.data(), envp.data());
      ::_exit(127);
    }
    Outcome r;
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      return r;
    }
    int status = 0;
    struct rusage ru {};
    for (;;) {
      pid_t w = ::wait4(pid, &status, WNOHANG, &ru);
      if (w == pid) break;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > deadline_s) {
        ::kill(pid, SIGKILL);
        ::wait4(pid, &status, 0, &ru);
        r.timed_out = true;
        break;
      }
      if (while_running) {
        while_running(pid);
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.max_rss_mb = ru.ru_maxrss / 1024;
    r.out = read_file(out);
    r.err = read_file(err);
    EXPECT_FALSE(r.timed_out) << "killed after " << deadline_s << " s: firstfault " << args.back();
    // 0-4 are the verdicts' and errors' codes (--help); anything else is a crash.
    EXPECT_LE(r.rc, 4) << "crashed or failed to start (rc " << r.rc << "): " << r.err.substr(0, 2000);
    return r;
  }

  // Diagnoses inputs as JSON; the output must parse.
  json diagnose(std::vector<std::string> inputs, Outcome* out = nullptr, double deadline_s = 60,
                std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"diagnose", "--format", "json"};
    args.insert(args.begin(), extra.begin(), extra.end());
    args.insert(args.end(), inputs.begin(), inputs.end());
    Outcome r = run(args, deadline_s);
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out.substr(0, 300) << "\nstderr: " << r.err.substr(0, 500);
    if (out) *out = std::move(r);
    return j.is_discarded() ? json::object() : j;
  }

  // The job's other input was still diagnosed: SIGKILL of rank 1 first.
  // For run()'s in_child: as root, become nobody, so that file modes are enforced; false
  // (the child exits 77, the test skips) when that fails or nobody cannot reach the binary
  // (a checkout in root's home).
  static bool as_nobody_when_root() {
    if (::geteuid() != 0) return true;
    return ::setgid(65534) == 0 && ::setuid(65534) == 0 && ::geteuid() != 0 && ::access(binary(), X_OK) == 0;
  }
  // Whether a run as_nobody_when_root can start at all, asked in a child before the test
  // runs anything as nobody (issue 32: in a checkout in root's home nobody cannot reach the
  // binary; the test must skip before a run's rc 77 is taken for a crash).
  static bool nobody_can_run() {
    if (::geteuid() != 0) return true;
    static const bool can = [] {
      pid_t pid = ::fork();
      if (pid == 0) ::_exit(as_nobody_when_root() ? 0 : 77);
      int status = 0;
      return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }();
    return can;
  }

  static void expect_killed_rank1(const json& j, const Outcome& r) {
    ASSERT_TRUE(j.contains("primary") && j["primary"].is_object()) << r.err.substr(0, 500);
    EXPECT_EQ(j["primary"]["rank"], 1) << j["primary"].dump().substr(0, 500);
    EXPECT_EQ(r.rc, 1);
  }

  fs::path dir_;
  std::string asan_extra_;  // appended to ASAN_OPTIONS in the child
  std::string cache_dir_;   // the cache of the runs; empty: the suite's shared one
  std::string stdin_;       // the runs' standard input; empty: /dev/null
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// ---------------------------------------------------------------------------------------

TEST_F(Hostile, EmptyAndBlankFiles) {
  write_file(dir_ / "empty.log", "");
  write_file(dir_ / "blank.log", std::string(10000, '\n') + "   \n\t\n");
  Outcome r;
  json j = diagnose({path("empty.log")}, &r);
  EXPECT_EQ(r.rc, 4);
  EXPECT_EQ(j["verdict"], "unknown");
  j = diagnose({path("blank.log")}, &r);
  EXPECT_EQ(r.rc, 4);
  j = diagnose({path("empty.log"), path("blank.log"), kKilledLog}, &r);
  expect_killed_rank1(j, r);
  EXPECT_EQ(j["inputs"]["sources"].size(), 3u);
}

TEST_F(Hostile, SparseFourGiBFileIsSkippedAsBinaryQuickly) {
  {
    int fd = ::open(path("sparse.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    int rc = ::ftruncate(fd, 4ll << 30);  // truncate -s 4G: all NUL, no blocks on disk
    ::close(fd);
    if (rc != 0) GTEST_SKIP() << "this filesystem cannot make a 4 GiB sparse file";
  }
  Outcome r = run({"diagnose", path("sparse.log")}, 20);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("sparse.log"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("binary file"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 20);
  json j = diagnose({path("sparse.log"), kKilledLog}, &r, 20);
  expect_killed_rank1(j, r);
  EXPECT_FALSE(j["inputs"]["errors"].empty());
}

TEST_F(Hostile, QuarterGiBLineWithoutNewlineKeepsMemoryBounded) {
  {
    std::ofstream out(dir_ / "long.log", std::ios::binary);
    std::string block(1 << 20, 'x');
    for (int i = 0; i < 256; ++i) out << block;  // 256 MiB, no '\n' anywhere
  }
  // ASan keeps freed blocks in a quarantine (256 MiB by default), which would be measured
  // as the run's memory; keep it small so what is measured is what the program holds.
  if (kSanitized) asan_extra_ = "quarantine_size_mb=8";
  Outcome r;
  json j = diagnose({path("long.log"), kKilledLog}, &r, 120 * kSlow);
  expect_killed_rank1(j, r);
  bool noted = false;
  for (const auto& n : j["inputs"]["notes"]) noted = noted || n.get<std::string>().find("long.log") != std::string::npos;
  EXPECT_TRUE(noted) << j["inputs"]["notes"].dump();
  EXPECT_EQ(j["inputs"]["sources"][0]["bytes"], 256ull << 20);
  // The line is examined up to the line limit, never buffered whole. (ASan's shadow memory
  // and allocator add a constant, measured on a small input.)
  long limit_mb = 200;
  if (kSanitized) {
    Outcome base;
    diagnose({kKilledLog}, &base);
    limit_mb = base.max_rss_mb + 100;
  }
  EXPECT_LT(r.max_rss_mb, limit_mb);
}

TEST_F(Hostile, NulBytesInLinesAndANulFilledHead) {
  std::string log = read_file(kKilledLog);
  write_file(dir_ / "nuls.log", replace_all(log, "\n", std::string("\0\0 \0\n", 5)));
  Outcome r;
  json j = diagnose({path("nuls.log")}, &r);
  expect_killed_rank1(j, r);
  // A log whose first block is NUL (preallocated, then the writer died): skipped, named.
  write_file(dir_ / "hole.log", std::string(64 << 10, '\0') + log);
  j = diagnose({path("hole.log"), kKilledLog}, &r);
  expect_killed_rank1(j, r);
  EXPECT_NE(r.err.find("hole.log"), std::string::npos);
}

TEST_F(Hostile, InvalidUtf8AndOverlongEncodingsStayValidJson) {
  // Overlong '/', overlong NUL, surrogates, beyond U+10FFFF, lone continuation bytes,
  // truncated sequences, 0xFE/0xFF.
  const std::string bad[] = {"\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xc0\x80", "\xed\xa0\x80\xed\xbf\xbf",
                             "\xf4\x90\x80\x80", "\x80\xbf", "\xe2\x82", "\xfe\xff", "\xf8\x88\x80\x80\x80"};
  std::string log = read_file(kKilledLog), dirty;
  std::istringstream in(log);
  std::string line;
  // Every line up to torchrun's failure summary gets one of them (the summary's "[1]:" row
  // headers are structure, not text), and a line of nothing but invalid bytes comes first.
  for (const auto& b : bad) dirty += b;
  dirty += "\n";
  bool in_summary = false;
  for (int n = 0; std::getline(in, line); ++n) {
    in_summary = in_summary || line.find("ChildFailedError") != std::string::npos;
    dirty += in_summary ? line + "\n" : line + " " + bad[n % 10] + "\n";
  }
  write_file(dir_ / "dirty.log", dirty);
  Outcome r;
  json j = diagnose({path("dirty.log")}, &r);  // json::parse rejects invalid UTF-8
  expect_killed_rank1(j, r);
  // In the names of inputs, too.
  write_file(dir_ / "bad-\xff\xc0\xaf.log", "RuntimeError: CUDA error: an illegal memory access was encountered\n");
  j = diagnose({path("bad-\xff\xc0\xaf.log"), kKilledLog}, &r);
  expect_killed_rank1(j, r);
  Outcome t = run({"diagnose", path("dirty.log")});
  EXPECT_EQ(t.rc, 1);
  EXPECT_NE(t.out.find("rank 1"), std::string::npos);
}

TEST_F(Hostile, CarriageReturnOnlyLineEndsAreLines) {
  // An old-Mac-style log: every '\n' is a '\r'. Same diagnosis, same line numbers.
  std::string log = read_file(kKilledLog);
  write_file(dir_ / "cr.log", replace_all(log, "\n", "\r"));
  Outcome plain_run, r;
  json plain = diagnose({kKilledLog}, &plain_run);
  json j = diagnose({path("cr.log")}, &r);
  expect_killed_rank1(j, r);
  EXPECT_EQ(j["primary"]["id"], plain["primary"]["id"]);
  EXPECT_EQ(j["primary"]["evidence"][0]["line"], plain["primary"]["evidence"][0]["line"]);
  EXPECT_EQ(j["inputs"]["lines"], plain["inputs"]["lines"]);
}

TEST_F(Hostile, HundredThousandLineTraceback) {
  std::string tb = "step 1 ok\nTraceback (most recent call last):\n";
  for (int i = 0; i < 50000; ++i) tb += "  File \"/work/model.py\", line " + std::to_string(i) + ", in f\n    f()\n";
  tb += "RecursionError: maximum recursion depth exceeded\n";
  write_file(dir_ / "deep.log", tb);
  Outcome r;
  json j = diagnose({path("deep.log")}, &r, 60 * kSlow);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(j["verdict"], "failed");
  ASSERT_TRUE(j["primary"].is_object());
  EXPECT_EQ(j["primary"]["evidence"][0]["line"], 100003);
  EXPECT_LT(r.out.size(), 256u << 10) << "the traceback is not copied into the report";
  // The same traceback cut before its exception line (the process was killed while
  // printing it) is no failure of its own: next to the killed job's log, that log decides.
  write_file(dir_ / "cut.log", tb.substr(0, tb.rfind("RecursionError")));
  json both = diagnose({path("cut.log"), kKilledLog}, &r, 60 * kSlow);
  expect_killed_rank1(both, r);
  EXPECT_NE(both["primary"].dump().find("SIGKILL"), std::string::npos);
}

TEST_F(Hostile, DeeplyChainedTracebacks) {
  // 2,000 exceptions, each raised while handling the previous one: the first (a CUDA OOM)
  // is the cause.
  std::string tb;
  for (int i = 0; i < 2000; ++i) {
    if (i > 0) tb += "\nDuring handling of the above exception, another exception occurred:\n\n";
    tb += "Traceback (most recent call last):\n  File \"/work/x.py\", line " + std::to_string(i) + ", in g\n    g()\n";
    tb += i == 0 ? "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                   "capacity of 79.15 GiB of which 1.20 GiB is free.\n"
                 : "Zyzzyva" + std::to_string(i) + "Error: level " + std::to_string(i) + "\n";
  }
  write_file(dir_ / "chained.log", tb);
  Outcome r;
  json j = diagnose({path("chained.log")}, &r, 60 * kSlow);
  EXPECT_EQ(r.rc, 1);
  ASSERT_TRUE(j["primary"].is_object());
  EXPECT_EQ(j["primary"]["id"], "pytorch.cuda.out-of-memory");
  EXPECT_EQ(j["primary"]["evidence"][0]["line"], 4);
  EXPECT_LT(r.out.size(), 256u << 10);
  // And "Original Traceback" nesting, 500 deep, next to the killed job.
  std::string orig = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    f()\n";
  for (int i = 0; i < 500; ++i) orig += "RuntimeError: Caught RuntimeError in replica 0.\nOriginal Traceback (most recent call last):\n  File \"b.py\", line 2, in g\n    g()\n";
  orig += "ValueError: innermost\n";
  write_file(dir_ / "orig.log", orig);
  json both = diagnose({path("orig.log"), kKilledLog}, &r, 60 * kSlow);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(both["inputs"]["sources"].size(), 2u);
  EXPECT_GT(both["inputs"]["sources"][1]["events"].get<int>(), 5);
}

// A ustar header block for a member (regular file or directory).
std::string tar_header(const std::string& name, uint64_t size, char type) {
  std::string h(512, '\0');
  auto put = [&](size_t off, size_t len, const std::string& v) { std::memcpy(&h[off], v.data(), std::min(len, v.size())); };
  auto octal = [](uint64_t v, int width) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", width, static_cast<unsigned long long>(v));
    return std::string(buf);
  };
  put(0, 100, name);
  put(100, 8, octal(type == '5' ? 0755 : 0644, 7));
  put(108, 8, octal(0, 7));
  put(116, 8, octal(0, 7));
  put(124, 12, octal(size, 11));
  put(136, 12, octal(0, 11));
  h[156] = type;
  put(257, 6, std::string("ustar\0", 6));
  put(263, 2, "00");
  put(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  put(148, 8, octal(sum, 6) + std::string("\0 ", 2));
  return h;
}

std::string tar_member(const std::string& name, const std::string& data) {
  std::string m = tar_header(name, data.size(), '0') + data;
  m.resize((m.size() + 511) / 512 * 512, '\0');
  return m;
}

TEST_F(Hostile, TarBombsStopAtTheLimitsWithAClearMessage) {
  // Many members: the killed job's log, then 100,001 empty directories.
  {
    std::ofstream out(dir_ / "many.tar", std::ios::binary);
    out << tar_member("job/rank.log", read_file(kKilledLog));
    for (int i = 0; i <= 100000; ++i) out << tar_header("d/" + std::to_string(i) + "/", 0, '5');
    out << std::string(1024, '\0');
  }
  Outcome r;
  json j = diagnose({path("many.tar")}, &r, 120 * kSlow);
  expect_killed_rank1(j, r);
  EXPECT_NE(r.err.find("more than 100000 members"), std::string::npos) << r.err;
  // Large expansion: a 5 MB gzip whose tar holds 1 GiB of text (concatenated gzip
  // members decode as one stream). With a 16 MiB limit the run stops there, says so, and
  // still reports the input read before it (the limit is for all inputs together).
  {
    std::string line = "step 1 loss 0.5 all good\n";
    std::string block;
    while (block.size() < (4u << 20)) block += line;
    block.resize(4u << 20);
    write_file(dir_ / "head.bin", tar_header("big.log", 1ull << 30, '0'));
    write_file(dir_ / "block.bin", block);
    write_file(dir_ / "end.bin", std::string(1024, '\0'));
    ASSERT_EQ(std::system(("cd '" + dir_.string() + "' && gzip -1 -n head.bin block.bin end.bin").c_str()), 0);
    std::string gz = read_file(dir_ / "head.bin.gz"), gblock = read_file(dir_ / "block.bin.gz");
    for (int i = 0; i < 256; ++i) gz += gblock;
    gz += read_file(dir_ / "end.bin.gz");
    write_file(dir_ / "bomb.tar.gz", gz);
  }
  Outcome capped = run({"diagnose", "--format", "json", "--max-bytes", "16M", kKilledLog, path("bomb.tar.gz")}, 60 * kSlow);
  json c = json::parse(capped.out, nullptr, false);
  ASSERT_FALSE(c.is_discarded()) << capped.err;
  expect_killed_rank1(c, capped);
  EXPECT_NE(capped.err.find("exceeds the limit of 16 MiB"), std::string::npos) << capped.err;
  EXPECT_LE(c["inputs"]["bytes"].get<uint64_t>(), 16ull << 20);
}

// Issue 14, item 9: a tar past the member limit was diagnosed from its first 100,000
// members and said HEALTHY (exit 0), and verify --after it said FIXED. What was not read
// makes the answer incomplete.
TEST_F(Hostile, AnArchivePastTheMemberLimitIsIncompleteNotHealthy) {
  const std::string healthy = std::string(FF_SOURCE_DIR) + "/tests/data/09_healthy__tee.log";
  const std::string failed = std::string(FF_SOURCE_DIR) + "/tests/data/01_rank_exception__tee.log";
  {
    std::ofstream out(dir_ / "many.tar", std::ios::binary);
    out << tar_member("job/rank0.log", read_file(healthy));
    for (int i = 0; i <= 100000; ++i) out << tar_header("d/" + std::to_string(i) + "/", 0, '5');
    out << std::string(1024, '\0');
  }
  Outcome whole;
  json h = diagnose({healthy}, &whole);
  ASSERT_EQ(h["verdict"], "healthy") << "the log alone is a healthy run";
  Outcome r;
  json j = diagnose({path("many.tar")}, &r, 120 * kSlow);
  EXPECT_EQ(j["verdict"], "incomplete") << j.dump().substr(0, 800);
  EXPECT_EQ(r.rc, 3);
  ASSERT_TRUE(j["inputs"]["errors"].is_array());
  EXPECT_FALSE(j["inputs"]["errors"].empty());
  EXPECT_NE(r.err.find("more than 100000 members"), std::string::npos) << r.err;
  Outcome v = run({"verify", "--before", failed, "--after", path("many.tar")}, 120 * kSlow);
  EXPECT_EQ(v.rc, 3) << v.out.substr(0, 800);
  EXPECT_EQ(v.out.find("FIXED"), std::string::npos) << v.out.substr(0, 800);
}

// Issue 14, item 9: a log in a legacy encoding (here GBK, most bytes not UTF-8) was
// skipped as binary, and inside a folder the job then looked healthy with nothing said.
// Like ripgrep, binary is decided by control bytes; the log is read and its failure found.
TEST_F(Hostile, ALogInALegacyEncodingIsReadNotSkippedAsBinary) {
  std::string gbk;
  // "training failed, not enough GPU memory" in GBK, as a Chinese-locale logger writes it.
  for (int i = 0; i < 40; ++i) gbk += "[2026-11-30 10:00:" + std::to_string(10 + i % 50) + "] \xd1\xb5\xc1\xb7\xca\xa7\xb0\xdc\xa3\xac\xcf\xd4\xb4\xe6\xb2\xbb\xd7\xe3\n";
  gbk += "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n";
  write_file(dir_ / "job" / "train.log", gbk);
  Outcome r;
  json j = diagnose({path("job")}, &r);
  EXPECT_EQ(r.err.find("binary"), std::string::npos) << r.err;
  EXPECT_EQ(j["verdict"], "failed") << j.dump().substr(0, 800);
  ASSERT_TRUE(j["primary"].is_object());
  EXPECT_EQ(j["primary"]["category"], "gpu-memory");
  EXPECT_EQ(r.rc, 1);
}

// Issue 14, item 10: `yes | firstfault diagnose -` read to the 256 GiB cap, and Ctrl-C
// then printed nothing. Now the first SIGINT or SIGTERM stops the reading, and the report
// for what was read comes out, incomplete (exit 3), the interruption named on stderr; for
// a stream that keeps coming and for one that stalls (a read() blocked on the pipe).
TEST_F(Hostile, CtrlCOnAStreamThatNeverEndsPrintsTheAnswerSoFar) {
  std::signal(SIGPIPE, SIG_IGN);
  for (int sig : {SIGINT, SIGTERM}) {
    for (bool stall : {false, true}) {
      SCOPED_TRACE(std::string(sig == SIGINT ? "SIGINT" : "SIGTERM") + (stall ? ", stalled stream" : ", endless stream"));
      const std::string fifo = path("in.fifo");
      ::unlink(fifo.c_str());
      ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
      std::atomic<bool> stop{false};
      std::thread writer([&] {
        int fd = ::open(fifo.c_str(), O_WRONLY);
        if (fd < 0) return;
        // Writes never block: a full pipe is retried until told to stop (a blocked write
        // would wait forever on the reader the test opens to release open() below).
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        std::string block;
        for (int i = 1; i <= 2000; ++i) block += "step " + std::to_string(i) + " loss 0.5 lr 0.0001\n";
        bool once = false;
        while (!stop) {
          if (stall && once) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            continue;
          }
          if (::write(fd, block.data(), block.size()) < 0) {
            if (errno != EAGAIN) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
          }
          once = true;
        }
        ::close(fd);
      });
      stdin_ = fifo;
      bool sent = false;
      auto start = std::chrono::steady_clock::now();
      Outcome r = run({"diagnose", "--format", "json", "-"}, 30 * kSlow, {}, [&](pid_t pid) {
        if (!sent && std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1500)) {
          ::kill(pid, sig);
          sent = true;
        }
      });
      stop = true;
      // The writer may still wait in open() when the child never opened the FIFO.
      int unblock = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
      writer.join();
      if (unblock >= 0) ::close(unblock);
      stdin_.clear();
      EXPECT_TRUE(sent);
      json j = json::parse(r.out, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << "no report: " << r.out.substr(0, 300) << "\nstderr: " << r.err.substr(0, 500);
      EXPECT_EQ(j["verdict"], "incomplete") << j.dump().substr(0, 600);
      EXPECT_EQ(r.rc, 3);
      EXPECT_NE(r.err.find(sig == SIGINT ? "interrupted (SIGINT)" : "interrupted (SIGTERM)"), std::string::npos) << r.err;
      EXPECT_GT(j["inputs"]["lines"].get<uint64_t>(), 0u) << "what was read is in the answer";
    }
  }
}

TEST_F(Hostile, TruncatedAndFakeGzip) {
  ASSERT_EQ(std::system(("gzip -c '" + kKilledLog + "' > '" + path("full.gz") + "'").c_str()), 0);
  std::string gz = read_file(path("full.gz"));
  write_file(dir_ / "cut.gz", gz.substr(0, gz.size() / 2));
  // A gzip header, then a deflate block of the reserved type 3: nothing decodes.
  write_file(dir_ / "fake.gz", std::string("\x1f\x8b\x08\x00\0\0\0\0\0\x03", 10) + std::string(5000, '\xff'));
  write_file(dir_ / "header-only.gz", gz.substr(0, 10));
  Outcome r;
  json j = diagnose({path("cut.gz")}, &r);
  // The first half holds no failure, and the stream ends early: incomplete, never healthy.
  EXPECT_EQ(r.rc, 3);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(j["reasons"][0]["rule"], "verdict.incomplete-input");
  EXPECT_NE(r.err.find("truncated gzip"), std::string::npos) << r.err;
  EXPECT_GT(j["inputs"]["lines"].get<int>(), 50);
  Outcome f = run({"diagnose", path("fake.gz")});
  EXPECT_EQ(f.rc, 2);
  EXPECT_NE(f.err.find("not a valid gzip stream"), std::string::npos) << f.err;
  j = diagnose({path("fake.gz"), path("header-only.gz"), kKilledLog}, &r);
  expect_killed_rank1(j, r);
  EXPECT_EQ(j["inputs"]["errors"].size(), 2u) << j["inputs"]["errors"].dump();
}

TEST_F(Hostile, UnreadableFileIsNamedAndTheRestIsRead) {
  write_file(dir_ / "secret.log", "RuntimeError: CUDA error: out of memory\n");
  fs::permissions(dir_ / "secret.log", fs::perms::none);
  write_file(dir_ / "job" / "rank1.log", read_file(kKilledLog));
  // As root, the file's mode does not stop reading it: the run drops to nobody, who must
  // still reach the binary (not so in a checkout in root's home: then the test is skipped).
  if (!nobody_can_run())
    GTEST_SKIP() << "running as root, and nobody cannot be made the user or cannot reach " << binary();
  Outcome r =
      run({"--no-cache", "diagnose", "--format", "json", path("secret.log"), path("job")}, 60, as_nobody_when_root);
  if (::geteuid() != 0 && ::access(path("secret.log").c_str(), R_OK) == 0) GTEST_SKIP() << "permissions are not enforced";
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.err;
  expect_killed_rank1(j, r);
  EXPECT_NE(r.err.find("secret.log"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
}

TEST_F(Hostile, FifoNamedDirectlyIsReadAndFifoInADirectoryIsSkipped) {
  if (::mkfifo(path("pipe.log").c_str(), 0644) != 0) GTEST_SKIP() << "mkfifo not supported here";
  std::string log = read_file(kKilledLog);
  std::thread writer([&] {
    int fd = ::open(path("pipe.log").c_str(), O_WRONLY);
    if (fd < 0) return;
    for (size_t off = 0; off < log.size();) {
      ssize_t w = ::write(fd, log.data() + off, log.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    ::close(fd);
  });
  Outcome r;
  json j = diagnose({path("pipe.log")}, &r, 30 * kSlow);
  writer.join();
  expect_killed_rank1(j, r);
  // Nobody writes to this one: opening it would block forever.
  fs::create_directories(dir_ / "logs");
  ASSERT_EQ(::mkfifo(path("logs/stuck.log").c_str(), 0644), 0);
  write_file(dir_ / "logs" / "rank1.log", log);
  j = diagnose({path("logs")}, &r, 30 * kSlow);
  expect_killed_rank1(j, r);
}

TEST_F(Hostile, DirectoryLoopThroughSymlinks) {
  write_file(dir_ / "logs" / "a" / "rank1.log", read_file(kKilledLog));
  fs::create_directory_symlink("..", dir_ / "logs" / "a" / "up");
  fs::create_directory_symlink(".", dir_ / "logs" / "self");
  fs::create_directory_symlink(dir_ / "logs", dir_ / "logs" / "a" / "root");
  fs::create_symlink("dangling-target", dir_ / "logs" / "broken.log");
  fs::create_symlink("loop2.log", dir_ / "logs" / "loop1.log");
  fs::create_symlink("loop1.log", dir_ / "logs" / "loop2.log");
  Outcome r;
  json j = diagnose({"--follow", path("logs")}, &r, 30 * kSlow);  // links are not followed unless asked
  expect_killed_rank1(j, r);
  EXPECT_EQ(j["inputs"]["sources"].size(), 1u) << "the log is read once";
  EXPECT_NE(j["inputs"]["notes"].dump().find("loop"), std::string::npos) << j["inputs"]["notes"].dump();
}

TEST_F(Hostile, CatastrophicRegexInAKbOverrideStaysLinear) {
  const std::string entry = R"(id: mine.catastrophic
title: Catastrophic regex
category: model-code
severity: fatal
phase: forward
frameworks: [pytorch]
summary: s
mechanism: m
affected: [any]
confirm: [c]
root_cause: r
fix: [f]
verify: v
references: [{url: 'https://example.org'}]
patterns:
  - {id: nested, role: root, regex: '(a+)+b'}
  - {id: alt, role: root, regex: '(x+x+)+y'}
  - {id: star, role: root, regex: '(.*a){12}z'}
examples: ['aaaab']
)";
  write_file(dir_ / "kb" / "catastrophic.yaml", entry);
  write_file(dir_ / "kb" / "huge.yaml",
             replace_all(replace_all(entry, "mine.catastrophic", "mine.huge"), "'(a+)+b'", "'((a{1000}){1000}){1000}'"));
  std::string evil;
  for (int i = 0; i < 200; ++i) evil += std::string(4000, 'a') + "c " + std::string(4000, 'x') + "\n";
  write_file(dir_ / "evil.log", evil);
  Outcome r;
  json j = diagnose({path("evil.log"), kKilledLog}, &r, 30 * kSlow, {"--kb", path("kb")});
  expect_killed_rank1(j, r);
  EXPECT_LT(r.seconds, 30 * kSlow);
  // The unusable one is rejected with its file, line and a reason; the other loads.
  EXPECT_NE(r.err.find("huge.yaml"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("catastrophic.yaml"), std::string::npos) << r.err;
}

// Issue 14, item 6: distinct ranks on progress lines grew memory without bound (10
// million took 7.9 GB). The first SeriesSet::kMaxRanks ranks keep series of their own, the
// rest are summarised and counted, and per-rank bookkeeping is capped: peak memory is the
// same for 1 million ranks and for 10 million (about 340 MB measured, release build).
TEST_F(Hostile, MillionsOfRanksOnProgressLinesKeepMemoryBounded) {
  {
    std::ofstream out(dir_ / "ranks.log", std::ios::binary);
    for (int n = 0; n < 2000000; ++n) out << "[rank" << n << "]: step 1 loss 2.0\n";
  }
  if (kSanitized) asan_extra_ = "quarantine_size_mb=8";
  Outcome r;
  json j = diagnose({path("ranks.log")}, &r, 120 * kSlow);
  EXPECT_EQ(j["progress"]["ranks"], 2000000);
  EXPECT_NE(j["inputs"]["notes"].dump().find("ranks past the first 16384 are summarised"), std::string::npos)
      << j["inputs"]["notes"].dump();
  EXPECT_LT(r.out.size(), 256u << 10) << "the report does not grow with the number of ranks";
  EXPECT_LT(r.max_rss_mb, kSanitized ? 2000 : 600);
}

TEST_F(Hostile, MillionDistinctRanks) {
  {
    std::ofstream out(dir_ / "ranks.log", std::ios::binary);
    for (int n = 0; n < 1000000; ++n) out << "[rank" << n << "]: x\n";
    // A tenth of the ranks print one more line each (no pattern matches it: this test is
    // about per-rank state; hits cost memory per chunk, bounded by the chunks in flight).
    for (int n = 0; n < 1000000; n += 10) out << "[rank" << n << "]: lost contact with peer\n";
  }
  if (kSanitized) asan_extra_ = "quarantine_size_mb=8";
  Outcome r;
  json j = diagnose({path("ranks.log"), kKilledLog}, &r, 60 * kSlow);
  EXPECT_LT(r.out.size(), 256u << 10) << "the report does not grow with the number of ranks";
  expect_killed_rank1(j, r);
  EXPECT_GT(j["inputs"]["lines"].get<int>(), 1000000);
  // Per-rank state is capped (no traceback joiner is kept per idle rank): a 17 MB log
  // with a million ranks stays far from its quarter-gigabyte before the fix.
  EXPECT_LT(r.max_rss_mb, kSanitized ? 640 : 200);
}

}  // namespace

namespace {

// Issue 14: NCCL lines with a rank prefix state (node, pid) facts; the scan kept the node
// as a view into the line-cleaning buffer, which a longer line that needs cleaning (here
// an ANSI colour) reallocates: the next line's lookup read freed memory. ASan (make
// test-asan) aborts on it; valgrind showed "Invalid read" in the unordered_set lookup.
TEST_F(Hostile, PidFactsOutliveTheCleaningBuffer) {
  const std::string l = "[1,2]<stdout>:gpu-03:29880:30398 [0] NCCL \x1b[33mWARN\x1b[0m m";
  std::string log = l + " x\n" + l + " " + std::string(500, '0') + "\n" + l + " x\n";
  // Longer and longer lines, so the buffer grows (and moves) several times.
  for (size_t n = 1000; n < (1u << 20); n *= 2) log += l + " " + std::string(n, '1') + "\n" + l + " y\n";
  write_file(dir_ / "uaf.log", log);
  Outcome r = run({"diagnose", path("uaf.log")});
  // No event and no progress line, but rank-prefixed log lines: incomplete (issue 30: an
  // excerpt with a rank prefix is never unknown), and no crash.
  EXPECT_EQ(r.rc, 3) << r.err;
  json j = diagnose({path("uaf.log"), kKilledLog}, &r, 60 * kSlow);
  expect_killed_rank1(j, r);
}

}  // namespace

namespace {

// Whether process `pid` has `file` mapped (a window of io's mapped reading).
bool maps_file(pid_t pid, const std::string& file) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() >= file.size() && line.compare(line.size() - file.size(), file.size(), file) == 0) return true;
  }
  return false;
}

// Issue 14 (logrotate's copytruncate): a quiet file read through windows of a mapping is
// truncated while the windows are in flight. The pages past the cut raised SIGBUS in the
// scanning threads (exit 135); now the source is an error and the rest is diagnosed. Run
// on the file named, and on it inside a folder.
TEST_F(Hostile, FileTruncatedWhileMappedIsAnErrorNotABusError) {
  std::string block;
  for (int i = 0; block.size() < (1u << 20); ++i) block += "[rank0]: step " + std::to_string(i) + " loss 1.25 lr 0.001\n";
  fs::create_directories(dir_ / "walk");
  {
    std::ofstream out(dir_ / "walk" / "big.log", std::ios::binary);
    for (int i = 0; i < 160; ++i) out << block;  // 160 MiB: windows are in flight for a while
  }
  fs::copy_file(kKilledLog, dir_ / "walk" / "killed.log");
  const std::string big = path("walk/big.log");
  for (const std::string& input : {big, path("walk")}) {
    SCOPED_TRACE(input);
    bool cut = false;
    auto truncate_once_mapped = [&](pid_t pid) {
      if (!cut && maps_file(pid, big)) cut = ::truncate(big.c_str(), 0) == 0;
    };
    std::vector<std::string> args = {"diagnose", "--format", "json", "--map-min", "1M", input};
    if (input == big) args.push_back(kKilledLog);
    Outcome r = run(args, 60 * kSlow, {}, truncate_once_mapped);
    if (!cut) GTEST_SKIP() << "the run ended before a window of the file was seen mapped";
    EXPECT_NE(r.rc, 135) << "SIGBUS";
    json j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 300) << r.err.substr(0, 500);
    expect_killed_rank1(j, r);
    EXPECT_NE(r.err.find("big.log"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("file shrank while being read"), std::string::npos) << r.err;
    bool failed = false;
    for (const auto& src : j["inputs"]["sources"]) failed = failed || (src["name"].get<std::string>().find("big.log") != std::string::npos && !src["ok"].get<bool>());
    EXPECT_TRUE(failed) << j["inputs"].dump().substr(0, 1000);
    // Put it back for the next input.
    std::ofstream out(dir_ / "walk" / "big.log", std::ios::binary);
    for (int i = 0; i < 160; ++i) out << block;
  }
}

}  // namespace

namespace {

// Whether `s` can go to a terminal as is: no control but LF and TAB (C0, DEL, C1 as UTF-8)
// and valid UTF-8 (so no raw 0x80..0x9F byte either).
::testing::AssertionResult terminal_safe(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool c0 = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    const bool c1 = c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(s[i + 1]) <= 0x9f;
    if (c0 || c1) {
      return ::testing::AssertionFailure() << "control byte 0x" << std::hex << int(c) << " at " << std::dec << i << ": "
                                           << json(s.substr(i > 40 ? i - 40 : 0, 80)).dump(-1, ' ', true, json::error_handler_t::replace);
    }
  }
  if (ff::sanitize_utf8(s) != s) return ::testing::AssertionFailure() << "not valid UTF-8";
  return ::testing::AssertionSuccess();
}

// Issue 14: names of files and archive members, and the lines of a log, are shown on a
// terminal; what they hold must not act on it (clear the screen, set the title, write the
// clipboard with OSC 52, move the cursor with BS, C1 CSI...).
TEST_F(Hostile, NothingFromALogOrANameReachesTheTerminalRaw) {
  const std::string evil_name = "evil\n\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\x1b]0;title\x07\xc2\x9b" "31m\x9b" "2J.log";
  const std::string line = "RuntimeError: CUDA error: an illegal memory access was encountered \xc2\x9b" "2J \x9b" "31m "
                           "\b\b\a\v\f\x7f\x01\x1b]52;c;ZWNobyBoaQ==\x07\x1b]0;title\x07 end\n";
  write_file(dir_ / "job" / evil_name, "[rank2]: step 1 loss 1.5\n[rank2]: " + line);
  write_file(dir_ / ("bin\x1b[2J\xc2\x9b" ".log"), std::string(4096, '\0'));
  // A tar whose member names are hostile too.
  ASSERT_EQ(std::system(("cd " + dir_.string() + " && tar cf bundle.tar job 2>/dev/null").c_str()), 0);
  write_file(dir_ / "kb" / "bad\x1b[2J.yaml", "id: [unclosed\n");
  const std::vector<std::vector<std::string>> runs = {
      {"diagnose", "-v", path("job/" + evil_name)},
      {"diagnose", "-v", path("job"), path("bin\x1b[2J\xc2\x9b" ".log")},
      {"diagnose", "-v", path("bundle.tar")},
      {"--kb", path("kb"), "diagnose", path("job")},
      {"events", "--format", "text", path("job"), path("bundle.tar")},
      {"diff", path("job"), "--control", kKilledLog},
      {"verify", "--before", path("job"), "--after", kKilledLog},
  };
  for (const auto& args : runs) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    Outcome r = run(args);
    EXPECT_TRUE(terminal_safe(r.out)) << "stdout";
    EXPECT_TRUE(terminal_safe(r.err)) << "stderr";
    // Shown, escaped: the name and the line can still be read.
    if (args[0] == "diagnose" && args[1] == "-v") {
      EXPECT_NE(r.out.find("evil\\x0a\\e]52;c;ZWNobyBoaQ==\\x07\\e[2J"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("\\x08\\x08\\x07\\x0b\\x0c\\x7f"), std::string::npos) << r.out;
    }
  }
  Outcome bin = run({"diagnose", path("bin\x1b[2J\xc2\x9b" ".log")});
  EXPECT_NE(bin.err.find("bin\\e[2J\\u{9b}.log"), std::string::npos) << bin.err;
  // JSON keeps the bytes as they are, escaped its own way.
  Outcome r;
  json j = diagnose({path("job/" + evil_name)}, &r);
  ASSERT_TRUE(j["primary"].is_object());
  EXPECT_EQ(j["primary"]["evidence"][0]["source"], path("job/" + ff::sanitize_utf8(evil_name)));
}

}  // namespace

namespace {

// Runs `cmd` through /bin/sh -c in `cwd`; its stdout, and the exit status in *rc.
std::string run_sh(const std::string& cmd, const fs::path& cwd, int* rc) {
  const std::string out = (cwd / "sh.out").string();
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(o, 1);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::string s = read_file(out);
  fs::remove(out);
  return s;
}

// Issue 14: the commands a diagnosis suggests (the re-check of the rerun, a search for an
// unrecognised message) quote what they hold for POSIX shells: pasted into a shell, a
// hostile file name or log line stays one argument and runs nothing. Each command is run
// through sh with printf in the place of firstfault.
TEST_F(Hostile, SuggestedCommandsAreQuotedForTheShell) {
  const std::vector<std::string> names = {"x'$(touch PWNED)'.log", "a'b.log", "$(touch PWNED2).log", "`touch PWNED3`.log",
                                          "'; touch PWNED4; '.log", "n\n'$(touch PWNED5)'.log", "back\\slash'\\''.log"};
  write_file(dir_ / "in" / names[0], "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  for (size_t i = 1; i < names.size(); ++i) write_file(dir_ / "in" / names[i], "[rank1]: step 1 loss 1.5\n");
  write_file(dir_ / "in" / "crash.log",
             "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    f()\n"
             "ZyzzyvaError: x'$(touch PWNED6)' \"$(touch PWNED7)\" `touch PWNED8` end\n");
  const fs::path sandbox = dir_ / "sandbox";
  fs::create_directories(sandbox);
  auto expect_nothing_made = [&] {
    for (const auto& e : fs::directory_iterator(sandbox)) ADD_FAILURE() << "the command made " << e.path();
    fs::remove_all(sandbox);
    fs::create_directories(sandbox);
  };

  // The re-check of the rerun names every input.
  std::vector<std::string> inputs;
  for (const auto& n : names) inputs.push_back(path("in/" + n));
  Outcome r;
  json j = diagnose(inputs, &r);
  ASSERT_TRUE(j["primary"].is_object()) << r.err;
  const std::string verify = j["primary"]["verify"];
  const size_t at = verify.find("firstfault verify ");
  ASSERT_NE(at, std::string::npos) << verify;
  const std::string cmd = verify.substr(at);
  int rc = 0;
  run_sh("sh -n -c '" + replace_all(cmd, "'", "'\\''") + "'", sandbox, &rc);
  EXPECT_EQ(rc, 0) << "not valid sh: " << cmd;
  std::string printed = run_sh("printf '[%s]\\n'" + cmd.substr(std::string("firstfault").size()), sandbox, &rc);
  EXPECT_EQ(rc, 0) << cmd;
  std::string want = "[verify]\n[--before]\n";
  for (const auto& in : inputs) want += "[" + in + "]\n";
  want += "[--after]\n[NEW_LOGS]\n";
  EXPECT_EQ(printed, want) << cmd;
  expect_nothing_made();

  // The search for a message no entry recognises.
  j = diagnose({path("in/crash.log")}, &r);
  ASSERT_TRUE(j["primary"].is_object()) << r.err;
  std::string search;
  for (const auto& step : j["primary"]["fix_steps"]) {
    const std::string s = step;
    if (s.find("firstfault search ") != std::string::npos) search = s.substr(s.find("firstfault search "));
  }
  ASSERT_FALSE(search.empty()) << j["primary"]["fix_steps"].dump();
  printed = run_sh("printf '[%s]\\n'" + search.substr(std::string("firstfault").size()), sandbox, &rc);
  EXPECT_EQ(rc, 0) << search;
  EXPECT_EQ(printed.rfind("[search]\n[ZyzzyvaError: x'$(touch PWNED6)' \"$(touch PWNED7)\" `touch PWNED8`", 0), 0u)
      << printed;
  expect_nothing_made();
}

}  // namespace

namespace {

// Issue 14: a folder walk does not follow symbolic links (as find and ripgrep), so a link
// planted in a log folder cannot make firstfault read, and report on, files outside the
// inputs named. Skipped links are noted; -L/--follow follows them; a link named as an
// input is followed.
// Issue 31: a language-server message whose params nest 100,000 arrays deep crashed
// `firstfault lsp` (SIGSEGV); it is answered with ParseError and the session goes on.
TEST_F(Hostile, Issue31LspMessageNestedDeeplyIsAParseErrorNotACrash) {
  auto frame = [](const std::string& body) {
    return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const std::string deep = R"({"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":)" +
                           std::string(100000, '[') + std::string(100000, ']') + "}";
  write_file(dir_ / "lsp.in",
             frame(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}})") + frame(deep) +
                 frame(R"({"jsonrpc":"2.0","id":3,"method":"shutdown"})") + frame(R"({"jsonrpc":"2.0","method":"exit"})"));
  stdin_ = path("lsp.in");
  Outcome r = run({"lsp"}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(R"("code":-32700)"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find(R"("id":3)"), std::string::npos) << "the shutdown after it is answered";
}

// Issue 31: "open report" parked until its document's diagnosis, then answered on the
// diagnosing thread: a report that could not be written there ended the server
// (std::terminate). It is an error answer, and the session goes on.
TEST_F(Hostile, Issue31AReportThatCannotBeWrittenIsAnErrorNotAnAbort) {
  auto frame = [](const std::string& body) {
    return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const std::string uri = "file://" + path("train.log");
  write_file(dir_ / "first.in",
             frame(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}})") +
                 frame(R"({"jsonrpc":"2.0","method":"initialized","params":{}})") +
                 frame(R"({"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":")" + uri +
                       R"(","languageId":"log","version":1,"text":"Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nMemoryError\n"}}})") +
                 frame(R"({"jsonrpc":"2.0","id":2,"method":"workspace/executeCommand","params":{"command":"firstfault.openReport","arguments":[")" +
                       uri + R"("]}})"));
  write_file(dir_ / "last.in", frame(R"({"jsonrpc":"2.0","id":3,"method":"shutdown"})") +
                                   frame(R"({"jsonrpc":"2.0","method":"exit"})"));
  // The report's folder cannot be made (TMPDIR names nothing); the session is held open
  // until the diagnosis has come.
  const std::string cmd = "(cat " + path("first.in") + "; sleep 4; cat " + path("last.in") + ") | FIRSTFAULT_CACHE_DIR=" +
                          shared_cache().string() + " TMPDIR=" + path("no/such/folder") + " " + binary() + " lsp >" +
                          path("lsp.out") + " 2>" + path("lsp.err");
  const int status = std::system(cmd.c_str());
  const std::string out = read_file(path("lsp.out"));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << read_file(path("lsp.err"));
  EXPECT_NE(out.find(R"("id":2)"), std::string::npos) << out.substr(0, 3000);
  EXPECT_NE(out.find("cannot make a temporary folder"), std::string::npos) << out.substr(0, 3000);
  EXPECT_NE(out.find(R"("id":3)"), std::string::npos) << "the shutdown after it is answered";
}

TEST_F(Hostile, SymlinksInAFolderAreNotFollowedUnlessAsked) {
  // A run that completes, so that what the links lead to is all that could make it fail.
  write_file(dir_ / "logs" / "ok.log", read_file(std::string(FF_SOURCE_DIR) + "/tests/data/09_healthy__tee.log"));
  write_file(dir_ / "outside" / "secret.log", "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  fs::create_symlink(dir_ / "outside" / "secret.log", dir_ / "logs" / "link.log");
  fs::create_directory_symlink(dir_ / "outside", dir_ / "logs" / "linkdir");
  Outcome r;
  json j = diagnose({path("logs")}, &r);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(j["inputs"]["sources"].size(), 1u) << j["inputs"].dump();
  const std::string notes = j["inputs"]["notes"].dump();
  EXPECT_NE(notes.find("skipped symbolic link " + path("logs/link.log")), std::string::npos) << notes;
  EXPECT_NE(notes.find("skipped symbolic link " + path("logs/linkdir")), std::string::npos) << notes;
  EXPECT_TRUE(j["inputs"]["errors"].empty()) << "a note, not an error";
  for (const std::string flag : {"-L", "--follow"}) {
    j = diagnose({flag, path("logs")}, &r);
    EXPECT_EQ(r.rc, 1) << r.err;
    ASSERT_TRUE(j["primary"].is_object()) << r.out.substr(0, 300) << r.err;
    EXPECT_EQ(j["primary"]["rank"], 3);
  }
  // Named on the command line: followed.
  j = diagnose({path("logs/link.log")}, &r);
  EXPECT_EQ(r.rc, 1) << r.err;
  j = diagnose({path("logs/linkdir")}, &r);
  EXPECT_EQ(r.rc, 1) << r.err;
  // The other commands that read folders take the flag too.
  Outcome e = run({"events", "-L", path("logs")});
  EXPECT_EQ(e.rc, 1) << e.err;
  EXPECT_NE(e.out.find("secret.log"), std::string::npos) << e.out;
  EXPECT_EQ(run({"events", path("logs")}).out.find("secret.log"), std::string::npos);
  Outcome d = run({"diff", "--follow", path("logs"), "--control", path("logs/ok.log")});
  EXPECT_EQ(d.rc, 1) << d.err;
  EXPECT_NE(d.out.find("illegal memory access"), std::string::npos) << d.out;
  Outcome v = run({"verify", "-L", "--before", path("logs"), "--after", path("logs/ok.log")});
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

}  // namespace

namespace {

const char* const kEntry = R"(id: ID
title: TITLE
category: model-code
severity: fatal
phase: forward
frameworks: [pytorch]
summary: s
mechanism: m
affected: [any]
confirm: [look at the log]
root_cause: r
fix: [do this]
verify: run it again
references: [{url: 'https://example.org'}]
patterns:
  - {id: p, role: root, literal: 'MARKER', source_note: a test fixture}
examples: ['MARKER at step 3']
)";

std::string entry(const std::string& id, const std::string& title, const std::string& marker) {
  return replace_all(replace_all(replace_all(kEntry, "ID", id), "TITLE", title), "MARKER", marker);
}

// Issue 14: a --kb entry with invalid UTF-8 aborted `kb list --format json` (nlohmann's
// dump() throws on it; exit 134). It is now a load error with the file and line, and the
// output stays valid JSON.
TEST_F(Hostile, InvalidUtf8InAKbEntryIsALoadErrorNotACrash) {
  write_file(dir_ / "kb" / "bad.yaml", entry("mine.bad.title", "bad \xff\xfe title \xc0\xaf", "BAD_TITLE_MARKER"));
  write_file(dir_ / "kb" / "good.yaml", entry("mine.good", "good title", "GOOD_MARKER"));
  for (const std::string fmt : {"json", "text"}) {
    Outcome r = run({"--kb", path("kb"), "kb", "list", "--format", fmt});
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.err.find("bad.yaml:2"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("UTF-8"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("mine.good"), std::string::npos);
    if (fmt == "json") {
      EXPECT_FALSE(json::parse(r.out, nullptr, false).is_discarded()) << r.out.substr(0, 300);
    }
  }
  Outcome c = run({"--kb", path("kb"), "kb", "check"});
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_NE(c.out.find("bad.yaml:2"), std::string::npos) << c.out;
}

// Two --kb files with one id: reported (and counted by kb check), not one silently
// winning. Overriding an embedded entry with a --kb one of the same id is a feature and
// stays quiet.
TEST_F(Hostile, DuplicateIdsAcrossKbFilesAreReported) {
  write_file(dir_ / "kb" / "a.yaml", entry("mine.dup", "first", "DUP_MARKER_ONE"));
  write_file(dir_ / "kb" / "sub" / "b.yaml", entry("mine.dup", "second", "DUP_MARKER_TWO"));
  write_file(dir_ / "kb2" / "c.yaml", entry("mine.dup", "third", "DUP_MARKER_THREE"));
  Outcome r = run({"--kb", path("kb"), "--kb", path("kb2"), "kb", "list"});
  EXPECT_NE(r.err.find("duplicate id 'mine.dup'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("b.yaml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("c.yaml"), std::string::npos) << r.err;
  Outcome c = run({"--kb", path("kb"), "--kb", path("kb2"), "kb", "check"});
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_NE(c.out.find("2 error(s)"), std::string::npos) << c.out;
  // An override of an embedded entry: no duplicate error, and the override is used.
  write_file(dir_ / "kb3" / "oom.yaml", entry("pytorch.cuda.out-of-memory", "our own OOM page", "OUR_OOM_MARKER"));
  Outcome o = run({"--kb", path("kb3"), "explain", "pytorch.cuda.out-of-memory"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.err.find("duplicate"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("our own OOM page"), std::string::npos) << o.out.substr(0, 300);
}

}  // namespace

namespace {

// Issue 14, the caches (DESIGN.md, Safety: written atomically, never through a symlink,
// checked by a checksum, pruned only of their own files). Each test has a cache folder of
// its own, so each first run compiles (seconds); deadlines catch a hang.
class HostileCache : public Hostile {
 protected:
  void SetUp() override {
    Hostile::SetUp();
    cache_dir_ = path("cache");
  }
  // The cache's files after a run that filled it.
  std::vector<fs::path> cache_files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(cache_dir_)) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  void fill_cache() {
    Outcome r;
    json j = diagnose({kKilledLog}, &r, 120 * kSlow);
    expect_killed_rank1(j, r);
    ASSERT_FALSE(cache_files().empty());
  }
  static size_t lines_with(const std::string& text, const std::string& word) {
    size_t n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) n += line.find(word) != std::string::npos;
    return n;
  }
};

TEST_F(HostileCache, AFifoPlantedAtTheCachePathDoesNotHang) {
  fill_cache();
  for (const fs::path& p : cache_files()) {
    fs::remove(p);
    ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0);
  }
  Outcome r;
  json j = diagnose({kKilledLog}, &r, 60 * kSlow);  // opened without O_NONBLOCK, every run hung here
  expect_killed_rank1(j, r);
}

TEST_F(HostileCache, AnUnwritableCacheIsSaidOncePerRun) {
  // A "folder" below a regular file: nothing can be created there, also for root.
  write_file(dir_ / "file", "x");
  cache_dir_ = path("file/cache");
  for (int run_no = 0; run_no < 2; ++run_no) {
    Outcome r;
    json j = diagnose({kKilledLog}, &r, 120 * kSlow);
    expect_killed_rank1(j, r);
    EXPECT_EQ(lines_with(r.err, "cannot write the cache"), 1u) << r.err;
    EXPECT_NE(r.err.find("file/cache"), std::string::npos) << r.err;
  }
  // A read-only folder (as a user: root writes anyway).
  fs::create_directories(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  cache_dir_ = path("ro");
  if (!nobody_can_run())
    GTEST_SKIP() << "running as root, and nobody cannot be made the user or cannot reach " << binary();
  Outcome r = run({"diagnose", kKilledLog}, 120 * kSlow, as_nobody_when_root);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(lines_with(r.err, "cannot write the cache"), 1u) << r.err;
}

// A full disk (here a file-size limit of 256 KiB: room for the report, not for the
// caches, refused as a full file system refuses them): the run still answers, and says
// once that the cache could not be written.
TEST_F(HostileCache, AFullDiskIsSaidOnceAndTheRunAnswers) {
  cache_dir_ = path("fresh-cache");
  auto small_files = [] {
    struct rlimit lim {256 << 10, 256 << 10};
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    return ::setrlimit(RLIMIT_FSIZE, &lim) == 0;
  };
  Outcome r = run({"diagnose", "--format", "json", kKilledLog}, 120 * kSlow, small_files);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "rc " << r.rc << " out " << r.out.substr(0, 300) << " err " << r.err;
  expect_killed_rank1(j, r);
  EXPECT_EQ(lines_with(r.err, "cannot write the cache"), 1u) << r.err;
}

// Cache files of another user, or writable by others, are not read (a forged but
// well-formed cache would pass the checksums): they are compiled again and replaced.
TEST_F(HostileCache, CacheFilesOfAnotherUserAreNotTrusted) {
  cache_dir_ = path("shared-cache");
  Outcome first = run({"diagnose", kKilledLog}, 120 * kSlow);
  ASSERT_EQ(first.rc, 1) << first.err;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(cache_dir_)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  ASSERT_FALSE(files.empty());
  const bool root = ::geteuid() == 0;
  for (const auto& f : files) {
    // As root: hand them to nobody; as a user: make them writable by everyone.
    if (root) {
      ASSERT_EQ(::chown(f.c_str(), 65534, 65534), 0);
    } else {
      fs::permissions(f, fs::perms::others_write, fs::perm_options::add);
    }
  }
  Outcome second = run({"diagnose", kKilledLog}, 120 * kSlow);
  EXPECT_EQ(second.rc, 1) << second.err;
  for (const auto& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) continue;  // pruned: not read either
    EXPECT_EQ(st.st_uid, ::geteuid()) << f << " was kept, so it was read";
    EXPECT_EQ(st.st_mode & S_IWOTH, 0u) << f << " was kept, so it was read";
  }
}

TEST_F(HostileCache, PlantedSymlinksAreNotWrittenThrough) {
  fill_cache();
  write_file(dir_ / "victim", "precious\n");
  std::vector<std::string> names;
  for (const fs::path& p : cache_files()) names.push_back(p.string());
  for (const std::string& n : names) fs::remove(n);
  // Links at the cache files' paths, and at the temporary names the old writer used
  // (path + ".tmp" + pid: the child's pid is known in the child, before exec).
  for (const std::string& n : names) fs::create_symlink(dir_ / "victim", n);
  std::vector<std::string> tmp_bases;
  for (const std::string& n : names) tmp_bases.push_back(n + ".tmp");
  const std::string victim = path("victim");
  auto plant = [&] {
    const std::string pid = std::to_string(::getpid());
    for (const std::string& b : tmp_bases) {
      ::unlink((b + pid).c_str());
      if (::symlink(victim.c_str(), (b + pid).c_str()) != 0) return false;
    }
    return true;
  };
  Outcome r = run({"diagnose", kKilledLog}, 120 * kSlow, plant);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(read_file(dir_ / "victim"), "precious\n") << "written through a planted link";
  // The cache works again afterwards: regular files where the links were.
  Outcome again;
  json j = diagnose({kKilledLog}, &again, 60 * kSlow);
  expect_killed_rank1(j, again);
  EXPECT_EQ(read_file(dir_ / "victim"), "precious\n");
}

TEST_F(HostileCache, ABitFlippedInTheKbCacheIsNoticedAndTheCacheRewritten) {
  fill_cache();
  fs::path kb_file;
  for (const fs::path& p : cache_files()) {
    if (p.filename().string().rfind("kb-", 0) == 0) kb_file = p;
  }
  ASSERT_FALSE(kb_file.empty());
  const std::string good = read_file(kb_file);
  const std::string title = "CUDA illegal memory access";
  const size_t at = good.find(title);
  ASSERT_NE(at, std::string::npos);
  std::string bad = good;
  bad[at + 5] ^= 1;  // "illegal" -> "hllegal": same length, every count still right
  write_file(kb_file, bad);
  Outcome r = run({"kb", "list"}, 60 * kSlow);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(title), std::string::npos);
  EXPECT_EQ(r.out.find("CUDA hllegal"), std::string::npos) << "the damaged text was used";
  EXPECT_TRUE(read_file(kb_file) == good) << "the cache is written again";
}

TEST_F(HostileCache, PruningLeavesFilesThatAreNotTheCaches) {
  fs::create_directories(cache_dir_);
  // Files of someone else's that happen to be named like ours, older than anything the
  // run writes: pruning (8 kept per cache) used to remove them.
  for (int i = 0; i < 12; ++i) {
    for (const char* prefix : {"kb-", "patterns-"}) {
      const fs::path p = dir_ / "cache" / (std::string(prefix) + "notes-" + std::to_string(i) + ".txt");
      write_file(p, "my own file\n");
      fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(1 + i));
    }
  }
  fill_cache();
  size_t foreign = 0;
  for (const fs::path& p : cache_files()) foreign += p.filename().string().find("notes-") != std::string::npos;
  EXPECT_EQ(foreign, 24u);
}

}  // namespace
