// tests/harness.h — what the end-to-end tests share: run the firstfault binary as a user
// does (shell, exit code, stdout and stderr apart), a per-test temporary folder, and small
// file helpers. FF_BINARY and FF_SOURCE_DIR come from the test's compile definitions.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ff::test {

namespace fs = std::filesystem;

struct Outcome {
  int rc = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// The lines of a text, without their '\n' (a last line without one included).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A file of tests/data (real logs), shell-quoted.
inline std::string data(const std::string& name) { return quote(std::string(FF_SOURCE_DIR) + "/tests/data/" + name); }

// One KB/pattern-database cache per test binary, removed when it ends: building the cache
// is most of a run's start-up (seconds under ASan, `make test-asan`), and no test that uses
// this harness is about the cache.
inline const fs::path& shared_cache_dir() {
  static const fs::path dir = fs::temp_directory_path() / ("ff-test-cache-" + std::to_string(::getpid()));
  return dir;
}
class SharedCacheCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(shared_cache_dir(), ec);
  }
};
inline ::testing::Environment* const kSharedCacheCleanup = ::testing::AddGlobalTestEnvironment(new SharedCacheCleanup);

// Runs `firstfault ARGS` (ARGS already quoted) with the shared cache, stdin from
// `stdin_file` or /dev/null, NO_COLOR set, no history kept (FIRSTFAULT_NO_HISTORY: no test
// here is about it, and none may see another's); `env` ("NAME=value ...") comes last and
// wins. stdout and stderr are captured apart.
inline Outcome run_firstfault(const std::string& args, const fs::path& work, const std::string& stdin_file = "",
                              const std::string& env = "") {
  fs::create_directories(work);
  std::string out = (work / "stdout").string(), err = (work / "stderr").string();
  // COLUMNS= : the layout of a pipe, whatever the caller's environment says (app/terminal.h).
  // XDG_STATE_HOME: what a command keeps in the state folder (run's output) stays in `work`.
  std::string cmd = "FIRSTFAULT_CACHE_DIR=" + quote(shared_cache_dir().string()) + " NO_COLOR=1 COLUMNS= FIRSTFAULT_NO_HISTORY=1 XDG_STATE_HOME=" + quote((work / "state").string()) + " " + env + " " + FF_BINARY + " " + args +
                    (stdin_file.empty() ? " </dev/null" : " <" + quote(stdin_file)) + " >" + quote(out) + " 2>" + quote(err);
  int status = std::system(cmd.c_str());
  Outcome r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// A fixture with a fresh temporary folder per test, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ff-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Outcome run(const std::string& args, const std::string& stdin_file = "") { return run_firstfault(args, dir_, stdin_file); }
  fs::path dir_;
};

}  // namespace ff::test
