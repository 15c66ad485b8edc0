// io/io_internal.h — what the io module's files share and no other module needs.
//
// Everything is built on one pull interface, Reader (read up to n bytes; 0 at the end;
// an Error when the stream fails). Readers stack:
//
//   FdReader          a file descriptor: regular file, FIFO, stdin. Plain files go straight
//                     from read() to the sink, with no library in between (below).
//   SniffedReader     reads the first block (kSniffSize) to decide what the stream is, then
//                     replays it, so pipes never need to seek (io.sniff.cc).
//   DecompressReader  gzip / zstd / xz through zlib, libzstd and liblzma directly (io.codecs.cc).
//   Bzip2Reader       bzip2 through libarchive's filter (io.codecs.cc).
//   MemberReader      the data of one tar member, through libarchive's tar reader, which
//                     pulls the archive from any Reader below it (io.archive.cc).
//   JournalReader     a journal export read as syslog lines (io.sniff.cc, journal.h).
//
// process_stream() (io.sniff.cc) sniffs a Reader and either wraps it in a decompressor and
// recurses, walks it as a tar (each regular member recursed into as its own source), or
// delivers it as text (deliver, io.read.cc; deliver_mapped, io.map.cc). So a .tar.gz, a
// .log.gz inside a .tar, or `cat x.zst | firstfault -` all take the same path. Named
// inputs and folders are opened in io.walk.cc.
//
// Why gzip/zstd/xz don't go through libarchive: its filters decode into a 64-128 KiB output
// block and throw the block away when the input ends early, so a truncated stream loses its
// tail, and a truncated log smaller than one block delivers nothing at all. A log that was
// being gzipped when the job died is exactly the case this tool exists for, and its tail is
// the crash. The codec libraries hand back every byte they could decode: for gzip and xz
// that is everything up to the cut; zstd decodes whole blocks (at most 128 KiB of output),
// so the cut block is lost. bzip2 keeps libarchive: its blocks are up to 900 kB and no
// decoder can return part of one either.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/interrupt.h"
#include "base/strings.h"
#include "io/io.h"

namespace ff::io::detail {

// The first block of every stream is read before anything is delivered: for the magic
// bytes (compression, "ustar" at offset 257) and for looks_binary().
inline constexpr size_t kSniffSize = 8192;
// Compressed bytes read from below per refill of a decoder or of libarchive.
inline constexpr size_t kInputBlockSize = 64 * 1024;
// The read buffer for the sink is chunk_size, kept within these bounds: big enough that
// a tiny chunk_size doesn't mean one syscall per few bytes, small enough to stay bounded.
inline constexpr size_t kMinReadBuffer = 64 * 1024;
inline constexpr size_t kMaxReadBuffer = 16 << 20;
// Decompression and tar levels inside one input (log.gz in bundle.tar.gz is 3). Deeper
// nesting is not a log layout anyone produces; stopping bounds quines and bombs.
inline constexpr int kMaxNesting = 4;
// xz -9 needs 65 MiB to decode; a header asking for more than this is refused rather
// than allocated (memory stays bounded whatever the input claims).
inline constexpr uint64_t kXzMemLimit = 256ull << 20;

// ---------------------------------------------------------------------------------------
// Errors (io.read.cc)

std::string errno_message(int err);
Error errno_error(int err, const std::string& file);
Location at(const std::string& file);
Error with_file(Error e, const std::string& file);
// "256 GiB" when exact, else a byte count: limits are usually round, positions are not.
std::string format_size(uint64_t n);
bool contains_ci(std::string_view haystack, std::string_view needle);

// ---------------------------------------------------------------------------------------
// RAII handles

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveFree>;

struct DirClose {
  void operator()(DIR* d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirClose>;

// ---------------------------------------------------------------------------------------
// Readers

// A regular file that can be read through mmap: its descriptor and its size at open.
struct Mappable {
  int fd = -1;
  uint64_t size = 0;
};

class Reader {
 public:
  virtual ~Reader() = default;
  // The file under this reader, when the bytes it reads are exactly that file's.
  virtual std::optional<Mappable> mappable() const { return std::nullopt; }
  // Reads up to n (> 0) bytes into buf. Returns the count, 0 at the end of the stream, or
  // an Error (without a location: the caller knows the source name). After an Error or 0,
  // later calls return the same again.
  virtual Result<size_t> read(char* buf, size_t n) = 0;
};

class FdReader final : public Reader {
 public:
  // `regular`: fd is a regular file, whose end is checked against its size (below).
  explicit FdReader(int fd, std::optional<Mappable> map = std::nullopt, bool regular = false)
      : fd_(fd), map_(map), regular_(regular) {}
  std::optional<Mappable> mappable() const override { return map_; }
  Result<size_t> read(char* buf, size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_, buf, n);
      if (r > 0) offset_ += static_cast<uint64_t>(r);
      if (r == 0 && regular_) {
        // The end of a regular file that is now shorter than what was read of it: it was
        // truncated meanwhile (logrotate's copytruncate), and what follows the cut is lost.
        struct stat st {};
        if (::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) < offset_)
          return make_error(ErrorCode::kIo, kShrankMessage);
      }
      if (r >= 0) return static_cast<size_t>(r);
      if (errno == EINTR) {
        // Ctrl-C on a pipe that never ends: the caller sees interrupted() next.
        if (interrupted()) return static_cast<size_t>(0);
        continue;
      }
      return make_error(ErrorCode::kIo, "read error: " + errno_message(errno));
    }
  }

