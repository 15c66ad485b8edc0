#include "watch/follow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "io/io.h"

namespace ff::watch {

namespace fs = std::filesystem;

namespace {

constexpr size_t kHead = 64;          // first bytes kept to tell a rewritten file
constexpr size_t kMaxFiles = 100000;  // files followed at most

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// gzip, zstd, xz, bzip2: diagnose reads them; a growing one cannot be followed.
bool looks_compressed(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  return starts("\x1f\x8b") || starts("\x28\xb5\x2f\xfd") ||
         starts(
             "\xfd"
             "7zXZ") ||
         starts("BZh");
}

}  // namespace

bool is_rotated_name(std::string_view name, std::string_view base) {
  if (name.size() <= base.size() || name.substr(0, base.size()) != base) return false;
  std::string_view rest = name.substr(base.size());
  for (std::string_view ext : {".gz", ".xz", ".zst", ".bz2"}) {
    if (rest.size() > ext.size() && rest.substr(rest.size() - ext.size()) == ext) {
      rest.remove_suffix(ext.size());
      break;
    }
  }
  if (rest.size() < 2 || (rest[0] != '.' && rest[0] != '-' && rest[0] != '_')) return false;
  rest.remove_prefix(1);
  if (all_digits(rest)) return true;  // .1, -20250101
  if (rest.size() > 4 && rest.substr(rest.size() - 4) == ".log" && all_digits(rest.substr(0, rest.size() - 4)))
    return true;  // .1.log
  // .2025-01-01 (logrotate dateext with a format), -2025-01-01-1700
  std::string digits;
  for (char c : rest) {
    if (c == '-' || c == '_') continue;
    digits += c;
  }
  return digits.size() >= 8 && all_digits(digits);
}

struct Follower::File {
  std::string path;
  uint32_t id = 0;
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t offset = 0;
  std::string head;        // the first bytes read (up to kHead)
  bool sniffed = false;    // the first block was checked for binary or compressed data
  bool dead = false;       // skipped or unreadable: not read any more
  bool path_gone = false;  // the path names nothing (said once)
  bool may_follow = false;  // -L, or the user named this path and it was a link then
  bool link_said = false;   // "now a symbolic link; not followed" was said
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};

Follower::Follower(std::vector<std::string> paths, FollowOptions options)
    : paths_(std::move(paths)), options_(options), buf_(new char[std::max<size_t>(options.read_block, 4096)]) {
  options_.read_block = std::max<size_t>(options_.read_block, 4096);
}

Follower::~Follower() = default;

// Opens `path` to read it. Unless `may_follow`, a symbolic link at the path is not
// followed (O_NOFOLLOW): a link swapped in for a followed file, or planted in a followed
// folder between the walk and the open, would otherwise show another file's lines (one the
// link's maker could not read) as this one's.
static int open_followed(const std::string& path, bool may_follow) {
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (may_follow ? 0 : O_NOFOLLOW));
}

void Follower::add_file(FollowSink& sink, const std::string& path, bool at_start, bool may_follow) {
  if (known_paths_.count(path) != 0 || skipped_.count(path) != 0) return;
  if (files_.size() >= kMaxFiles) {
    if (skipped_.insert(path).second && skipped_.size() == 1)
      sink.note("more than " + std::to_string(kMaxFiles) + " files: the others are not followed");
    return;
  }
  may_follow = may_follow || options_.follow_symlinks;
  const int fd = open_followed(path, may_follow);
  if (fd < 0 && errno == ELOOP) {
    skipped_.insert(path);
    sink.note(path + ": a symbolic link; not followed (use -L)");
    return;
  }
  if (fd < 0) {
    skipped_.insert(path);
    sink.error(make_error(ErrorCode::kIo, std::string("cannot open: ") + std::strerror(errno), {path, 0, ""}));
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    skipped_.insert(path);
    sink.note(path + ": not a regular file; not followed");
    return;
  }
  if (!at_start && known_ids_.count({st.st_dev, st.st_ino}) != 0) {
    // A followed file under a new name (rotated by rename): its bytes come through the
    // file already open.
    ::close(fd);
    skipped_.insert(path);
    return;
  }
  if (!at_start) {
    const fs::path p(path);
    const std::string name = p.filename().string();
    for (const auto& f : files_) {
      const fs::path q(f->path);
      if (q.parent_path() == p.parent_path() && is_rotated_name(name, q.filename().string())) {
        ::close(fd);
        skipped_.insert(path);
        sink.note(path + ": a rotated copy of " + f->path + ", whose lines were read there; not read again");
        return;
      }
    }
  }
  auto f = std::make_unique<File>();
  f->path = path;
  f->id = static_cast<uint32_t>(files_.size());
  f->fd = fd;
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  f->may_follow = may_follow;
  known_paths_.insert(path);
  known_ids_.insert({st.st_dev, st.st_ino});
  sink.opened(f->id, path);
  files_.push_back(std::move(f));
}

