#include "pipeline/perf.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "pipeline/pipeline.h"
#include "pipeline/terminal.h"
#include "base/escape.h"
#include "base/wrap.h"
#include "base/strings.h"

namespace ff::app {

void add_scan_flags(CLI::App* cmd, Options& opt) {
  cmd->add_option("--threads,-j", opt.threads,
                  "Scanning threads (default: one per core); the result is the same for any number")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_flag("--no-progress", opt.no_progress,
                "No progress bar on stderr (shown on a terminal for inputs over 100 MB)");
  // Bytes per chunk of lines, the unit of parallel work: tests use small chunks to cross
  // chunk boundaries often.
  cmd->add_option("--chunk-size", opt.chunk_bytes)->group("")->transform(CLI::AsSizeValue(false));
  // Files at least this large are read through mmap even when just written (tests: the
  // default maps files of 64 MiB and more that have not changed for 10 s).
  cmd->add_option("--map-min", opt.map_min)->group("")->transform(CLI::AsSizeValue(false));
}

void add_follow_flag(CLI::App* cmd, Options& opt) {
  cmd->add_flag(
      "-L,--follow", opt.follow_symlinks,
      "Follow symbolic links found in folders (by default they are skipped with a note, so a link in a "
      "log folder cannot make firstfault read files outside it); a link named as an input is always followed");
}

namespace {

constexpr uint64_t kProgressMin = 100ull << 20;

std::string human(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  if (u == 0) return fmt::format("{:.0f} {}", bytes, units[u]);
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

bool compressed_name(const std::string& p) {
  for (const char* ext : {".gz", ".tgz", ".zst", ".xz", ".bz2", ".tar"}) {
    if (ends_with(p, ext)) return true;
  }
  return false;
}

// Size on disk of the named inputs; `known` false when one is stdin or compressed (the
// bytes read then say nothing about how far along the scan is).
uint64_t input_size(const std::vector<std::string>& inputs, bool& known) {
  namespace fs = std::filesystem;
  uint64_t total = 0;
  known = true;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (in == "-") {
      known = false;
      continue;
    }
    if (fs::is_directory(in, ec)) {
      for (auto it = fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec)) {
          total += it->file_size(ec);
          if (compressed_name(it->path().string())) known = false;
        }
      }
    } else {
      uint64_t n = fs::file_size(in, ec);
      if (!ec) total += n;
      if (compressed_name(in)) known = false;
    }
  }
  return total;
}

class ProgressBar {
 public:
  ProgressBar(uint64_t total, bool known)
      : total_(total), known_(known), start_(std::chrono::steady_clock::now()), last_(start_) {}
  ~ProgressBar() {
    if (drawn_) std::fputs("\r\x1b[K", stderr);
  }
  void update(uint64_t bytes) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    if (!known_ && bytes < kProgressMin) return;
    double secs = std::chrono::duration<double>(now - start_).count();
    std::string rate = secs > 0 ? human(static_cast<double>(bytes) / secs) + "/s" : "";
    // Fits the terminal's width (read at each draw: it may be resized), so the line never
    // wraps and the erase at the end leaves nothing behind.
    const size_t cols = output_width(STDERR_FILENO);
    std::string line;
    if (known_ && total_ > 0) {
      double frac = std::min(1.0, static_cast<double>(bytes) / static_cast<double>(total_));
      const int width = cols == 0 ? 30 : static_cast<int>(std::clamp<size_t>(cols > 56 ? cols - 56 : 0, 5, 30));
      const int fill = static_cast<int>(frac * width);
      line = fmt::format("firstfault: [{}{}] {:3.0f}%  {} of {}  {}", std::string(fill, '#'),
                         std::string(width - fill, ' '), frac * 100, human(bytes), human(total_), rate);
    } else {
      line = fmt::format("firstfault: {} read  {}", human(bytes), rate);
    }
    if (cols > 0) line = fit_width(line, cols - 1);
    std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  uint64_t total_;
  bool known_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;  // the first draw comes after 100 ms
};

}  // namespace

