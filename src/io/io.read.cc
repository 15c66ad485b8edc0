// io.read.cc — io's error texts, deliver (a Reader's bytes to the sink as one source,
// within the byte limit, stopping at Ctrl-C) and read_streams (a feed of descriptors).
#include <system_error>

#include "io/io_internal.h"

namespace ff::io {
namespace detail {

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

}  // namespace detail

using namespace detail;  // NOLINT(google-build-using-namespace): the module's own internals

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
