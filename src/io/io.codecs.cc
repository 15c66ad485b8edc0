// io.codecs.cc — the decoders: gzip, zstd and xz through zlib, libzstd and liblzma
// (Codec, DecompressReader: every byte decoded before a cut is delivered), bzip2 through
// libarchive's filter (Bzip2Reader); make_decompressor picks one.
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <climits>
#include <cstring>

#include "io/io_internal.h"

namespace ff::io::detail {
namespace {

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
  virtual Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail, bool finish) = 0;
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
  Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail, bool /*finish*/) override {
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
      case Z_STREAM_END: return Step::kEnd;
      case Z_NEED_DICT: message_ = "stream needs a preset dictionary"; return Step::kError;
      case Z_MEM_ERROR: message_ = "out of memory"; return Step::kError;
      default: message_ = zs_.msg != nullptr ? zs_.msg : "invalid compressed data"; return Step::kError;
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
  Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail, bool /*finish*/) override {
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
  Step decode(const uint8_t*& in, size_t& in_avail, uint8_t*& out, size_t& out_avail, bool finish) override {
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
      case LZMA_STREAM_END: return Step::kEnd;
      case LZMA_FORMAT_ERROR: message_ = "file format not recognized"; break;
      case LZMA_OPTIONS_ERROR: message_ = "unsupported compression options"; break;
      case LZMA_DATA_ERROR: message_ = "compressed data is corrupt"; break;
      case LZMA_MEMLIMIT_ERROR: message_ = "decoding needs more than " + format_size(kXzMemLimit) + " of memory"; break;
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
        return fail(make_error(ErrorCode::kFormat, std::string(format_) + " decoder made no progress"), n - out_avail);
      }
    }
    return n - out_avail;
  }

 private:
  Error truncated_error() const {
    return make_error(ErrorCode::kTruncated, "truncated " + std::string(format_) + " stream after " +
                                                 std::to_string(total_out_) + " bytes: unexpected end of file");
  }
  Error codec_error() const {
    // Nothing decoded yet: the file has the magic bytes but is not this format at all.
    if (total_out_ == 0 && members_done_ == 0) {
      return make_error(ErrorCode::kFormat, "not a valid " + std::string(format_) + " stream: " + codec_->message());
    }
    return make_error(ErrorCode::kTruncated, "corrupt " + std::string(format_) + " stream after " +
                                                 std::to_string(total_out_) + " bytes: " + codec_->message());
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
    if (archive_read_open(a_.get(), &src_, nullptr, &ArchiveSource::read_cb, nullptr) != ARCHIVE_OK) {
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
      return make_error(ErrorCode::kTruncated,
                        "truncated bzip2 stream after " + std::to_string(total_out_) + " bytes: " + msg);
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

}  // namespace

std::unique_ptr<Reader> make_decompressor(Compression c, Reader& upstream) {
  switch (c) {
    case Compression::kGzip: return std::make_unique<DecompressReader>(std::make_unique<GzipCodec>(), "gzip", upstream);
    case Compression::kZstd: return std::make_unique<DecompressReader>(std::make_unique<ZstdCodec>(), "zstd", upstream);
    case Compression::kXz: return std::make_unique<DecompressReader>(std::make_unique<XzCodec>(), "xz", upstream);
    case Compression::kBzip2: return std::make_unique<Bzip2Reader>(upstream);
    case Compression::kNone: break;
  }
  return nullptr;
}

}  // namespace ff::io::detail