 private:
  int fd_;
  std::optional<Mappable> map_;
  bool regular_;
  uint64_t offset_ = 0;
};
// --- libarchive over a Reader -------------------------------------------------------------

// libarchive's read callback pulls from our Reader. The Reader's Error is kept so it can
// be reported as is (e.g. "truncated gzip stream after ...") instead of libarchive's text.
struct ArchiveSource {
  Reader* upstream = nullptr;
  std::vector<char> buf;
  std::optional<Error> error;

  static la_ssize_t read_cb(archive* a, void* self, const void** out) {
    auto* s = static_cast<ArchiveSource*>(self);
    if (s->buf.empty()) s->buf.resize(kInputBlockSize);
    Result<size_t> r = s->upstream->read(s->buf.data(), s->buf.size());
    if (!r.ok()) {
      s->error = r.take_error();
      archive_set_error(a, EIO, "%s", s->error->message.c_str());
      return ARCHIVE_FATAL;
    }
    *out = s->buf.data();
    return static_cast<la_ssize_t>(*r);
  }
};

std::string archive_message(archive* a);

// Copies libarchive's data blocks out into the caller's buffer. archive_read_data() would
// do this, but when a block fails after an earlier block was copied in the same call, it
// returns only the error and the copied bytes are lost: a truncated member would lose its
// tail. Holes of sparse members are filled with zeros.
class ArchiveDataCursor {
 public:
  // Bytes copied (> 0), 0 at the end of the entry, or a negative libarchive status.
  la_ssize_t read(archive* a, char* buf, size_t n);
  uint64_t position() const { return pos_; }

 private:
  const char* block_ = nullptr;
  size_t avail_ = 0;
  uint64_t hole_ = 0;
  uint64_t pos_ = 0;
  bool eof_ = false;
};

// ---------------------------------------------------------------------------------------
// What a stream is (io.sniff.cc) and its decoders (io.codecs.cc)

enum class Compression { kNone, kGzip, kZstd, kXz, kBzip2 };

// The decoder of c over upstream (null for kNone).
std::unique_ptr<Reader> make_decompressor(Compression c, Reader& upstream);

// ---------------------------------------------------------------------------------------
// The walk

enum class Origin {
  kNamed,   // on the command line: problems are errors
  kWalk,    // found in a directory: binary files are skipped with a note
  kMember,  // an archive member: as kWalk
};

