// io/io.h — byte sources: the only module that opens files.
//
// read_inputs() expands what the user named (files, directories, compressed files,
// tar bundles, "-" for stdin) into *sources* — one logical log each — and streams each
// source's bytes to a ByteSink in a deterministic order (inputs in the order given;
// directory entries sorted by name; tar members in archive order, streamed so that
// nothing is buffered and a piped archive works). Several inputs form one job.
//
//   struct Collect : io::ByteSink { ... };
//   Collect sink;
//   io::InputReport rep = io::read_inputs({"logs/", "node1.log.gz"}, sink, {});
//   for (const Error& e : rep.errors) fmt::print(stderr, "{}\n", e.to_string());
//
// Failure behaviour: nothing here aborts the run. A missing or unreadable input, a
// binary file, a truncated archive are recorded in InputReport::errors (with the path)
// and the other inputs are still read. A source that fails midway has already delivered
// the bytes read before the failure, and end() receives the error.
// Thread-safety: read_inputs() is reentrant; the sink is called from the calling thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ff::io {

struct SourceInfo {
  // What the user sees: the path as given, or "bundle.tar.gz:node1/rank3.log" for an
  // archive member, or "<stdin>".
  std::string name;
  // Size on disk (compressed size for compressed files); 0 when unknown (stdin, FIFOs).
  uint64_t size_hint = 0;
  // "plain", "gzip", "zstd", "xz", "bzip2", "tar", "tar+gzip", ... (for messages and stats).
  std::string encoding;
};

// What a source that shrank while it was read fails with (logrotate's copytruncate).
inline constexpr const char* kShrankMessage = "file shrank while being read";

// A window of a read-only mapping of a file, mapped for as long as someone holds it. A
// file that shrinks under a mapping makes every later touch of the pages past its new end
// raise SIGBUS; io catches that fault for its own windows, maps zero-filled pages in their
// place (the read that faulted then finds zeros) and marks the window. A sink that has
// read a window asks shrank() and, when true, fails the source with kShrankMessage.
class MappedWindow {
 public:
  virtual ~MappedWindow() = default;
  virtual bool shrank() const = 0;
};

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void begin(const SourceInfo& source) = 0;
  // Called with consecutive pieces of the source's (decompressed) bytes. Chunk
  // boundaries are arbitrary: a line can be split across calls.
  virtual void data(std::string_view chunk) = 0;
  // Called once per begin(); status is not ok when reading failed midway (the bytes
  // delivered before stay valid).
  virtual void end(const SourceInfo& source, const Status& status) = 0;
  // Optional: where io should read the next bytes of the current source (at least `size`
  // bytes of room), so that a sink that keeps the bytes needs no copy; data() then gets
  // views into it. nullptr (the default): io reads into its own buffer.
  virtual char* data_buffer(size_t size) { return nullptr; }
  // Optional: a sink that keeps bytes past data() may take a large, quiet, plain file as
  // windows of a read-only mapping (no copy at all): data_mapped() gets consecutive
  // windows instead of data() calls, and `keep` holds the window mapped for as long as
  // the sink keeps a copy of it (see MappedWindow for a file that shrinks meanwhile).
  // False (the default): data() only.
  virtual bool accepts_mapped() const { return false; }
  virtual void data_mapped(std::string_view window, std::shared_ptr<const MappedWindow> keep) { data(window); }
};

struct ReadOptions {
  size_t chunk_size = 1 << 20;              // bytes per data() call at most
  uint64_t max_total_bytes = 256ull << 30;  // decompressed bytes over all sources (tar/zip bombs)
  uint64_t max_archive_members = 100000;    // members read from one archive
  bool skip_binary = true;                  // skip sources whose first block is binary
  // A plain regular file at least this large, not modified for map_quiet_seconds, goes to
  // a sink that accepts_mapped() as windows of a mapping (a file still being written is
  // read with read(): it is the one likely to be truncated, see MappedWindow).
  uint64_t map_min_bytes = 64 << 20;
  int map_quiet_seconds = 10;
  // Follow symbolic links found in a directory walk (-L/--follow). Off: they are skipped
  // with a note, so a link planted in a log folder cannot make firstfault read (and
  // report on) files outside the inputs named, as find and ripgrep do. A link named as an
  // input is always followed.
  bool follow_symlinks = false;
};

struct InputReport {
  int sources_read = 0;            // sources that delivered at least begin()/end()
  uint64_t bytes_read = 0;         // decompressed bytes delivered to the sink
  std::vector<Error> errors;       // one per problem, with the path in Error::where.file
  std::vector<std::string> notes;  // non-error remarks ("skipped binary file x.pt")
};

InputReport read_inputs(const std::vector<std::string>& inputs, ByteSink& sink, const ReadOptions& options = {});

// Inputs that arrive while they are read (the files of an upload, each written into a
// pipe as its bytes come): next() blocks until the next stream is there and hands over a
// readable descriptor and the name it is known by, or says there are no more. Each stream
// is read like stdin (sniffed for compression and tar, binary skipped with an error); its
// descriptor is closed when it has been read, or when reading it stopped early (a limit,
// a binary file), so the writer's next write fails with EPIPE instead of blocking.
class StreamFeed {
 public:
  virtual ~StreamFeed() = default;
  virtual bool next(std::string& name, int& fd) = 0;
};
InputReport read_streams(StreamFeed& feed, ByteSink& sink, const ReadOptions& options = {});

// True when the block looks like binary data rather than text (NUL-heavy or mostly
// non-printable). A few stray NULs or invalid UTF-8 bytes in a log are still text.
bool looks_binary(std::string_view first_block);

}  // namespace ff::io
