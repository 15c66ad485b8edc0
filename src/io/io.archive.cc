// io.archive.cc — tar through libarchive: ArchiveDataCursor (data blocks copied out so a
// truncated member keeps its tail), MemberReader and read_tar (members in archive order,
// each its own source; counts and limits).
#include <cstring>

#include "io/io_internal.h"

namespace ff::io::detail {

std::string archive_message(archive* a) {
  const char* m = archive_error_string(a);
  return m != nullptr && *m != '\0' ? std::string(m) : std::string("unknown error");
}

la_ssize_t ArchiveDataCursor::read(archive* a, char* buf, size_t n) {
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

namespace {

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
}  // namespace

// Members are read in archive order: streaming them, rather than sorting by name, keeps
// memory bounded and needs no seek (the archive may be a pipe).
void read_tar(Context& c, Reader& r, const SourceInfo& archive_info, const std::string& encoding, int depth,
              Origin origin, Tally& tally) {
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

}  // namespace ff::io::detail
