// io/io.cc — opening inputs, decompressing, untarring, streaming bytes to a ByteSink.
//
// Everything is built on one pull interface, Reader (read up to n bytes; 0 at the end;
// an Error when the stream fails). Readers stack:
//
//   FdReader          a file descriptor: regular file, FIFO, stdin. Plain files go straight
//                     from read() to the sink, with no library in between.
//   SniffedReader     reads the first block (kSniffSize) to decide what the stream is, then
//                     replays it, so pipes never need to seek.
//   DecompressReader  gzip / zstd / xz through zlib, libzstd and liblzma directly.
//   Bzip2Reader       bzip2 through libarchive's filter.
//   MemberReader      the data of one tar member, through libarchive's tar reader, which
//                     pulls the archive from any Reader below it.
//
// process_stream() sniffs a Reader and either wraps it in a decompressor and recurses,
// walks it as a tar (each regular member recursed into as its own source), or delivers it
// as text. So a .tar.gz, a .log.gz inside a .tar, or `cat x.zst | firstfault -` all take
// the same path.
//
// Why gzip/zstd/xz don't go through libarchive: its filters decode into a 64-128 KiB output
// block and throw the block away when the input ends early, so a truncated stream loses its
// tail, and a truncated log smaller than one block delivers nothing at all. A log that was
// being gzipped when the job died is exactly the case this tool exists for, and its tail is
// the crash. The codec libraries hand back every byte they could decode: for gzip and xz
// that is everything up to the cut; zstd decodes whole blocks (at most 128 KiB of output),
// so the cut block is lost. bzip2 keeps libarchive: its blocks are up to 900 kB and no
// decoder can return part of one either.
#include "io/io.h"
#include "io/journal.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <lzma.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "base/interrupt.h"
#include "base/strings.h"

namespace ff::io {
namespace {

// The first block of every stream is read before anything is delivered: for the magic
// bytes (compression, "ustar" at offset 257) and for looks_binary().
constexpr size_t kSniffSize = 8192;
// Compressed bytes read from below per refill of a decoder or of libarchive.
constexpr size_t kInputBlockSize = 64 * 1024;
// The read buffer for the sink is chunk_size, kept within these bounds: big enough that
// a tiny chunk_size doesn't mean one syscall per few bytes, small enough to stay bounded.
constexpr size_t kMinReadBuffer = 64 * 1024;
constexpr size_t kMaxReadBuffer = 16 << 20;
// Decompression and tar levels inside one input (log.gz in bundle.tar.gz is 3). Deeper
// nesting is not a log layout anyone produces; stopping bounds quines and bombs.
constexpr int kMaxNesting = 4;
// xz -9 needs 65 MiB to decode; a header asking for more than this is refused rather
// than allocated (memory stays bounded whatever the input claims).
constexpr uint64_t kXzMemLimit = 256ull << 20;

// ---------------------------------------------------------------------------------------
// Errors

std::string errno_message(int err) {
  std::string m = std::generic_category().message(err);
  if (!m.empty() && m[0] >= 'A' && m[0] <= 'Z') m[0] = static_cast<char>(m[0] - 'A' + 'a');
  return m;
}

Location at(const std::string& file);

Error errno_error(int err, const std::string& file) {
  switch (err) {
    case ENOENT: return make_error(ErrorCode::kNotFound, "no such file or directory", at(file));
    case ENOTDIR: return make_error(ErrorCode::kNotFound, "not a directory", at(file));
    case EACCES:
    case EPERM: return make_error(ErrorCode::kPermission, "permission denied", at(file));
    default: return make_error(ErrorCode::kIo, errno_message(err), at(file));
  }
}

Location at(const std::string& file) {
  Location where;
  where.file = file;
  return where;
}

Error with_file(Error e, const std::string& file) {
  e.where.file = file;
  return e;
}

// "256 GiB" when exact, else a byte count: limits are usually round, positions are not.
std::string format_size(uint64_t n) {
  static constexpr const char* kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    uint64_t unit = 1ull << (10 * (4 - i));
    if (n >= unit && n % unit == 0) return std::to_string(n / unit) + " " + kUnits[i];
  }
  return std::to_string(n) + " bytes";
}

bool contains_ci(std::string_view haystack, std::string_view needle) {
  return to_lower(haystack).find(needle) != std::string::npos;
}

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

// Reads the first block of a stream, then replays it followed by the rest. The sniff
// keeps an error or end-of-stream it met, so a short pipe or a tty is not read again after
// it said EOF, and a stream that fails inside its first block still delivers that block.
class SniffedReader final : public Reader {
 public:
  explicit SniffedReader(Reader& inner) : inner_(inner) {}

  void sniff() {
    head_.resize(kSniffSize);
    size_t got = 0;
    while (got < kSniffSize) {
      Result<size_t> r = inner_.read(head_.data() + got, kSniffSize - got);
      if (!r.ok()) {
        error_ = r.take_error();
        break;
      }
      if (*r == 0) {
        eof_ = true;
        break;
      }
      got += *r;
    }
    head_.resize(got);
  }

  std::string_view head() const { return head_; }
  const std::optional<Error>& head_error() const { return error_; }
  std::optional<Mappable> mappable() const override { return inner_.mappable(); }

  Result<size_t> read(char* buf, size_t n) override {
    if (pos_ < head_.size()) {
      size_t k = std::min(n, head_.size() - pos_);
      std::memcpy(buf, head_.data() + pos_, k);
      pos_ += k;
      return k;
    }
    if (error_) return *error_;
    if (eof_) return size_t{0};
    return inner_.read(buf, n);
  }

