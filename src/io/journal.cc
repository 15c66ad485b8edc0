#include "io/journal.h"

#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace ff::io::detail {

namespace {

constexpr size_t kMaxEntry = 64u << 20;  // one entry, at most (a longer one is cut)

// microseconds since the epoch -> 2026-12-02T03:40:00.123456+00:00 (rsyslog's RFC 3339 form)
std::string iso_utc(std::string_view us_text) {
  uint64_t us = 0;
  if (us_text.empty() || us_text.size() > 19) return {};
  for (char c : us_text) {
    if (c < '0' || c > '9') return {};
    us = us * 10 + static_cast<uint64_t>(c - '0');
  }
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  if (::gmtime_r(&secs, &tm) == nullptr) return {};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06u+00:00", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(us % 1000000));
  return buf;
}

// A name as the syslog-iso format reads it ([\w./-]+): other bytes become '_'.
std::string word(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '/' || c == '-';
    out += ok ? c : '_';
  }
  return out;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// A JSON field's value as text: a string, or an array of bytes (journalctl writes a
// message that is not valid UTF-8 that way), or the first of several values.
std::string text_of(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    if (!v.empty() && v.front().is_number_unsigned()) {
      std::string bytes;
      for (const auto& b : v)
        if (b.is_number_unsigned()) bytes += static_cast<char>(b.get<unsigned>() & 0xff);
      return bytes;
    }
    if (!v.empty()) return text_of(v.front());
  }
  if (v.is_number()) return v.dump();
  return {};
}

}  // namespace

// The journal fields a line is made of, and where each goes (both formats read these).
const std::pair<std::string_view, std::string JournalDecoder::Fields::*> JournalDecoder::kFieldKeys[7] = {
    {"__REALTIME_TIMESTAMP", &Fields::time_us},
    {"_HOSTNAME", &Fields::host},
    {"SYSLOG_IDENTIFIER", &Fields::identifier},
    {"_SYSTEMD_UNIT", &Fields::unit},
    {"_COMM", &Fields::comm},
    {"_PID", &Fields::pid},
    {"MESSAGE", &Fields::message}};

JournalFormat detect_journal(std::string_view head) {
  const std::string_view first = head.substr(0, head.find('\n'));
  if (starts_with(first, "{\"") && first.find("\"__REALTIME_TIMESTAMP\"") != std::string_view::npos)
    return JournalFormat::kJson;
  if (starts_with(head, "__CURSOR=") || starts_with(head, "__REALTIME_TIMESTAMP=")) return JournalFormat::kExport;
  return JournalFormat::kNone;
}

void JournalDecoder::emit(const Fields& f, std::string& out) {
  ++entries_;
  std::string prefix;
  const std::string time = iso_utc(f.time_us);
  // The unit first, as journalctl -u names it (a service's output has the executable's
  // name as its identifier: "python3"), then the identifier, then the command.
  const std::string program = !f.unit.empty() ? f.unit : !f.identifier.empty() ? f.identifier : f.comm;
  if (!time.empty() && !f.host.empty() && !program.empty()) {
    prefix = time + " " + word(f.host) + " " + word(program);
    if (all_digits(f.pid)) prefix += "[" + f.pid + "]";
    prefix += ": ";
  }
  std::string_view msg = f.message;
  if (!msg.empty() && msg.back() == '\n') msg.remove_suffix(1);
  for (;;) {
    const size_t nl = msg.find('\n');
    out += prefix;
    out.append(msg.substr(0, nl));
    out += '\n';
    if (nl == std::string_view::npos) break;
    msg.remove_prefix(nl + 1);
  }
}

void JournalDecoder::json_line(std::string_view line, std::string& out) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    ++malformed_;
    out.append(line);  // kept as it is: a line of the log all the same
    out += '\n';
    return;
  }
  Fields f;
  for (const auto& [key, field] : kFieldKeys) {
    if (auto it = j.find(std::string(key)); it != j.end()) f.*field = text_of(*it);
  }
  emit(f, out);
}

void JournalDecoder::export_entries(std::string& out, bool at_end) {
  size_t pos = 0;
  for (;;) {
    // One entry: fields until an empty line.
    Fields f;
    size_t p = pos;
    bool complete = false, any = false;
    while (p < in_.size()) {
      const size_t nl = in_.find('\n', p);
      if (nl == std::string::npos) break;
      const std::string_view line(in_.data() + p, nl - p);
      if (line.empty()) {
        p = nl + 1;
        complete = true;
        break;
      }
      std::string_view key, value;
      std::string binary;
      if (const size_t eq = line.find('='); eq != std::string_view::npos) {
        key = line.substr(0, eq);
        value = line.substr(eq + 1);
        p = nl + 1;
      } else {
        // KEY\n, a little-endian 64-bit length, the bytes, \n.
        key = line;
        if (in_.size() - (nl + 1) < 8) break;
        uint64_t len = 0;
        for (int k = 7; k >= 0; --k)
          len = (len << 8) | static_cast<unsigned char>(in_[nl + 1 + static_cast<size_t>(k)]);
        if (len > kMaxEntry) {  // not an export stream after all: give up on the framing
          ++malformed_;
          p = nl + 1;
          continue;
        }
        if (in_.size() - (nl + 9) < len + 1) break;
        value = std::string_view(in_.data() + nl + 9, static_cast<size_t>(len));
        p = nl + 9 + static_cast<size_t>(len) + 1;
      }
      any = true;
      for (const auto& [name, field] : kFieldKeys) {
        if (key == name) f.*field = value;
      }
    }
    if (!complete && !(at_end && any)) break;
    if (!complete) p = in_.size();
    if (!any) {  // a blank line between entries
      pos = p;
      if (pos >= in_.size()) break;
      continue;
    }
    emit(f, out);
    pos = p;
    if (pos >= in_.size()) break;
  }
  in_.erase(0, pos);
}

void JournalDecoder::feed(std::string_view bytes, std::string& out) {
  in_.append(bytes);
  if (format_ == JournalFormat::kJson) {
    size_t pos = 0;
    for (size_t nl; (nl = in_.find('\n', pos)) != std::string::npos; pos = nl + 1)
      json_line(std::string_view(in_.data() + pos, nl - pos), out);
    in_.erase(0, pos);
    if (in_.size() > kMaxEntry) {  // a line without end: cut
      json_line(in_, out);
      in_.clear();
    }
  } else {
    export_entries(out, false);
    if (in_.size() > kMaxEntry) {
      export_entries(out, true);
      in_.clear();
    }
  }
}

void JournalDecoder::finish(std::string& out) {
  if (format_ == JournalFormat::kJson) {
    if (!in_.empty()) json_line(in_, out);
  } else {
    export_entries(out, true);
  }
  in_.clear();
}

}  // namespace ff::io::detail