std::function<void(uint64_t)> make_progress_bar(const Options& opt) {
  if (opt.no_progress || !isatty(STDERR_FILENO)) return {};
  bool known = false;
  uint64_t total = input_size(opt.inputs, known);
  if (known && total < kProgressMin) return {};
  auto bar = std::make_shared<ProgressBar>(total, known);
  return [bar](uint64_t bytes) { bar->update(bytes); };
}

namespace {

bool is_meta(char c) {
  switch (c) {
    case '.':
    case '^':
    case '$':
    case '|':
    case '(':
    case ')':
    case '[':
    case ']':
    case '{':
    case '}':
    case '*':
    case '+':
    case '?':
    case '\\': return true;
  }
  return false;
}

}  // namespace

std::string pattern_literal(const kb::Pattern& p) {
  if (!p.literal.empty()) return p.literal;
  const std::string& rx = p.regex;
  std::string best, run;
  auto close = [&] {
    if (run.size() > best.size()) best = run;
    run.clear();
  };
  int depth = 0;  // inside a group: a run there may sit in an alternative; still a literal
  for (size_t i = 0; i < rx.size(); ++i) {
    char c = rx[i];
    // A quantifier that allows zero takes back the character it applies to.
    auto optional_next = [&](size_t j) {
      return j < rx.size() && (rx[j] == '*' || rx[j] == '?' || (rx[j] == '{' && j + 1 < rx.size() && rx[j + 1] == '0'));
    };
    if (c == '\\' && i + 1 < rx.size()) {
      char e = rx[i + 1];
      ++i;
      if (!((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))) {
        if (optional_next(i + 1)) {
          close();
        } else {
          run.push_back(e);
        }
      } else {
        close();  // \d, \w, \s, \b, \n ...: not a fixed character
      }
      continue;
    }
    if (c == '[') {
      close();
      size_t j = i + 1;
      if (j < rx.size() && rx[j] == '^') ++j;
      if (j < rx.size() && rx[j] == ']') ++j;
      while (j < rx.size() && rx[j] != ']') j += (rx[j] == '\\') ? 2 : 1;
      i = j;
      continue;
    }
    if (c == '(') {
      close();
      ++depth;
      if (i + 1 < rx.size() && rx[i + 1] == '?') {
        // (?:  (?P<name>  (?i)  (?i: ... skip the group's header
        size_t j = i + 2;
        if (j < rx.size() && rx[j] == 'P' && j + 1 < rx.size() && rx[j + 1] == '<') {
          j = rx.find('>', j);
          i = j == std::string::npos ? rx.size() : j;
        } else {
          while (j < rx.size() && rx[j] != ':' && rx[j] != ')') ++j;
          if (j < rx.size() && rx[j] == ')') --depth;
          i = j;
        }
      }
      continue;
    }
    if (c == '{') {
      close();
      size_t j = rx.find('}', i);
      i = j == std::string::npos ? rx.size() : j;
      continue;
    }
    if (is_meta(c)) {  // '+' keeps the character before it (at least once); the rest end the run
      close();
      if (c == ')') --depth;
      continue;
    }
    if (optional_next(i + 1)) {
      close();
      continue;
    }
    run.push_back(c);
  }
  close();
  return std::string(trim(best));
}

int run_kb_literals(const Options& opt) {
  auto loaded = load_or_say(opt, false, KbFields::kAll);
  if (!loaded) return 2;
  // One line per pattern that has a literal of 3 bytes or more (shorter ones would match
  // nearly every line of a log and say nothing); repeats are printed once.
  std::set<std::string> seen;
  std::string out;
  for (const auto& e : loaded->kb->entries) {
    for (const auto& p : e.patterns) {
      std::string lit = pattern_literal(p);
      if (lit.size() < 3 || lit.find('\n') != std::string::npos || !seen.insert(lit).second) continue;
      out += lit;
      out += '\n';
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace ff::app