 private:
  Reader& inner_;
  std::string head_;
  size_t pos_ = 0;
  bool eof_ = false;
  std::optional<Error> error_;
};

// --- codecs -----------------------------------------------------------------------------

// One decoder over caller-owned buffers. DecompressReader owns the loop (refills, end of
// stream, truncation); a Codec only translates its library's return codes.
class Codec {
 public:
  enum class Step { kOk, kEnd, kError };
  virtual ~Codec() = default;
  // False when the library could not set up (out of memory); message() says why.
  virtual bool init() = 0;
  // Decodes from in to out and advances both. `finish`: no more input will ever come.
  // kEnd: a stream (gzip member, zstd frame, all xz streams) ended here.
  virtual Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail,
                      bool finish) = 0;
  // After kEnd with input left over: true to go on decoding it (the decoder is ready for
  // the next member), false to stop there (what follows is not ours: ignored, as gzip(1)
  // ignores trailing zeros).
  virtual bool next_member(const uint8_t* in, size_t in_avail) = 0;
  const std::string& message() const { return message_; }

 protected:
  std::string message_;
};

// The libraries take 32-bit lengths; our buffers are far below that, but stay honest.
inline unsigned clamp_uint(size_t n) { return static_cast<unsigned>(std::min<size_t>(n, UINT_MAX)); }

class GzipCodec final : public Codec {
 public:
  ~GzipCodec() override {
    if (ready_) inflateEnd(&zs_);
  }
  bool init() override {
    // 16 + MAX_WBITS: gzip wrapper only (header, CRC-32 and size trailer are checked).
    ready_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK;
    if (!ready_) message_ = "cannot initialise zlib";
    return ready_;
  }
  Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail,
              bool /*finish*/) override {
    zs_.next_in = const_cast<Bytef*>(in);
    zs_.avail_in = clamp_uint(in_avail);
    zs_.next_out = out;
    zs_.avail_out = clamp_uint(out_avail);
    const unsigned in_given = zs_.avail_in, out_given = zs_.avail_out;
    int r = inflate(&zs_, Z_NO_FLUSH);
    in += in_given - zs_.avail_in;
    in_avail -= in_given - zs_.avail_in;
    out += out_given - zs_.avail_out;
    out_avail -= out_given - zs_.avail_out;
    switch (r) {
      case Z_OK:
      case Z_BUF_ERROR:  // no progress possible now; the caller decides if that's the end
        return Step::kOk;
      case Z_STREAM_END:
        return Step::kEnd;
      case Z_NEED_DICT:
        message_ = "stream needs a preset dictionary";
        return Step::kError;
      case Z_MEM_ERROR:
        message_ = "out of memory";
        return Step::kError;
      default:
        message_ = zs_.msg != nullptr ? zs_.msg : "invalid compressed data";
        return Step::kError;
    }
  }
  bool next_member(const uint8_t* in, size_t in_avail) override {
    // Concatenated gzip files (cat a.gz b.gz, rotation appends) are one stream to gzip(1).
    if (in_avail == 0 || in[0] != 0x1f) return false;
    return inflateReset(&zs_) == Z_OK;
  }

 private:
  z_stream zs_{};
  bool ready_ = false;
};

class ZstdCodec final : public Codec {
 public:
  ~ZstdCodec() override { ZSTD_freeDStream(ds_); }
  bool init() override {
    // Default window limit (128 MiB) applies: frames that need more are refused, which
    // keeps memory bounded whatever the header claims.
    ds_ = ZSTD_createDStream();
    if (ds_ == nullptr || ZSTD_isError(ZSTD_initDStream(ds_))) {
      message_ = "cannot initialise zstd";
      return false;
    }
    return true;
  }
  Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail,
              bool /*finish*/) override {
    ZSTD_inBuffer ib{in, in_avail, 0};
    ZSTD_outBuffer ob{out, out_avail, 0};
    size_t r = ZSTD_decompressStream(ds_, &ob, &ib);
    in += ib.pos;
    in_avail -= ib.pos;
    out += ob.pos;
    out_avail -= ob.pos;
    if (ZSTD_isError(r)) {
      message_ = to_lower(ZSTD_getErrorName(r));
      return Step::kError;
    }
    return r == 0 ? Step::kEnd : Step::kOk;  // 0: a frame is complete and fully flushed
  }
  // Concatenated frames are one stream; the decoder moves on to the next frame itself.
  bool next_member(const uint8_t*, size_t in_avail) override { return in_avail > 0; }

 private:
  ZSTD_DStream* ds_ = nullptr;
};

class XzCodec final : public Codec {
 public:
  ~XzCodec() override { lzma_end(&strm_); }
  bool init() override {
    // LZMA_CONCATENATED: several .xz streams back to back decode as one, as xz(1) does;
    // the end is then only reported after LZMA_FINISH, i.e. at the end of the input.
    if (lzma_stream_decoder(&strm_, kXzMemLimit, LZMA_CONCATENATED) != LZMA_OK) {
      message_ = "cannot initialise liblzma";
      return false;
    }
    return true;
  }
  Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail,
              bool finish) override {
    strm_.next_in = in;
    strm_.avail_in = in_avail;
    strm_.next_out = out;
    strm_.avail_out = out_avail;
    lzma_ret r = lzma_code(&strm_, finish ? LZMA_FINISH : LZMA_RUN);
    in += in_avail - strm_.avail_in;
    in_avail = strm_.avail_in;
    out += out_avail - strm_.avail_out;
    out_avail = strm_.avail_out;
    switch (r) {
      case LZMA_OK:
      case LZMA_BUF_ERROR:  // no progress possible; the caller decides if it's truncation
        return Step::kOk;
      case LZMA_STREAM_END:
        return Step::kEnd;
      case LZMA_FORMAT_ERROR: message_ = "file format not recognized"; break;
      case LZMA_OPTIONS_ERROR: message_ = "unsupported compression options"; break;
      case LZMA_DATA_ERROR: message_ = "compressed data is corrupt"; break;
      case LZMA_MEMLIMIT_ERROR:
        message_ = "decoding needs more than " + format_size(kXzMemLimit) + " of memory";
        break;
      case LZMA_MEM_ERROR: message_ = "out of memory"; break;
      default: message_ = "liblzma error " + std::to_string(static_cast<int>(r)); break;
    }
    return Step::kError;
  }
  bool next_member(const uint8_t*, size_t) override { return false; }

 private:
  lzma_stream strm_ = LZMA_STREAM_INIT;
};

