// Fuzz target: the record stage. Bytes -> LineFramer (in uneven chunks, with a small line
// limit so cutting is exercised) -> clean_line -> PrefixParser (the embedded KB's formats)
// -> TracebackJoiner per rank stream and LauncherSummaryTracker; plus the time and
// exception-line parsers on every line. Nothing may crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kb/kb.h"
#include "record/record.h"

namespace {

const ff::record::PrefixParser& parser() {
  static const std::unique_ptr<ff::record::PrefixParser> p = [] {
    ff::kb::LoadResult r = ff::kb::load(ff::kb::embedded_files());
    auto created = ff::record::PrefixParser::create(r.kb.prefixes);
    if (!created.ok()) std::abort();  // the embedded KB is checked by the test suite
    return std::move(created).value();
  }();
  return *p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ff::record;
  const PrefixParser& prefixes = parser();
  std::string_view input(reinterpret_cast<const char*>(data), size);

  LineFramer framer(512);
  std::map<int, TracebackJoiner> joiners;
  LauncherSummaryTracker summary;
  std::string clean;
  size_t tracebacks = 0;
  auto on_line = [&](const RawLine& l) {
    if (l.bytes.size() > 512) std::abort();  // the framer's limit holds
    clean_line(l.bytes, clean);
    Record rec;
    prefixes.parse(clean, rec);
    if (rec.message.size() > clean.size()) std::abort();
    summary.feed(rec, l.number);
    if (auto tb = joiners[rec.rank].feed(rec, l.number)) tracebacks += tb->exceptions.size();
    std::string type, message;
    parse_exception_line(rec.message, type, message);
    int64_t us;
    Clock clock;
    bool sub;
    for (const char* f : {"iso", "torchrun", "glog", "mdhms", "syslog", "dmesg", "hms"})
      parse_time(rec.message.substr(0, 40), f, us, clock, sub);
  };
  // Uneven chunks: 1, 2, 3, ... bytes, so lines and escapes are split everywhere.
  size_t pos = 0, step = 1;
  while (pos < input.size()) {
    size_t n = std::min(step++, input.size() - pos);
    framer.feed(input.substr(pos, n), on_line);
    pos += n;
  }
  framer.finish(on_line);
  for (auto& [rank, j] : joiners) {
    if (auto tb = j.finish()) tracebacks += tb->exceptions.size();
  }
  summary.take();
  return 0;
}
