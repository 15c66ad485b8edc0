// watch/follow.h — files and folders that grow while a job runs, read as they grow.
//
// A Follower is given the paths a user named (files, folders: a torchrun --log_dir whose
// attempt folders and per-rank files appear later) and, at every poll(), hands each file's
// new bytes to a FollowSink: once, in order, whatever happens to the file meanwhile. It
// reads with pread() at the offset it has reached (as lnav does; a mapping breaks when a
// file is cut) and keeps each file open, so it tells apart
//   - growth: the size passed the offset (the new bytes are read);
//   - truncation (logrotate's copytruncate, `> file`): the size fell below the offset, or
//     the file's first bytes changed; the file is read again from its start, and the sink
//     is told (a line being written when it was cut ends there);
//   - rotation by rename (logrotate's default, Python's RotatingFileHandler): the path
//     now names another file (inode); the old file is read to its end first, then the new
//     one from its start, as the same source;
//   - a path that disappears: the open file is still read; it is followed again when the
//     path comes back.
// Without -L (follow_symlinks) a symbolic link is never opened, except one the user named
// that was a link from the start: a link swapped in for a followed file is said and not
// read (the open file still is), and a reopened file must be the one looked at (same
// device and inode, O_NOFOLLOW), so that no other file's lines pass for this one's.
// A rotated copy that appears in a followed folder after the start (`train.log.1`,
// `train.log-20250101.gz`, the same inode under a new name) is not read again: its lines
// came through the file it was rotated from. Binary files are skipped with a note (as
// diagnose does); compressed ones with an error (diagnose reads them; watch cannot follow
// them, and what was not read makes the verdict incomplete).
//
// Thread-safety: one thread at a time. Failure behaviour: an unreadable file is an error
// given to the sink once; the others are still followed. Memory: one read buffer, and a
// few bytes per file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ff::watch {

class FollowSink {
 public:
  virtual ~FollowSink() = default;
  // A new file to follow, with the number the Follower knows it by (0, 1, ...).
  virtual void opened(uint32_t file, const std::string& name) = 0;
  // Its next bytes.
  virtual void data(uint32_t file, std::string_view bytes) = 0;
  // It was truncated or rotated: the bytes that follow start a new file's content.
  virtual void cut(uint32_t file, const std::string& why) = 0;
  // Something worth saying (a file skipped, a rotation seen).
  virtual void note(const std::string& text) = 0;
  // A file that cannot be read.
  virtual void error(const Error& e) = 0;
};

struct FollowOptions {
  size_t read_block = 1 << 20;             // bytes per pread
  uint64_t max_bytes_per_file = 16 << 20;  // per poll, so that one busy file cannot starve the others
  bool follow_symlinks = false;            // symbolic links met in a folder walk (-L)
  int rescan_ms = 500;                     // how often folders are walked for new files
};

struct PollStats {
  uint64_t bytes = 0;  // read in this poll
  size_t files = 0;    // files followed
  bool grew = false;   // some file had new bytes
};

class Follower {
 public:
  explicit Follower(std::vector<std::string> paths, FollowOptions options = {});
  ~Follower();
  Follower(const Follower&) = delete;
  Follower& operator=(const Follower&) = delete;

  // Walks the folders (when due), checks every file for growth, truncation and rotation,
  // and hands the new bytes to the sink.
  PollStats poll(FollowSink& sink, bool rescan_now = false);
  // Inputs named that were not there at the first poll (an error to say, once).
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  struct File;
  void walk(FollowSink& sink, bool first);
  // may_follow: the path may be a symbolic link (a link the user named; -L allows any).
  void add_file(FollowSink& sink, const std::string& path, bool at_start, bool may_follow);
  uint64_t read_new(FollowSink& sink, File& f);
  void check_path(FollowSink& sink, File& f);

  std::vector<std::string> paths_;
  FollowOptions options_;
  std::vector<std::unique_ptr<File>> files_;
  std::set<std::string> known_paths_;
  std::set<std::pair<dev_t, ino_t>> known_ids_;
  std::set<std::string> skipped_;
  std::vector<std::string> missing_;
  std::unique_ptr<char[]> buf_;
  int64_t last_walk_ms_ = -1;
  bool started_ = false;
};

// True when `name` (a file name, no folder) is a rotated copy of `base`: base.1,
// base.2.gz, base-20250101, base.2025-01-01, base.1.log (RotatingFileHandler, logrotate
// with dateext, with or without compression).
bool is_rotated_name(std::string_view name, std::string_view base);

}  // namespace ff::watch