// Decodes an upstream Reader with a Codec. Delivers every byte the decoder produced before
// a failure; the failure comes on the following read().
class DecompressReader final : public Reader {
 public:
  DecompressReader(std::unique_ptr<Codec> codec, const char* format, Reader& upstream)
      : codec_(std::move(codec)), format_(format), upstream_(upstream) {}

  Result<size_t> read(char* buf, size_t n) override {
    if (error_) return *error_;
    if (done_) return size_t{0};
    if (!started_) {
      started_ = true;
      in_buf_.resize(kInputBlockSize);
      if (!codec_->init()) return fail(make_error(ErrorCode::kInternal, codec_->message()), 0);
    }
    uint8_t* out = reinterpret_cast<uint8_t*>(buf);
    size_t out_avail = n;
    while (out_avail > 0) {
      const size_t produced = n - out_avail;
      if (in_avail_ == 0 && !eof_) {
        // Return what we have rather than block on a pipe that may be slow to write.
        if (produced > 0) break;
        Result<size_t> r = upstream_.read(reinterpret_cast<char*>(in_buf_.data()), in_buf_.size());
        if (!r.ok()) return fail(r.take_error(), produced);
        if (*r == 0) {
          eof_ = true;
        } else {
          in_ = in_buf_.data();
          in_avail_ = *r;
        }
        continue;
      }
      if (at_end_) {  // a member/frame ended exactly here: stop, or decode the next one
        if (in_avail_ == 0 || !codec_->next_member(in_, in_avail_)) {
          done_ = true;
          break;
        }
        at_end_ = false;
      }
      const bool finish = eof_ && in_avail_ == 0;
      const uint8_t* in_before = in_;
      uint8_t* out_before = out;
      Codec::Step step = codec_->decode(in_, in_avail_, out, out_avail, finish);
      total_out_ += static_cast<uint64_t>(out - out_before);
      if (step == Codec::Step::kError) return fail(codec_error(), n - out_avail);
      if (step == Codec::Step::kEnd) {
        at_end_ = true;
        ++members_done_;
        continue;
      }
      if (in_ == in_before && out == out_before) {
        if (finish) return fail(truncated_error(), n - out_avail);
        if (in_avail_ == 0) continue;  // wants more input
        // Input and room both available and nothing moved: the library is stuck, and
        // calling it again would loop forever.
        return fail(make_error(ErrorCode::kFormat,
                               std::string(format_) + " decoder made no progress"),
                    n - out_avail);
      }
    }
    return n - out_avail;
  }

 private:
  Error truncated_error() const {
    return make_error(ErrorCode::kTruncated, "truncated " + std::string(format_) +
                                                 " stream after " + std::to_string(total_out_) +
                                                 " bytes: unexpected end of file");
  }
  Error codec_error() const {
    // Nothing decoded yet: the file has the magic bytes but is not this format at all.
    if (total_out_ == 0 && members_done_ == 0) {
      return make_error(ErrorCode::kFormat,
                        "not a valid " + std::string(format_) + " stream: " + codec_->message());
    }
    return make_error(ErrorCode::kTruncated, "corrupt " + std::string(format_) +
                                                 " stream after " + std::to_string(total_out_) +
                                                 " bytes: " + codec_->message());
  }
  // Bytes produced in this call go out first; the error waits for the next call.
  Result<size_t> fail(Error e, size_t produced) {
    error_ = std::move(e);
    if (produced > 0) return produced;
    return *error_;
  }

  std::unique_ptr<Codec> codec_;
  const char* format_;
  Reader& upstream_;
  std::vector<uint8_t> in_buf_;
  const uint8_t* in_ = nullptr;
  size_t in_avail_ = 0;
  bool started_ = false;
  bool eof_ = false;
  bool at_end_ = false;
  bool done_ = false;
  uint64_t total_out_ = 0;
  int members_done_ = 0;
  std::optional<Error> error_;
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

std::string archive_message(archive* a) {
  const char* m = archive_error_string(a);
  return m != nullptr && *m != '\0' ? std::string(m) : std::string("unknown error");
}

// Copies libarchive's data blocks out into the caller's buffer. archive_read_data() would
// do this, but when a block fails after an earlier block was copied in the same call, it
// returns only the error and the copied bytes are lost: a truncated member would lose its
// tail. Holes of sparse members are filled with zeros.
class ArchiveDataCursor {
 public:
  // Bytes copied (> 0), 0 at the end of the entry, or a negative libarchive status.
  la_ssize_t read(archive* a, char* buf, size_t n) {
    for (;;) {
      if (hole_ > 0) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(n, hole_));
        std::memset(buf, 0, k);
        hole_ -= k;
        pos_ += k;
        return static_cast<la_ssize_t>(k);
      }
      if (avail_ > 0) {
        const size_t k = std::min(n, avail_);
        std::memcpy(buf, block_, k);
        block_ += k;
        avail_ -= k;
        pos_ += k;
        return static_cast<la_ssize_t>(k);
      }
      if (eof_) return 0;
      const void* block = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      int r = archive_read_data_block(a, &block, &size, &offset);
      if (r == ARCHIVE_EOF) {
        eof_ = true;
        return 0;
      }
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return r;
      if (offset > 0 && static_cast<uint64_t>(offset) > pos_) hole_ = static_cast<uint64_t>(offset) - pos_;
      block_ = static_cast<const char*>(block);
      avail_ = block_ != nullptr ? size : 0;
    }
  }
  uint64_t position() const { return pos_; }

 private:
  const char* block_ = nullptr;
  size_t avail_ = 0;
  uint64_t hole_ = 0;
  uint64_t pos_ = 0;
  bool eof_ = false;
};

