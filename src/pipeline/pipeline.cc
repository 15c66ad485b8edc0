// pipeline/pipeline.cc — what the subcommands share: the caches' folder, the scan's options,
// loading the KB and engine, writing a file the user named.
#include "pipeline/pipeline.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "pipeline/perf.h"
#include "base/cache.h"
#include "base/escape.h"
#include "kb/kb.h"
#include "scan/scan.h"

namespace ff::app {

std::string cache_dir(const Options& opt) {
  if (opt.no_cache) return {};
  if (const char* d = std::getenv("FIRSTFAULT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/firstfault";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/firstfault";
  return {};
}

scan::ScanOptions scan_options(const Options& opt) {
  scan::ScanOptions so;
  if (opt.max_bytes > 0) so.read.max_total_bytes = opt.max_bytes;
  so.read.follow_symlinks = opt.follow_symlinks;
  so.only_host = opt.only_host;
  so.only_unit = opt.only_unit;
  so.threads = opt.threads;
  if (opt.chunk_bytes > 0) so.chunk_bytes = opt.chunk_bytes;
  if (opt.map_min > 0) {
    so.read.map_min_bytes = opt.map_min;
    so.read.map_quiet_seconds = 0;
  }
  so.progress = make_progress_bar(opt);
  return so;
}

void print_errors(const std::vector<Error>& errors, const char* what) {
  for (const auto& e : errors) fmt::print(stderr, "firstfault: {}: {}\n", what, escape_for_terminal(e.to_string()));
}

Result<Loaded> load_everything(const Options& opt, bool quiet_kb_errors, KbFields fields) {
  Loaded l;
  kb::LoadOptions lo;
  lo.cache_dir = cache_dir(opt);
  lo.page_fields = fields == KbFields::kAll;
  kb::LoadResult r = kb::load_embedded(opt.kb_dirs, lo);
  if (!quiet_kb_errors) print_errors(r.errors, "knowledge base");
  l.kb_errors = std::move(r.errors);
  l.kb = std::make_unique<kb::KnowledgeBase>(std::move(r.kb));
  if (l.kb->entries.empty()) return make_error(ErrorCode::kInvalidKb, "the knowledge base has no usable entries");
  scan::EngineOptions eo;
  eo.cache_dir = cache_dir(opt);
  FF_TRY(l.engine, scan::Engine::create(*l.kb, eo));
  if (!quiet_kb_errors) print_errors(l.engine->warnings(), "knowledge base");
  return l;
}

bool use_colour(const Options& opt, bool tty) {
  const char* no_colour = std::getenv("NO_COLOR");
  return opt.colour == "always" || (opt.colour == "auto" && tty && !(no_colour && *no_colour));
}

std::optional<Loaded> load_or_say(const Options& opt, bool quiet_kb_errors, KbFields fields) {
  auto loaded = load_everything(opt, quiet_kb_errors, fields);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return std::nullopt;
  }
  return std::move(loaded).value();
}

// Writes a file the user named (-o) whole or not at all (base/cache.h), beside it. Returns
// the problem, or "" when written.
std::string write_output_file(const std::string& path, std::string_view bytes, mode_t mode, bool into_device) {
  struct stat st {};
  if (into_device && ::stat(path.c_str(), &st) == 0) {
    if (S_ISBLK(st.st_mode)) return "it is a block device (a report goes to a file, a character device or a pipe)";
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return std::strerror(errno);
      size_t done = 0;
      int err = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          err = n < 0 ? errno : EIO;
          break;
        }
        done += static_cast<size_t>(n);
      }
      if (::close(fd) != 0 && err == 0) err = errno;
      return err == 0 ? std::string() : std::strerror(err);
    }
  }
  const std::filesystem::path target(path);
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : std::string(".");
  const int err = write_file_atomically(dir, path, {bytes}, true, mode);
  return err == 0 ? std::string() : std::strerror(err);
}

}  // namespace ff::app
