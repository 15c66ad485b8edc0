// Fuzz target: the Slurm record parsers the root epilog trusts (issue 31). Bytes ->
// parse_scontrol_records (as `scontrol show job -o` would print them) and the field list of
// each line, parse_id, and expand_slurm_pattern over the fields. Beyond not crashing, the
// promise the epilog rests on is checked: a record called certain has only known keys, each
// once, and comes from an answer with no continuation line and no job listed twice.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "schedulers/schedulers.h"
#include "base/strings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ff::app;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<ScontrolRecord> records = parse_scontrol_records(input);
  bool continuation = false;
  size_t record_lines = 0;
  for (std::string_view line : ff::split(input, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (ff::trim(line).empty()) continue;
    if (ff::starts_with(line, "JobId=")) {
      ++record_lines;
    } else {
      continuation = true;
    }
  }
  if (records.size() != record_lines) std::abort();
  std::set<std::string> ids;
  bool twice = false;
  for (const ScontrolRecord& r : records) twice |= !ids.insert(r.fields.count("JobId") ? r.fields.at("JobId") : "").second;
  for (const ScontrolRecord& r : records) {
    if (!r.doubt.empty()) continue;
    if (continuation || twice) std::abort();  // a certain record in an ambiguous answer
    SlurmJob j;
    auto get = [&](const char* k) {
      auto it = r.fields.find(k);
      return it == r.fields.end() ? std::string() : it->second;
    };
    j.id = get("JobId");
    j.name = get("JobName");
    j.user = get("UserId");
    j.node_list = get("NodeList");
    (void)expand_slurm_pattern(get("StdOut"), j);
  }
  // A certain record's keys are each there once: records[i] is the i-th line that starts
  // with "JobId=" (the count was checked above), and its field list has no repeat.
  size_t i = 0;
  for (std::string_view line : ff::split(input, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (ff::trim(line).empty() || !ff::starts_with(line, "JobId=")) continue;
    const ScontrolRecord& r = records[i++];
    if (!r.doubt.empty()) continue;
    std::set<std::string> keys;
    for (const auto& [k, v] : parse_scontrol_field_list(line)) {
      if (!keys.insert(k).second) std::abort();  // a repeated key in a certain record
    }
  }
  if (auto id = detail::parse_id(input); id && *id == 0xffffffffu) std::abort();
  return 0;
}