// bzip2 through libarchive (filter bzip2 + format raw). Opened on the first read so that
// every failure comes through read(), like the other decoders.
class Bzip2Reader final : public Reader {
 public:
  explicit Bzip2Reader(Reader& upstream) { src_.upstream = &upstream; }

  Result<size_t> read(char* buf, size_t n) override {
    if (error_) return *error_;
    if (done_) return size_t{0};
    if (!a_) {
      Status st = open();
      if (!st.ok()) return fail(st.error());
      if (done_) return size_t{0};
    }
    la_ssize_t r = cursor_.read(a_.get(), buf, n);
    if (r > 0) {
      total_out_ += static_cast<uint64_t>(r);
      return static_cast<size_t>(r);
    }
    if (r == 0) {
      done_ = true;
      return size_t{0};
    }
    return fail(stream_error());
  }

 private:
  Status open() {
    a_.reset(archive_read_new());
    if (!a_) return make_error(ErrorCode::kInternal, "cannot allocate a libarchive reader");
    archive_read_support_filter_bzip2(a_.get());
    archive_read_support_format_raw(a_.get());
    archive_read_support_format_empty(a_.get());  // bzip2 of an empty file is an empty log
    if (archive_read_open(a_.get(), &src_, nullptr, &ArchiveSource::read_cb, nullptr) !=
        ARCHIVE_OK) {
      return stream_error();
    }
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(a_.get(), &entry);
    if (r == ARCHIVE_EOF) {
      done_ = true;
    } else if (r < ARCHIVE_WARN) {
      return stream_error();
    }
    // "BZh" with no bzip2 behind it: libarchive falls back to passing the bytes through.
    if (archive_filter_count(a_.get()) < 2 || archive_filter_code(a_.get(), 0) != ARCHIVE_FILTER_BZIP2) {
      return make_error(ErrorCode::kFormat, "not a valid bzip2 stream");
    }
    return Status::Ok();
  }

  Error stream_error() {
    if (src_.error) return *src_.error;
    std::string msg = archive_message(a_.get());
    if (contains_ci(msg, "truncat")) {
      return make_error(ErrorCode::kTruncated, "truncated bzip2 stream after " +
                                                   std::to_string(total_out_) + " bytes: " + msg);
    }
    if (total_out_ == 0) return make_error(ErrorCode::kFormat, "not a valid bzip2 stream: " + msg);
    return make_error(ErrorCode::kTruncated,
                      "corrupt bzip2 stream after " + std::to_string(total_out_) + " bytes: " + msg);
  }

  Result<size_t> fail(Error e) {
    error_ = std::move(e);
    return *error_;
  }

  ArchiveSource src_;  // declared before a_: the archive must be freed first
  ArchivePtr a_;
  ArchiveDataCursor cursor_;
  bool done_ = false;
  uint64_t total_out_ = 0;
  std::optional<Error> error_;
};

// ---------------------------------------------------------------------------------------
// Sniffing

enum class Compression { kNone, kGzip, kZstd, kXz, kBzip2 };

bool has_prefix(std::string_view s, std::string_view magic) {
  return s.size() >= magic.size() && s.substr(0, magic.size()) == magic;
}

Compression detect_compression(std::string_view head) {
  using namespace std::string_view_literals;
  if (has_prefix(head, "\x1f\x8b"sv)) return Compression::kGzip;
  if (has_prefix(head, "\x28\xb5\x2f\xfd"sv)) return Compression::kZstd;
  if (has_prefix(head, "\xfd\x37\x7a\x58\x5a\x00"sv)) return Compression::kXz;
  // "BZh" alone is printable text a log line could start with, so also require the block
  // size digit and the magic of the first block (or of the end of an empty stream).
  if (head.size() >= 10 && has_prefix(head, "BZh") && head[3] >= '1' && head[3] <= '9' &&
      (head.substr(4, 6) == "\x31\x41\x59\x26\x53\x59"sv ||
       head.substr(4, 6) == "\x17\x72\x45\x38\x50\x90"sv)) {
    return Compression::kBzip2;
  }
  return Compression::kNone;
}

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kGzip: return "gzip";
    case Compression::kZstd: return "zstd";
    case Compression::kXz: return "xz";
    case Compression::kBzip2: return "bzip2";
    case Compression::kNone: break;
  }
  return "plain";
}

std::unique_ptr<Reader> make_decompressor(Compression c, Reader& upstream) {
  switch (c) {
    case Compression::kGzip:
      return std::make_unique<DecompressReader>(std::make_unique<GzipCodec>(), "gzip", upstream);
    case Compression::kZstd:
      return std::make_unique<DecompressReader>(std::make_unique<ZstdCodec>(), "zstd", upstream);
    case Compression::kXz:
      return std::make_unique<DecompressReader>(std::make_unique<XzCodec>(), "xz", upstream);
    case Compression::kBzip2:
      return std::make_unique<Bzip2Reader>(upstream);
    case Compression::kNone: break;
  }
  return nullptr;
}

