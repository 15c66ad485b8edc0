// Fuzz target: the io reader. The bytes are written as-is to a temporary file (so gzip,
// zstd, xz, bzip2 and tar magic send them down every decoder) and read with
// io::read_inputs, once with the defaults and once with binary detection off and tiny
// chunks. The total expansion is capped low so that a small compression bomb stays fast;
// the sink checks the begin/data/end protocol and the limits.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "io/io.h"

namespace {

class CheckingSink : public ff::io::ByteSink {
 public:
  explicit CheckingSink(size_t max_chunk) : max_chunk_(max_chunk) {}
  void begin(const ff::io::SourceInfo&) override {
    if (open_) __builtin_trap();
    open_ = true;
  }
  void data(std::string_view chunk) override {
    if (!open_ || chunk.empty() || chunk.size() > max_chunk_) __builtin_trap();
    bytes += chunk.size();
  }
  void end(const ff::io::SourceInfo&, const ff::Status&) override {
    if (!open_) __builtin_trap();
    open_ = false;
  }
  bool open() const { return open_; }
  uint64_t bytes = 0;

 private:
  size_t max_chunk_;
  bool open_ = false;
};

const std::string& temp_path() {
  static const std::string p = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/ff-fuzz-io-" + std::to_string(::getpid()) + ".bin";
  }();
  return p;
}

void run(const std::string& path, const ff::io::ReadOptions& opt) {
  CheckingSink sink(opt.chunk_size);
  ff::io::InputReport rep = ff::io::read_inputs({path}, sink, opt);
  if (sink.open()) __builtin_trap();
  if (rep.bytes_read != sink.bytes || rep.bytes_read > opt.max_total_bytes) __builtin_trap();
  for (const auto& e : rep.errors) {
    if (e.message.empty() || e.where.file.empty()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = temp_path();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  for (size_t off = 0; off < size;) {
    ssize_t w = ::write(fd, data + off, size - off);
    if (w <= 0) std::abort();
    off += static_cast<size_t>(w);
  }
  ::close(fd);

  ff::io::ReadOptions opt;
  opt.max_total_bytes = 8 << 20;  // a 64 KiB input may claim gigabytes
  opt.max_archive_members = 64;
  run(path, opt);
  opt.skip_binary = false;
  opt.chunk_size = 7;
  run(path, opt);
  ::unlink(path.c_str());
  return 0;
}
