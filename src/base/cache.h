// base/cache.h — the files of firstfault's on-disk caches (the parsed KB, the compiled
// pattern databases). A cache directory may be shared with whoever else can write there
// (DESIGN.md, Safety: caches are written atomically, never through a symlink, checked by a
// checksum, and pruned only of their own files), so:
//   - a cache file is opened without following a link and without blocking (a FIFO
//     planted at its path hung every run), and only a regular file is read;
//   - it is written to a fresh mkstemp name in the directory, then renamed into place
//     (a fixed temporary name could be a planted link to another file);
//   - pruning removes only files that begin with the cache's own magic bytes;
//   - a cache that cannot be written is said once per run (take_cache_problem), not
//     silently recompiled every time.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace ff {

// A descriptor for reading the regular file at path (O_NOFOLLOW | O_NONBLOCK), its size
// in *size; -1 when there is none, or it is a link, a FIFO or anything else, or it is
// another user's (not root's) or writable by group or others.
int open_cache_file(const std::string& path, size_t* size);

// Writes the pieces, one after the other, to a new temporary file in dir (which must
// exist), then renames it to path: a reader sees the old file or the whole new one, and a
// link at path is replaced, not followed. The file is private (0600, mkstemp's) unless
// `readable` (`mode`, 0666 by default, less the umask, as a file the user asked for). 0,
// or the errno.
int write_file_atomically(const std::string& dir, const std::string& path,
                          std::initializer_list<std::string_view> pieces, bool readable, mode_t mode = 0666);

// Writes the pieces, one after the other, to path atomically (a new temporary file in
// dir, then rename; dir is created when missing). False when it could not: the first such
// problem of the process is kept for take_cache_problem().
bool write_cache_file(const std::string& dir, const std::string& path, std::initializer_list<std::string_view> pieces);

// The first cache write that failed in this process, as "cannot write the cache in DIR:
// REASON", once (later calls return nothing); for the one line a run prints about it.
std::optional<std::string> take_cache_problem();

// Keeps the `keep` most recently written files named `prefix`* in `dir` that begin with
// `magic`, and removes the rest of those (caches keyed by content hash would otherwise
// grow with every KB edit). Files that do not begin with `magic` are not ours: left alone.
void prune_cache(const std::string& dir, const std::string& prefix, std::string_view magic, size_t keep);

// A 64-bit checksum of data for finding damage in a cache file (not against an adversary,
// who can write the whole file): FNV-1a's xor-multiply over 8-byte words (each step
// folding the high bits down, which a word-wide multiply never moves), then FNV-1a over
// the tail bytes; it reads a megabyte in a fraction of byte-wise FNV's ~1 ms.
uint64_t cache_checksum(std::string_view data);

}  // namespace ff