// A journal export (io/journal.h) read as the text lines rsyslog would have written.
class JournalReader final : public Reader {
 public:
  JournalReader(detail::JournalFormat format, Reader& upstream) : decoder_(format), up_(upstream) {}
  Result<size_t> read(char* buf, size_t n) override {
    while (out_.size() - taken_ == 0) {
      if (done_) {
        if (error_) return *error_;
        return static_cast<size_t>(0);
      }
      out_.clear();
      taken_ = 0;
      Result<size_t> r = up_.read(in_, sizeof in_);
      if (!r.ok()) {
        error_ = r.error();
        decoder_.finish(out_);
        done_ = true;
      } else if (*r == 0) {
        decoder_.finish(out_);
        done_ = true;
      } else {
        decoder_.feed(std::string_view(in_, *r), out_);
      }
    }
    const size_t k = std::min(n, out_.size() - taken_);
    std::memcpy(buf, out_.data() + taken_, k);
    taken_ += k;
    return k;
  }

 private:
  detail::JournalDecoder decoder_;
  Reader& up_;
  char in_[1 << 16];
  std::string out_;
  size_t taken_ = 0;
  bool done_ = false;
  std::optional<Error> error_;
};

// POSIX ustar and GNU tar both put "ustar" at offset 257. Pre-POSIX v7 tars have no magic
// and are read as plain (then usually skipped as binary).
bool is_tar(std::string_view head) { return head.size() >= 262 && head.substr(257, 5) == "ustar"; }

// Encodings read outside-in become "tar+gzip": the innermost format first.
std::string wrap_encoding(std::string_view inner, const std::string& outer) {
  std::string s(inner);
  if (!outer.empty()) s += "+" + outer;
  return s;
}

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
  size_t allowed(size_t n) const { return static_cast<size_t>(std::min<uint64_t>(n, options.max_total_bytes - budget_used)); }
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

// Streams everything r has to the sink as one source, in chunk_size pieces.
Outcome deliver(Context& c, Reader& r, const SourceInfo& info, Tally& tally) {
  c.begin_source(info, tally);
  const size_t chunk = std::max<size_t>(c.options.chunk_size, 1);
  uint64_t delivered = 0;
  Status status;
  for (;;) {
    char* buf = c.sink.data_buffer(c.buffer.size());
    if (buf == nullptr) buf = c.buffer.data();
    Result<size_t> got = r.read(buf, c.buffer.size());
    if (!got.ok()) {
      status = with_file(got.take_error(), info.name);
      break;
    }
    if (c.check_interrupt()) {
      status = c.interrupt_error(info.name, delivered);
      break;
    }
    if (*got == 0) break;
    const size_t len = c.allowed(*got);
    const bool over = len < *got;
    for (size_t off = 0; off < len; off += chunk) {
      c.sink.data(std::string_view(buf + off, std::min(chunk, len - off)));
    }
    c.count_delivered(len);
    delivered += len;
    if (over) {
      c.stopped = true;
      status = c.limit_error(info.name, delivered);
      break;
    }
  }
  return c.end_source(info, status, tally);
}

Outcome process_stream(Context& c, Reader& r, SourceInfo info, const std::string& wrappers,
                       int depth, Origin origin, Tally& tally);

// ---- Mapped windows that survive truncation. A window stays mapped while the scan's
// chunks in flight point into it, long after it was mapped; a file truncated meanwhile
// (logrotate's copytruncate, a job that restarts and reopens its log with O_TRUNC) takes
// the pages past its new end away from every mapping, and touching one raises SIGBUS,
// which killed the run. Checking the size first cannot close that gap, and every reader of
// the window (framer, cleaner, matcher, in several threads) cannot be wrapped in a
// sigsetjmp. So a process-wide SIGBUS handler looks the faulting address up in a table of
// live windows: for one of ours it maps zero-filled pages over the rest of the window
// (MAP_FIXED replaces the file pages in place) and marks the window, and the faulting read
// resumes on zeros; any other SIGBUS goes to the handler that was there before (or to the
// default action: the crash it always was). The table is a fixed array of lock-free
// slots, since a signal handler may neither lock nor allocate; mmap is a plain system call
// on Linux, safe in a handler though POSIX does not list it.
namespace mapguard {

struct Slot {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> begin{0};  // 0: no window (yet)
  std::atomic<uintptr_t> end{0};
  std::atomic<std::atomic<bool>*> shrank{nullptr};
};
// Live windows are bounded by the chunks in flight (about 60 MiB of 4 MiB windows); a
// window that finds no free slot is read with pread instead.
constexpr size_t kSlots = 256;
Slot g_slots[kSlots];
struct sigaction g_previous {};
uintptr_t g_page_mask = 0;
bool g_installed = false;
std::once_flag g_once;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (info->si_code > 0) {  // a fault (si_code <= 0: sent by kill() or raise())
    for (Slot& s : g_slots) {
      const uintptr_t b = s.begin.load(std::memory_order_acquire);
      const uintptr_t e = s.end.load(std::memory_order_acquire);
      if (b == 0 || addr < b || addr >= e) continue;
      const uintptr_t page = addr & g_page_mask;
      void* p = ::mmap(reinterpret_cast<void*>(page), e - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (p == MAP_FAILED) break;
      if (std::atomic<bool>* f = s.shrank.load(std::memory_order_acquire)) f->store(true, std::memory_order_release);
      errno = saved_errno;
      return;
    }
  }
  // Not ours: the previous disposition takes it, as if this handler were not there.
  errno = saved_errno;
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    ::signal(SIGBUS, SIG_DFL);  // a fault comes back at once and kills; a sent one is raised again
    if (info->si_code <= 0) ::raise(SIGBUS);
  }
}