void Follower::walk(FollowSink& sink, bool first) {
  for (const std::string& in : paths_) {
    struct stat st {};
    if (::stat(in.c_str(), &st) != 0) {
      if (first) missing_.push_back(in);
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      // A named file that appears later is still the one asked for. A link the user named
      // is followed, if it was one from the start; one that appears later is not (-L).
      struct stat lst {};
      const bool named_link = first && ::lstat(in.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      add_file(sink, in, true, named_link);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (first) sink.note(in + ": not a file or folder; not followed");
      continue;
    }
    std::vector<std::string> found;
    std::error_code ec;
    auto opts = fs::directory_options::skip_permission_denied;
    if (options_.follow_symlinks) opts |= fs::directory_options::follow_directory_symlink;
    fs::recursive_directory_iterator it(in, opts, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code e2;
      const fs::file_status s = it->symlink_status(e2);
      if (e2) continue;
      if (fs::is_symlink(s)) {
        if (!options_.follow_symlinks) {
          if (first && skipped_.insert(it->path().string()).second)
            sink.note(it->path().string() + ": a symbolic link; not followed (use -L)");
          continue;
        }
        if (!fs::is_regular_file(it->status(e2))) continue;
      } else if (!fs::is_regular_file(s)) {
        continue;
      }
      found.push_back(it->path().string());
    }
    std::sort(found.begin(), found.end());
    for (const auto& p : found) add_file(sink, p, first, false);
  }
}

uint64_t Follower::read_new(FollowSink& sink, File& f) {
  if (f.dead || f.fd < 0) return 0;
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return 0;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  bool cut = size < f.offset;
  if (!cut && !f.head.empty()) {
    // Cut and written again past where we were (between two polls): its first bytes differ.
    char head[kHead];
    const ssize_t n = ::pread(f.fd, head, f.head.size(), 0);
    cut = n >= 0 && (static_cast<size_t>(n) < f.head.size() || std::memcmp(head, f.head.data(), f.head.size()) != 0);
  }
  if (cut) {
    sink.cut(f.id, "truncated");
    sink.note(f.path + ": truncated at " + std::to_string(f.offset) + " bytes; read again from its start");
    f.offset = 0;
    f.head.clear();
  }
  uint64_t got = 0;
  while (got < options_.max_bytes_per_file) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(options_.read_block, options_.max_bytes_per_file - got));
    const ssize_t n = ::pread(f.fd, buf_.get(), want, static_cast<off_t>(f.offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      f.dead = true;
      sink.error(make_error(ErrorCode::kIo, std::string("read failed: ") + std::strerror(errno), {f.path, 0, ""}));
      break;
    }
    if (n == 0) break;
    std::string_view bytes(buf_.get(), static_cast<size_t>(n));
    if (!f.sniffed && f.offset == 0) {
      f.sniffed = true;
      if (looks_compressed(bytes)) {
        f.dead = true;
        sink.error(
            make_error(ErrorCode::kFormat, "compressed: not followed (firstfault diagnose reads it)", {f.path, 0, ""}));
        break;
      }
      if (io::looks_binary(bytes.substr(0, 8192))) {
        f.dead = true;
        sink.note(f.path + ": binary; not followed");
        break;
      }
    }
    if (f.offset < kHead) {
      const size_t keep = std::min(bytes.size(), kHead - static_cast<size_t>(f.offset));
      if (f.head.size() == f.offset) f.head.append(bytes.substr(0, keep));
    }
    sink.data(f.id, bytes);
    f.offset += static_cast<uint64_t>(n);
    got += static_cast<uint64_t>(n);
  }
  return got;
}

void Follower::check_path(FollowSink& sink, File& f) {
  if (f.dead) return;
  struct stat st {};
  // Without -L the path itself is looked at (lstat): a link swapped in for the file is
  // not the file rotated.
  if ((f.may_follow ? ::stat(f.path.c_str(), &st) : ::lstat(f.path.c_str(), &st)) != 0) {
    if (!f.path_gone) sink.note(f.path + ": removed or renamed; the open file is still read");
    f.path_gone = true;
    return;
  }
  if (st.st_dev == f.dev && st.st_ino == f.ino) {
    f.path_gone = false;
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    if (!f.link_said) sink.note(f.path + ": now a symbolic link; not followed (use -L); the open file is still read");
    f.link_said = true;
    return;
  }
  if (!S_ISREG(st.st_mode)) return;
  const int fd = open_followed(f.path, f.may_follow);
  if (fd < 0) return;  // tried again at the next poll
  // What was opened is what was looked at: the same device and inode (not a link swapped
  // in between the two).
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_dev != st.st_dev ||
      opened.st_ino != st.st_ino) {
    ::close(fd);
    return;  // tried again at the next poll
  }
  f.link_said = false;
  // Rotated: the old file's last bytes first (all of them), then the new file from its start.
  const uint64_t budget = options_.max_bytes_per_file;
  options_.max_bytes_per_file = UINT64_MAX;
  read_new(sink, f);
  options_.max_bytes_per_file = budget;
  ::close(f.fd);
  f.fd = fd;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.offset = 0;
  f.head.clear();
  f.sniffed = false;
  f.path_gone = false;
  known_ids_.insert({st.st_dev, st.st_ino});
  sink.cut(f.id, "rotated");
  sink.note(f.path + ": rotated; the new file is read from its start");
}

PollStats Follower::poll(FollowSink& sink, bool rescan_now) {
  PollStats ps;
  const int64_t now = now_ms();
  if (!started_ || rescan_now || last_walk_ms_ < 0 || now - last_walk_ms_ >= options_.rescan_ms) {
    walk(sink, !started_);
    last_walk_ms_ = now;
    started_ = true;
  }
  for (auto& f : files_) {
    check_path(sink, *f);
    const uint64_t n = read_new(sink, *f);
    ps.bytes += n;
    ps.grew = ps.grew || n > 0;
  }
  ps.files = files_.size();
  return ps;
}

}  // namespace ff::watch
