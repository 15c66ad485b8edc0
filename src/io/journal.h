// io/journal.h — systemd journal exports read as text: `journalctl -o json` (one JSON
// object per line) and `journalctl -o export` (KEY=value lines, binary fields with their
// length, a blank line after each entry) become the lines rsyslog would have written,
//   2026-12-02T03:40:00.123456+00:00 gpu-node-7 train[4242]: the message
// (time from __REALTIME_TIMESTAMP in UTC, host from _HOSTNAME, program from
// _SYSTEMD_UNIT, else SYSLOG_IDENTIFIER, else _COMM, pid from _PID), which the syslog-iso
// prefix format of kb/formats/prefixes.yaml peels like any other line. A message with
// several lines gives several lines, each with the prefix; an entry without a host or a
// time gives its message alone. Internal to io: process_stream sniffs and wraps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace ff::io::detail {

enum class JournalFormat { kNone, kJson, kExport };

// What the first block of a stream is.
JournalFormat detect_journal(std::string_view head);

class JournalDecoder {
 public:
  explicit JournalDecoder(JournalFormat format) : format_(format) {}
  // Appends to `out` the lines of every entry complete in what was fed so far.
  void feed(std::string_view bytes, std::string& out);
  // The end of the stream: an entry left open is converted as far as it goes.
  void finish(std::string& out);
  uint64_t entries() const { return entries_; }
  uint64_t malformed() const { return malformed_; }  // JSON lines that did not parse

 private:
  void json_line(std::string_view line, std::string& out);
  void export_entries(std::string& out, bool at_end);
  struct Fields {
    std::string time_us, host, identifier, unit, comm, pid, message;
  };
  static const std::pair<std::string_view, std::string Fields::*> kFieldKeys[7];
  void emit(const Fields& f, std::string& out);

  JournalFormat format_;
  std::string in_;
  uint64_t entries_ = 0, malformed_ = 0;
};

}  // namespace ff::io::detail