void install() {
  std::call_once(g_once, [] {
    g_page_mask = ~(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
    struct sigaction act {};
    act.sa_sigaction = on_sigbus;
    act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&act.sa_mask);
    g_installed = ::sigaction(SIGBUS, &act, &g_previous) == 0;
  });
}

class GuardedWindow final : public MappedWindow {
 public:
  // Maps len bytes of fd at off, registered with the handler; null when there is no free
  // slot or the mapping fails (the caller reads the window instead).
  static std::shared_ptr<const GuardedWindow> map(int fd, uint64_t off, size_t len) {
    install();
    if (!g_installed) return nullptr;
    size_t slot = kSlots;
    for (size_t i = 0; i < kSlots && slot == kSlots; ++i) {
      bool expected = false;
      if (g_slots[i].used.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) slot = i;
    }
    if (slot == kSlots) return nullptr;
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, static_cast<off_t>(off));
    if (p == MAP_FAILED) {
      g_slots[slot].used.store(false, std::memory_order_release);
      return nullptr;
    }
    auto w = std::shared_ptr<GuardedWindow>(new GuardedWindow(static_cast<const char*>(p), len, slot));
    Slot& s = g_slots[slot];
    s.shrank.store(&w->shrank_, std::memory_order_release);
    s.end.store(reinterpret_cast<uintptr_t>(p) + len, std::memory_order_release);
    s.begin.store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);  // last: live from here
    return w;
  }
  ~GuardedWindow() override {
    Slot& s = g_slots[slot_];
    s.begin.store(0, std::memory_order_release);  // first: nobody reads the window any more
    s.end.store(0, std::memory_order_release);
    s.shrank.store(nullptr, std::memory_order_release);
    ::munmap(const_cast<char*>(data_), len_);  // the zero pages too: they replaced part of this range
    s.used.store(false, std::memory_order_release);
  }
  bool shrank() const override { return shrank_.load(std::memory_order_acquire); }
  std::string_view bytes() const { return {data_, len_}; }

 private:
  GuardedWindow(const char* data, size_t len, size_t slot) : data_(data), len_(len), slot_(slot) {}
  const char* data_;
  size_t len_;
  size_t slot_;
  std::atomic<bool> shrank_{false};
};

}  // namespace mapguard

// deliver() for a plain regular file, as windows of a read-only mapping (MAP_POPULATE:
// the pages are mapped here, in the reading thread, not faulted in one by one by the
// threads that parse them). A window that cannot be mapped is read with pread instead.
constexpr size_t kMapWindow = 4 << 20;  // a multiple of the page size

Outcome deliver_mapped(Context& c, const Mappable& m, const SourceInfo& info, Tally& tally) {
  c.begin_source(info, tally);
  uint64_t delivered = 0;
  Status status;
  for (uint64_t off = 0; off < m.size;) {
    const size_t window = static_cast<size_t>(std::min<uint64_t>(kMapWindow, m.size - off));
    size_t len = c.allowed(window);
    const bool over = len < window;
    if (len > 0) {
      // A file that got shorter since it was opened is not mapped past its end (touching
      // such a page would fault): that window is read instead, and the read says so.
      // (A file that shrinks after this is mapguard's to handle.)
      struct stat now {};
      const bool whole = ::fstat(m.fd, &now) == 0 && static_cast<uint64_t>(now.st_size) >= off + len;
      std::shared_ptr<const mapguard::GuardedWindow> w = whole ? mapguard::GuardedWindow::map(m.fd, off, len) : nullptr;
      if (w) {
        const std::string_view bytes = w->bytes();
        c.sink.data_mapped(bytes, std::move(w));
      } else {
        // Read the window instead, in chunk_size pieces.
        const size_t chunk = std::max<size_t>(c.options.chunk_size, 1);
        size_t done = 0;
        while (done < len && status.ok()) {
          char* buf = c.sink.data_buffer(c.buffer.size());
          if (buf == nullptr) buf = c.buffer.data();
          const size_t want = std::min({len - done, c.buffer.size(), chunk});
          const ssize_t r = ::pread(m.fd, buf, want, static_cast<off_t>(off + done));
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) {
            status = make_error(ErrorCode::kIo, r < 0 ? "read error: " + errno_message(errno) : std::string(kShrankMessage),
                                at(info.name));
            len = done;
            break;
          }
          c.sink.data(std::string_view(buf, static_cast<size_t>(r)));
          done += static_cast<size_t>(r);
        }
      }
    }
    c.count_delivered(len);
    delivered += len;
    off += len;
    if (!status.ok()) break;
    if (c.check_interrupt()) {
      status = c.interrupt_error(info.name, delivered);
      break;
    }
    if (over) {
      c.stopped = true;
      status = c.limit_error(info.name, delivered);
      break;
    }
  }
  return c.end_source(info, status, tally);
}

// Display name of a tar member: "./node1/x.log" → "node1/x.log".
std::string clean_member_path(std::string_view p) {
  for (;;) {
    if (starts_with(p, "./")) {
      p.remove_prefix(2);
    } else if (starts_with(p, "/")) {
      p.remove_prefix(1);
    } else {
      break;
    }
  }
  return std::string(p);
}

