// io.walk.cc — named inputs: stdin, files (read() or mapped), folders walked in name
// order (hidden entries and symbolic links skipped unless followed, loops detected);
// read_inputs.
#include <fcntl.h>

#include <ctime>
#include <set>

#include "io/io_internal.h"

namespace ff::io {
namespace detail {
namespace {

// Opens path and processes it. In a directory walk, a name that is (or became) something
// other than a regular file is skipped: opening a FIFO nobody writes to would hang.
void read_file(Context& c, const std::string& path, Origin origin, Tally& tally) {
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
  if (origin == Origin::kWalk) flags |= O_NONBLOCK;
  // Not through a link the walk did not see (the name was swapped for one since).
  const bool no_links = origin == Origin::kWalk && !c.options.follow_symlinks;
  if (no_links) flags |= O_NOFOLLOW;
  UniqueFd fd(::open(path.c_str(), flags));
  if (fd.get() < 0) {
    if (no_links && errno == ELOOP) {
      c.note("skipped symbolic link " + path + " (-L/--follow follows links in folders)");
      return;
    }
    c.error(errno_error(errno, path), tally);
    return;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    c.error(errno_error(errno, path), tally);
    return;
  }
  if (origin == Origin::kWalk && !S_ISREG(st.st_mode)) {
    c.note("skipped " + path + ": not a regular file");
    return;
  }
  SourceInfo info{path, 0, "plain"};
  if (S_ISREG(st.st_mode)) {
    info.size_hint = static_cast<uint64_t>(st.st_size);
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);  // a hint; failure is harmless
  }
  // A large regular file that nobody has written to for a while is read through mmap; a
  // file still being written (or one that could shrink under us, which would fault) is
  // read with read().
  std::optional<Mappable> map;
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) >= c.options.map_min_bytes &&
      ::time(nullptr) - st.st_mtime >= c.options.map_quiet_seconds)
    map = Mappable{fd.get(), static_cast<uint64_t>(st.st_size)};
  FdReader reader(fd.get(), map, S_ISREG(st.st_mode));
  process_stream(c, reader, std::move(info), "", 0, origin, tally);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

using VisitedDirs = std::set<std::pair<dev_t, ino_t>>;

// Depth-first, entries sorted by name (bytewise) so the order is the same on every
// filesystem. Hidden entries are skipped. Symlinks are skipped with a note unless
// ReadOptions::follow_symlinks; followed, a directory reached twice (a symlink loop, or
// two links to one place) is read once. `top`: the directory named as an input (followed
// if it is a link, as any input).
void walk_dir(Context& c, const std::string& dir, VisitedDirs& visited, Tally& tally, bool top = true) {
  std::vector<std::string> names;
  {
    // The directory is read fully and closed before recursing, so deep trees don't hold
    // one descriptor per level. Below the top, not through a link that replaced the
    // directory since it was looked at.
    const bool no_links = !top && !c.options.follow_symlinks;
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (no_links ? O_NOFOLLOW : 0));
    DirPtr d(dfd >= 0 ? ::fdopendir(dfd) : nullptr);
    if (!d) {
      const int err = errno;
      if (dfd >= 0) ::close(dfd);
      if (no_links && (err == ELOOP || err == ENOTDIR)) {
        c.note("skipped symbolic link " + dir + " (-L/--follow follows links in folders)");
      } else {
        c.error(errno_error(err, dir), tally);
      }
      return;
    }
    for (;;) {
      errno = 0;
      dirent* e = ::readdir(d.get());
      if (e == nullptr) {
        if (errno != 0) c.error(errno_error(errno, dir), tally);
        break;
      }
      if (e->d_name[0] == '.') continue;  // hidden, and "." / ".."
      names.emplace_back(e->d_name);
    }
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (c.stopped) return;
    const std::string path = join_path(dir, name);
    struct stat st {};
    if (!c.options.follow_symlinks) {
      if (::lstat(path.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT) {
          c.note("skipped " + path + ": removed while reading the directory");
        } else {
          c.error(errno_error(err, path), tally);
        }
        continue;
      }
      if (S_ISLNK(st.st_mode)) {
        c.note("skipped symbolic link " + path + " (-L/--follow follows links in folders)");
        continue;
      }
    } else if (::stat(path.c_str(), &st) != 0) {
      const int err = errno;
      struct stat lst {};
      if (err == ENOENT && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
        c.note("skipped broken symbolic link " + path);
      } else if (err == ELOOP) {
        c.note("skipped " + path + ": too many levels of symbolic links");
      } else if (err == ENOENT) {
        c.note("skipped " + path + ": removed while reading the directory");
      } else {
        c.error(errno_error(err, path), tally);
      }
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!visited.insert({st.st_dev, st.st_ino}).second) {
        c.note("skipped " + path + ": directory already visited (symbolic link loop)");
        continue;
      }
      walk_dir(c, path, visited, tally, false);
    } else if (S_ISREG(st.st_mode)) {
      read_file(c, path, Origin::kWalk, tally);
    } else {
      c.note("skipped " + path + ": not a regular file");
    }
  }
}

void read_input(Context& c, const std::string& input) {
  Tally tally;
  if (input == "-") {
    SourceInfo info{"<stdin>", 0, "plain"};
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {  // `firstfault - < x.log`
      info.size_hint = static_cast<uint64_t>(st.st_size);
    }
    FdReader reader(STDIN_FILENO);  // not ours to close
    process_stream(c, reader, std::move(info), "", 0, Origin::kNamed, tally);
    return;
  }
  struct stat st {};
  if (::stat(input.c_str(), &st) != 0) {
    c.error(errno_error(errno, input), tally);
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    read_file(c, input, Origin::kNamed, tally);
    return;
  }
  VisitedDirs visited;
  visited.insert({st.st_dev, st.st_ino});
  walk_dir(c, input, visited, tally);
  // Only when nothing inside already explained it (an unreadable file or subdirectory has
  // its own error): one error per problem.
  if (tally.sources == 0 && tally.errors == 0 && !c.stopped) {
    std::string why = tally.binary > 0 ? " (" + std::to_string(tally.binary) + " binary files skipped)" : "";
    c.error(make_error(ErrorCode::kNotFound, "no log files in directory" + why, at(input)), tally);
  }
}
}  // namespace

}  // namespace detail

using namespace detail;  // NOLINT(google-build-using-namespace): the module's own internals

InputReport read_inputs(const std::vector<std::string>& inputs, ByteSink& sink, const ReadOptions& options) {
  InputReport report;
  Context c{sink, options, report, {}, 0, false};
  c.buffer.n = std::clamp(options.chunk_size, kMinReadBuffer, kMaxReadBuffer);
  c.buffer.bytes.reset(new char[c.buffer.n]);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (c.stopped || c.check_interrupt()) {
      const std::string why = interrupted() ? std::string(interrupt_name(interrupted()))
                                            : "read limit of " + format_size(options.max_total_bytes) + " reached";
      c.note(why + "; " + std::to_string(inputs.size() - i) + " more input(s) not read");
      break;
    }
    read_input(c, inputs[i]);
  }
  return report;
}

}  // namespace ff::io
