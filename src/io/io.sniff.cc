// io.sniff.cc — what a stream is, from its first block: compression magic, tar, a
// journal export, binary (looks_binary: control bytes and known binary signatures); and
// process_stream, which hands the stream to the reader it needs.
#include <cstring>

#include "io/io_internal.h"
#include "io/journal.h"

namespace ff::io {
namespace detail {
namespace {

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

// ---------------------------------------------------------------------------------------
// Sniffing

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
      (head.substr(4, 6) == "\x31\x41\x59\x26\x53\x59"sv || head.substr(4, 6) == "\x17\x72\x45\x38\x50\x90"sv)) {
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

// --- looks_binary helpers -----------------------------------------------------------------

// Formats found next to logs (checkpoints, arrays, executables) whose first block can pass
// for text: a safetensors header is pages of JSON, a pickle is full of identifiers.
bool has_binary_signature(std::string_view b) {
  using namespace std::string_view_literals;
  static constexpr std::string_view kMagics[] = {
      "PK\x03\x04"sv,  // zip: torch.save (.pt/.pth), .npz
      "\x7f"
      "ELF"sv,                // executables, core files
      "\x93NUMPY"sv,          // .npy
      "\x89HDF\r\n\x1a\n"sv,  // HDF5 / Keras .h5
      "\x89PNG\r\n\x1a\n"sv,  // plots
      "\xff\xd8\xff"sv,       // JPEG
      "GGUF"sv,               // llama.cpp weights
      "SQLite format 3\0"sv,  // sqlite databases (wandb, optuna)
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

// Decides what r is (compressed, tar, text, binary) and handles it.
Outcome process_stream(Context& c, Reader& r, SourceInfo info, const std::string& wrappers, int depth, Origin origin,
                       Tally& tally) {
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
      return process_stream(c, *dec, std::move(info), wrap_encoding(compression_name(comp), wrappers), depth + 1,
                            origin, tally);
    }
    if (is_tar(head)) {
      read_tar(c, sniffed, info, wrap_encoding("tar", wrappers), depth + 1, origin, tally);
      return Outcome::kDelivered;
    }
    if (const detail::JournalFormat jf = detail::detect_journal(head); jf != detail::JournalFormat::kNone) {
      JournalReader journal(jf, sniffed);
      return process_stream(
          c, journal, std::move(info),
          wrap_encoding(jf == detail::JournalFormat::kJson ? "journal-json" : "journal-export", wrappers), depth + 1,
          origin, tally);
    }
  }
  if (c.options.skip_binary && looks_binary(head)) {
    ++tally.binary;
    switch (origin) {
      case Origin::kNamed: c.error(make_error(ErrorCode::kFormat, "binary file, skipped", at(info.name)), tally); break;
      case Origin::kWalk: c.note("skipped binary file " + info.name); break;
      case Origin::kMember: c.note("skipped binary archive member " + info.name); break;
    }
    return Outcome::kSkipped;
  }
  info.encoding = wrappers.empty() ? "plain" : wrappers;
  if (wrappers.empty() && c.sink.accepts_mapped()) {
    if (std::optional<Mappable> m = sniffed.mappable()) return deliver_mapped(c, *m, info, tally);
  }
  return deliver(c, sniffed, info, tally);
}

}  // namespace detail

using namespace detail;  // NOLINT(google-build-using-namespace): the module's own internals

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
}  // namespace ff::io