bool has_hidden_component(std::string_view path) {
  for (std::string_view part : split(path, '/')) {
    if (!part.empty() && part[0] == '.' && part != "." && part != "..") return true;
  }
  return false;
}

// libarchive's text for a tar that fails by itself (not because the stream below failed).
Error tar_error(archive* a) {
  std::string msg = archive_message(a);
  if (contains_ci(msg, "truncat")) return make_error(ErrorCode::kTruncated, "truncated tar archive (" + msg + ")");
  return make_error(ErrorCode::kFormat, "corrupt tar archive: " + msg);
}

// The data of the current tar member.
class MemberReader final : public Reader {
 public:
  MemberReader(archive* a, ArchiveSource& src, uint64_t size) : a_(a), src_(src), size_(size) {}
  Result<size_t> read(char* buf, size_t n) override {
    if (error_) return *error_;
    la_ssize_t r = cursor_.read(a_, buf, n);
    if (r >= 0) return static_cast<size_t>(r);
    if (src_.error) {
      error_ = *src_.error;  // the stream below failed: its message says how
    } else {
      error_ = tar_error(a_);
      if (error_->code == ErrorCode::kTruncated) {
        error_->message = "truncated tar archive: the member ends after " + std::to_string(cursor_.position()) +
                          " of its " + std::to_string(size_) + " bytes";
      }
    }
    return *error_;
  }
  bool failed() const { return error_.has_value(); }

 private:
  archive* a_;
  ArchiveSource& src_;
  uint64_t size_;
  ArchiveDataCursor cursor_;
  std::optional<Error> error_;
};

// Members are read in archive order: streaming them, rather than sorting by name, keeps
// memory bounded and needs no seek (the archive may be a pipe).
void read_tar(Context& c, Reader& r, const SourceInfo& archive_info, const std::string& encoding,
              int depth, Origin origin, Tally& tally) {
  ArchiveSource src;
  src.upstream = &r;
  ArchivePtr a(archive_read_new());
  if (!a) {
    c.error(make_error(ErrorCode::kInternal, "cannot allocate a libarchive reader", at(archive_info.name)), tally);
    return;
  }
  archive_read_support_format_tar(a.get());  // ustar, pax and GNU (long names, sparse)
  if (archive_read_open(a.get(), &src, nullptr, &ArchiveSource::read_cb, nullptr) != ARCHIVE_OK) {
    c.error(with_file(src.error ? *src.error : tar_error(a.get()), archive_info.name), tally);
    return;
  }
  Tally inner;
  uint64_t members = 0;
  bool broken = false;
  while (!c.stopped) {
    archive_entry* entry = nullptr;
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN) {  // ARCHIVE_WARN is a charset conversion remark: go on
      c.error(with_file(src.error ? *src.error : tar_error(a.get()), archive_info.name), inner);
      broken = true;
      break;
    }
    if (++members > c.options.max_archive_members) {
      c.error(make_error(ErrorCode::kLimit,
                         "archive has more than " + std::to_string(c.options.max_archive_members) +
                             " members; the rest were not read",
                         at(archive_info.name)),
              inner);
      broken = true;
      break;
    }
    const la_int64_t size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
    const uint64_t usize = size > 0 ? static_cast<uint64_t>(size) : 0;
    const char* raw_path = archive_entry_pathname(entry);
    if (raw_path == nullptr) raw_path = archive_entry_pathname_utf8(entry);
    const std::string path =
        raw_path != nullptr ? clean_member_path(raw_path) : "<member " + std::to_string(members) + ">";
    // Directories, links and devices carry no log; a hard link repeats an earlier member.
    const bool regular = archive_entry_filetype(entry) == AE_IFREG && archive_entry_hardlink(entry) == nullptr;
    if (!regular || path.empty() || has_hidden_component(path)) {
      // Their data (if any) is decompressed to be skipped: it counts toward the limit.
      if (regular && !c.charge(usize)) {
        c.error(c.limit_error(archive_info.name, 0), inner);
        broken = true;
      }
      if (broken) break;
      continue;
    }
    MemberReader member(a.get(), src, usize);
    SourceInfo info{archive_info.name + ":" + path, usize, encoding};
    Outcome out = process_stream(c, member, info, encoding, depth, Origin::kMember, inner);
    if (member.failed()) {  // libarchive is in a fatal state after a data error
      broken = true;
      break;
    }
    if (out == Outcome::kSkipped && !c.charge(usize)) {
      c.error(c.limit_error(archive_info.name, 0), inner);
      broken = true;
      break;
    }
  }
  tally.sources += inner.sources;
  tally.binary += inner.binary;
  tally.errors += inner.errors;
  if (!broken && !c.stopped && inner.sources == 0 && inner.errors == 0) {
    std::string why = inner.binary > 0 ? " (" + std::to_string(inner.binary) + " binary members skipped)" : "";
    if (origin == Origin::kNamed) {
      c.error(make_error(ErrorCode::kNotFound, "no log files in archive" + why, at(archive_info.name)), tally);
    } else {
      c.note("archive " + archive_info.name + " contains no log files" + why);
    }
  }
}