enum class Outcome { kDelivered, kSkipped, kFailed };

// What one input (a directory, an archive) produced, for "no log files in ..." errors.
struct Tally {
  int sources = 0;
  int binary = 0;
  int errors = 0;
};

struct Context {
  ByteSink& sink;
  const ReadOptions& options;
  InputReport& report;
  // The read buffer for delivery (one source at a time uses it); not zero-filled: a
  // sink that reads into its own buffers never touches these pages.
  struct Buffer {
    std::unique_ptr<char[]> bytes;
    size_t n = 0;
    char* data() { return bytes.get(); }
    size_t size() const { return n; }
  } buffer;
  uint64_t budget_used = 0;  // decompressed bytes so far, delivered or skipped
  bool stopped = false;      // max_total_bytes was hit: read nothing more

  void error(Error e, Tally& tally) {
    report.errors.push_back(std::move(e));
    ++tally.errors;
  }
  void note(std::string text) { report.notes.push_back(std::move(text)); }

  Error limit_error(const std::string& file, uint64_t delivered) const {
    return make_error(ErrorCode::kLimit,
                      "expanded size exceeds the limit of " + format_size(options.max_total_bytes) +
                          " for all inputs together; stopped after " + std::to_string(delivered) +
                          " bytes of this source",
                      at(file));
  }

  // Ctrl-C or SIGTERM (base/interrupt.h): stop reading, say what was not read.
  bool check_interrupt() {
    if (!interrupted()) return false;
    stopped = true;
    return true;
  }
  Error interrupt_error(const std::string& file, uint64_t delivered) const {
    return make_error(ErrorCode::kLimit,
                      std::string(interrupt_name(interrupted())) + " after " + std::to_string(delivered) +
                          " bytes of this source; the rest was not read",
                      at(file));
  }

  // Counts bytes that were decompressed but not delivered (skipped archive members), so
  // a tar of huge binary members is bounded too. False when that is over the limit.
  bool charge(uint64_t n) {
    if (n > options.max_total_bytes - budget_used) {
      budget_used = options.max_total_bytes;
      stopped = true;
      return false;
    }
    budget_used += n;
    return true;
  }

  // The start of a source: begin() to the sink, counted.
  void begin_source(const SourceInfo& info, Tally& tally) {
    sink.begin(info);
    ++report.sources_read;
    ++tally.sources;
  }
  // How many of n more bytes the byte limit lets through.
  size_t allowed(size_t n) const {
    return static_cast<size_t>(std::min<uint64_t>(n, options.max_total_bytes - budget_used));
  }
  void count_delivered(size_t n) {
    budget_used += n;
    report.bytes_read += n;
  }
  // The end of a source: end() to the sink, and its error, if any, to the report.
  Outcome end_source(const SourceInfo& info, const Status& status, Tally& tally) {
    sink.end(info, status);
    if (status.ok()) return Outcome::kDelivered;
    report.errors.push_back(status.error());
    ++tally.errors;
    return Outcome::kFailed;
  }
};

// Streams everything r has to the sink as one source, in chunk_size pieces (io.read.cc).
Outcome deliver(Context& c, Reader& r, const SourceInfo& info, Tally& tally);
// deliver() for a plain regular file, as windows of a read-only mapping (io.map.cc).
Outcome deliver_mapped(Context& c, const Mappable& m, const SourceInfo& info, Tally& tally);
// Decides what r is (compressed, tar, text, binary) and handles it (io.sniff.cc).
Outcome process_stream(Context& c, Reader& r, SourceInfo info, const std::string& wrappers, int depth, Origin origin,
                       Tally& tally);
// The members of a tar, each processed as its own source (io.archive.cc).
void read_tar(Context& c, Reader& r, const SourceInfo& archive_info, const std::string& encoding, int depth,
              Origin origin, Tally& tally);

}  // namespace ff::io::detail