// Decides what r is (compressed, tar, text, binary) and handles it.
Outcome process_stream(Context& c, Reader& r, SourceInfo info, const std::string& wrappers,
                       int depth, Origin origin, Tally& tally) {
  if (c.stopped) return Outcome::kSkipped;
  SniffedReader sniffed(r);
  sniffed.sniff();
  const std::string_view head = sniffed.head();
  if (head.empty() && sniffed.head_error()) {
    // Failed before a single byte (not gzip after all, unreadable): not a source.
    c.error(with_file(*sniffed.head_error(), info.name), tally);
    return Outcome::kFailed;
  }
  if (depth < kMaxNesting) {
    Compression comp = detect_compression(head);
    if (comp != Compression::kNone) {
      std::unique_ptr<Reader> dec = make_decompressor(comp, sniffed);
      return process_stream(c, *dec, std::move(info), wrap_encoding(compression_name(comp), wrappers),
                            depth + 1, origin, tally);
    }
    if (is_tar(head)) {
      read_tar(c, sniffed, info, wrap_encoding("tar", wrappers), depth + 1, origin, tally);
      return Outcome::kDelivered;
    }
    if (const detail::JournalFormat jf = detail::detect_journal(head); jf != detail::JournalFormat::kNone) {
      JournalReader journal(jf, sniffed);
      return process_stream(c, journal, std::move(info),
                            wrap_encoding(jf == detail::JournalFormat::kJson ? "journal-json" : "journal-export", wrappers),
                            depth + 1, origin, tally);
    }
  }
  if (c.options.skip_binary && looks_binary(head)) {
    ++tally.binary;
    switch (origin) {
      case Origin::kNamed:
        c.error(make_error(ErrorCode::kFormat, "binary file, skipped", at(info.name)), tally);
        break;
      case Origin::kWalk:
        c.note("skipped binary file " + info.name);
        break;
      case Origin::kMember:
        c.note("skipped binary archive member " + info.name);
        break;
    }
    return Outcome::kSkipped;
  }
  info.encoding = wrappers.empty() ? "plain" : wrappers;
  if (wrappers.empty() && c.sink.accepts_mapped()) {
    if (std::optional<Mappable> m = sniffed.mappable()) return deliver_mapped(c, *m, info, tally);
  }
  return deliver(c, sniffed, info, tally);
}

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

// --- looks_binary helpers -----------------------------------------------------------------

// Formats found next to logs (checkpoints, arrays, executables) whose first block can pass
// for text: a safetensors header is pages of JSON, a pickle is full of identifiers.
bool has_binary_signature(std::string_view b) {
  using namespace std::string_view_literals;
  static constexpr std::string_view kMagics[] = {
      "PK\x03\x04"sv,            // zip: torch.save (.pt/.pth), .npz
      "\x7f" "ELF"sv,            // executables, core files
      "\x93NUMPY"sv,             // .npy
      "\x89HDF\r\n\x1a\n"sv,     // HDF5 / Keras .h5
      "\x89PNG\r\n\x1a\n"sv,     // plots
      "\xff\xd8\xff"sv,          // JPEG
      "GGUF"sv,                  // llama.cpp weights
      "SQLite format 3\0"sv,     // sqlite databases (wandb, optuna)
  };
  for (std::string_view m : kMagics) {
    if (has_prefix(b, m)) return true;
  }
  // Pickle protocol 2-5 (legacy torch.save, joblib).
  if (b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x80 && b[1] >= 2 && b[1] <= 5) return true;
  // safetensors: a little-endian u64 header length (high bytes zero), then '{'.
  if (b.size() >= 9 && b[8] == '{' && b[5] == 0 && b[6] == 0 && b[7] == 0 &&
      (b[0] != 0 || b[1] != 0 || b[2] != 0 || b[3] != 0 || b[4] != 0)) {
    return true;
  }
  return false;
}

}  // namespace

bool looks_binary(std::string_view block) {
  if (block.empty()) return false;
  if (has_binary_signature(block)) return true;
  // Like ripgrep and grep, binary is decided by control bytes (NUL above all), not by
  // whether the text is UTF-8: a log written in GBK, Shift-JIS or Latin-1 has most of its
  // bytes outside UTF-8 and no control bytes, and is read (issue 14). Random or packed
  // data has about one byte in ten among the controls below.
  const auto* p = reinterpret_cast<const unsigned char*>(block.data());
  const size_t n = block.size();
  size_t nul = 0, ctrl = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char ch = p[i];
    if (ch == 0) {
      ++nul;
      ++ctrl;
    } else if (ch == 0x7f || (ch < 0x20 && !(ch >= 0x07 && ch <= 0x0d) && ch != 0x1b)) {
      // Text controls allowed: BEL, BS, TAB..CR, and ESC for ANSI colours/cursor moves.
      ++ctrl;
    }
  }
  return nul * 10 > n || ctrl * 20 > n;
}

InputReport read_inputs(const std::vector<std::string>& inputs, ByteSink& sink,
                        const ReadOptions& options) {
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

InputReport read_streams(StreamFeed& feed, ByteSink& sink, const ReadOptions& options) {
  InputReport report;
  Context c{sink, options, report, {}, 0, false};
  c.buffer.n = std::clamp(options.chunk_size, kMinReadBuffer, kMaxReadBuffer);
  c.buffer.bytes.reset(new char[c.buffer.n]);
  std::string name;
  int raw = -1;
  int skipped = 0;
  while (feed.next(name, raw)) {
    UniqueFd fd(raw);  // closed when read, or as soon as reading it stops
    if (c.stopped || c.check_interrupt()) {
      ++skipped;
      continue;
    }
    Tally tally;
    FdReader reader(fd.get());
    process_stream(c, reader, SourceInfo{name, 0, "plain"}, "", 0, Origin::kNamed, tally);
  }
  if (skipped > 0) {
    const std::string why = interrupted() ? std::string(interrupt_name(interrupted()))
                                          : "read limit of " + format_size(options.max_total_bytes) + " reached";
    c.note(why + "; " + std::to_string(skipped) + " more input(s) not read");
  }
  return report;
}

}  // namespace ff::io
