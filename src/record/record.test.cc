#include "record/record.h"
#include "record/prefix_fast.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace ff::record {
namespace {

std::vector<std::string> frame(const std::vector<std::string>& chunks, size_t max_line = 1 << 20) {
  LineFramer f(max_line);
  std::vector<std::string> out;
  auto cb = [&](const RawLine& l) { out.push_back(std::string(l.bytes) + (l.cut ? "<cut>" : "")); };
  for (const auto& c : chunks) f.feed(c, cb);
  f.finish(cb);
  return out;
}

TEST(LineFramer, LinesSpanChunksAndLastLineWithoutNewline) {
  EXPECT_EQ(frame({"ab", "c\nde", "f\n", "g"}), (std::vector<std::string>{"abc", "def", "g"}));
  EXPECT_EQ(frame({"\n\n"}), (std::vector<std::string>{"", ""}));
}

TEST(LineFramer, LongLineIsCutNotBuffered) {
  std::string big(100, 'x');
  auto lines = frame({big.substr(0, 30), big.substr(30) + "\nok\n"}, 10);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], std::string(10, 'x') + "<cut>");
  EXPECT_EQ(lines[1], "ok");
}

TEST(LineFramer, PlainLinesNeedNoCleaning) {
  // Lines of every length around the sixteen-byte steps, with a byte that clean_line
  // changes (or not) at every place, fed whole and in odd pieces: a line said plain
  // needs no cleaning, and a line framed inside one piece is said plain when it needs none.
  std::mt19937 rng(5);
  std::string log;
  std::vector<std::string> want;
  for (int i = 0; i < 3000; ++i) {
    std::string line(rng() % 70, 'a');
    for (char& c : line) c = "abc 0|:[]"[rng() % 9];
    if (!line.empty() && rng() % 3 == 0) line[rng() % line.size()] = "\r\x1b"[rng() % 2];
    if (!line.empty() && rng() % 50 == 0) line[rng() % line.size()] = '\0';
    want.push_back(line);
    log += line + "\n";
  }
  for (size_t piece : {log.size(), size_t{37}, size_t{4096}}) {
    LineFramer f;
    size_t n = 0, plain = 0;
    bool whole = piece == log.size();
    auto cb = [&](const RawLine& l) {
      ASSERT_LT(n, want.size());
      EXPECT_EQ(l.bytes, want[n]);
      if (l.plain) ++plain;
      if (l.plain) { EXPECT_FALSE(needs_cleaning(l.bytes)) << n; }
      if (whole) { EXPECT_EQ(l.plain, !needs_cleaning(l.bytes)) << n; }
      ++n;
    };
    for (size_t at = 0; at < log.size(); at += piece) f.feed(std::string_view(log).substr(at, piece), cb);
    f.finish(cb);
    EXPECT_EQ(n, want.size());
    if (piece != 37) { EXPECT_GT(plain, want.size() / 3); }
  }
}

TEST(LineFramer, EveryLineEndFinderAgreesWithAByteLoop) {
  std::mt19937 rng(11);
  const auto finders = detail::line_end_finders();
  ASSERT_FALSE(finders.empty());
  for (int iter = 0; iter < 20000; ++iter) {
    std::string buf(rng() % 100, 'x');
    for (char& c : buf) c = rng() % 8 == 0 ? "\n\r\x1b\0\t"[rng() % 5] : 'x';
    const char* e = buf.data() + buf.size();
    const char* want = buf.data();
    bool want_dirty = false;
    for (; want < e && *want != '\n'; ++want) want_dirty |= *want == '\r' || *want == '\x1b' || *want == '\0';
    for (auto find : finders) {
      bool dirty = false;
      ASSERT_EQ(find(buf.data(), e, dirty), want) << iter;
      ASSERT_EQ(dirty, want_dirty) << iter;
    }
  }
}

// Issue 7: an old-Mac-style log ends its lines with '\r' only. Before, the whole file was
// one line of which clean_line kept the text after the last '\r'.
TEST(LineFramer, CrOnlyLogIsSplitAtCarriageReturns) {
  EXPECT_EQ(frame({"a\rb\r\rc"}), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(frame({"a\rb\r"}), (std::vector<std::string>{"a", "b"}));
  // Decided when the first line reaches the limit (8 here); then '\r', '\n' and a "\r\n"
  // cut across chunks each end one line.
  EXPECT_EQ(frame({"one\rtw", "o\rsix\r", "\nthree\rfour\r", "five"}, 8),
            (std::vector<std::string>{"one", "two", "six", "three", "four", "five"}));
  // Offsets and numbers follow the CR-separated lines.
  LineFramer f;
  std::vector<std::pair<uint64_t, uint64_t>> at;
  auto cb = [&](const RawLine& l) { at.emplace_back(l.number, l.offset); };
  f.feed("ab\rcd\r\re", cb);
  f.finish(cb);
  EXPECT_EQ(at, (std::vector<std::pair<uint64_t, uint64_t>>{{1, 0}, {2, 3}, {3, 6}, {4, 7}}));
  // A '\n' in the first line means a normal log: the CRs are progress-bar redraws.
  EXPECT_EQ(frame({"a\rb\nc\n"}), (std::vector<std::string>{"a\rb", "c"}));
}

TEST(LineFramer, CrOnlyLogLongerThanTheLineLimitIsDecidedAtTheLimit) {
  std::string log;
  for (int i = 0; i < 100; ++i) log += "line " + std::to_string(i) + "\r";
  std::vector<std::string> chunks;
  for (size_t i = 0; i < log.size(); i += 7) chunks.push_back(log.substr(i, 7));
  auto lines = frame(chunks, 64);
  ASSERT_EQ(lines.size(), 100u);
  EXPECT_EQ(lines[0], "line 0");
  EXPECT_EQ(lines[99], "line 99");
}

TEST(LineFramer, ProgressBarsInNewlineTerminatedLogsStayOneLine) {
  // A '\r' before the first '\n' is a progress bar, not a line end.
  auto lines = frame({" 10%|#  | 1/10\r 50%|#####| 5/10\r100%|#########|", " 10/10\nloss 0.1\nx\ry\n"});
  ASSERT_EQ(lines.size(), 3u);
  std::string out;
  clean_line(lines[0], out);
  EXPECT_EQ(out, "100%|#########| 10/10");
  EXPECT_EQ(lines[2], "x\ry");
  // A long first line without any CR is cut, not split.
  auto cut = frame({std::string(100, 'x'), "\nok\n"}, 10);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut[0], std::string(10, 'x') + "<cut>");
  // CRLF and a trailing CR are line ends of a normal log.
  EXPECT_EQ(frame({"a\r\nb\r\n"}), (std::vector<std::string>{"a\r", "b\r"}));
  EXPECT_EQ(frame({"only\r"}), (std::vector<std::string>{"only\r"}));
}

TEST(CleanLine, AnsiCrAndNul) {
  std::string out;
  clean_line("\x1b[31mERROR\x1b[0m boom\r", out);
  EXPECT_EQ(out, "ERROR boom");
  clean_line(" 10%|#   | 1/10\r 50%|#####| 5/10\rRuntimeError: x", out);
  EXPECT_EQ(out, "RuntimeError: x");
  clean_line(std::string("a\0b", 3), out);
  EXPECT_EQ(out, "ab");
  clean_line("\x1b]0;title\x07text", out);
  EXPECT_EQ(out, "text");
}

TEST(ParseTime, Formats) {
  int64_t us;
  Clock c;
  bool sub;
  ASSERT_TRUE(parse_time("2026-11-30 10:20:42,398", "iso", us, c, sub));
  EXPECT_TRUE(sub);
  EXPECT_EQ(c, Clock::kWall);
  int64_t a = us;
  ASSERT_TRUE(parse_time("2026-11-30T10:20:43.000Z", "iso", us, c, sub));
  EXPECT_EQ(us - a, 602000);
  ASSERT_TRUE(parse_time("2026-11-30T12:20:43+02:00", "iso", us, c, sub));
  EXPECT_EQ(us - a, 602000);
  ASSERT_TRUE(parse_time("2026-11-30_10:20:45", "torchrun", us, c, sub));
  EXPECT_FALSE(sub);
  ASSERT_TRUE(parse_time("1120 10:11:12.345678", "glog", us, c, sub));
  EXPECT_EQ(c, Clock::kWallNoYear);
  ASSERT_TRUE(parse_time("74785.660366", "dmesg", us, c, sub));
  EXPECT_EQ(us, 74785660366);
  EXPECT_EQ(c, Clock::kBoot);
  ASSERT_TRUE(parse_time("Oct  4 13:19:39", "syslog", us, c, sub));
  ASSERT_TRUE(parse_time("06-30 06:10:12", "mdhms", us, c, sub));
  EXPECT_FALSE(parse_time("2026-13-30 10:20:42", "iso", us, c, sub));
  EXPECT_FALSE(parse_time("not a time", "iso", us, c, sub));
}

// Found by fuzz_record (issue 7): a long run of digits where syslog's day goes overflowed
// an int (UBSan), as did a huge dmesg seconds value.
TEST(ParseTime, FuzzFoundDigitRunsDoNotOverflow) {
  int64_t us;
  Clock c;
  bool sub;
  EXPECT_FALSE(parse_time("Oct 404042331999 13:19:39", "syslog", us, c, sub));
  EXPECT_FALSE(parse_time("Oct 32 13:19:39", "syslog", us, c, sub));
  EXPECT_TRUE(parse_time("Oct  4 13:19:39", "syslog", us, c, sub));
  EXPECT_FALSE(parse_time("9223372036854775.5", "dmesg", us, c, sub));
  EXPECT_FALSE(parse_time("-5.25", "dmesg", us, c, sub));
}

TEST(ExceptionLine, Recognised) {
  std::string t, m;
  ASSERT_TRUE(parse_exception_line("RuntimeError: mat1 and mat2 shapes cannot be multiplied", t, m));
  EXPECT_EQ(t, "RuntimeError");
  EXPECT_EQ(m, "mat1 and mat2 shapes cannot be multiplied");
  ASSERT_TRUE(parse_exception_line("torch.OutOfMemoryError: CUDA out of memory.", t, m));
  EXPECT_EQ(t, "torch.OutOfMemoryError");
  EXPECT_TRUE(parse_exception_line("KeyboardInterrupt", t, m));
  EXPECT_FALSE(parse_exception_line("File \"x.py\", line 3, in f", t, m));
  EXPECT_FALSE(parse_exception_line("loss: 0.1", t, m));
  EXPECT_FALSE(parse_exception_line("Setting OMP_NUM_THREADS", t, m));
}

Record rec_of(std::string_view msg) {
  Record r;
  r.text = r.message = msg;
  return r;
}

TEST(TracebackJoiner, ChainedAndOriginalTraceback) {
  TracebackJoiner j;
  std::vector<std::string> lines = {
      "Traceback (most recent call last):",
      "  File \"a.py\", line 1, in <module>",
      "    data.reraise()",
      "ValueError: Caught ValueError in DataLoader worker process 0.",
      "Original Traceback (most recent call last):",
      "  File \"w.py\", line 3, in f",
      "ValueError: buffer length (126 bytes) must be a multiple of element size (4)",
      "",
      "next log line",
  };
  std::optional<Traceback> tb;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (auto t = j.feed(rec_of(lines[i]), i + 1)) tb = t;
  }
  ASSERT_TRUE(tb.has_value());
  EXPECT_EQ(tb->first_line, 1u);
  ASSERT_EQ(tb->exceptions.size(), 2u);
  EXPECT_EQ(tb->exceptions.back().line, 7u);
  EXPECT_EQ(tb->exceptions.back().type, "ValueError");
}

TEST(TracebackJoiner, MultiLineMessageAndIndentedSummaryTraceback) {
  TracebackJoiner j;
  std::vector<std::string> lines = {
      "  traceback : Traceback (most recent call last):",        "    File \"x.py\", line 1, in f",     "      g()",
      "  RuntimeError: Error(s) in loading state_dict for MLP:", "  \tsize mismatch for body.0.weight", "[3]:",
  };
  std::optional<Traceback> tb;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (auto t = j.feed(rec_of(lines[i]), i + 1)) tb = t;
  }
  ASSERT_TRUE(tb.has_value());
  EXPECT_EQ(tb->exceptions.back().line, 4u);
  EXPECT_EQ(tb->last_line, 5u);
}

TEST(LauncherSummary, ParsesTorchrunFailureTable) {
  std::vector<std::string> lines = {
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
      "============================================================",
      "train.py FAILED",
      "------------------------------------------------------------",
      "Failures:",
      "[1]:",
      "  time      : 2026-11-30_10:23:03",
      "  host      : node7",
      "  rank      : 1 (local_rank: 1)",
      "  exitcode  : -9 (pid: 1177)",
      "  error_file: <N/A>",
      "  traceback : Signal 9 (SIGKILL) received by PID 1177",
      "------------------------------------------------------------",
      "Root Cause (first observed failure):",
      "[0]:",
      "  rank      : 0 (local_rank: 0)",
      "  exitcode  : 1 (pid: 1176)",
      "============================================================",
      "after",
  };
  LauncherSummaryTracker t;
  std::vector<bool> inside;
  for (size_t i = 0; i < lines.size(); ++i) inside.push_back(t.feed(rec_of(lines[i]), i + 1));
  EXPECT_TRUE(inside[0]);
  EXPECT_TRUE(inside[17]);
  EXPECT_FALSE(inside[18]);
  auto f = t.take();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].rank, 1);
  EXPECT_EQ(f[0].host, "node7");
  EXPECT_EQ(f[0].exitcode, -9);
  EXPECT_EQ(f[0].pid, 1177);
  EXPECT_EQ(f[0].error, "Signal 9 (SIGKILL) received by PID 1177");
  EXPECT_FALSE(f[0].root_cause);
  EXPECT_EQ(f[1].rank, 0);
  EXPECT_TRUE(f[1].root_cause);
}

// Syslog as rsyslog and the RFC write it: host, program and pid; an application's own
// ISO time followed by "LEVEL logger: " is not mistaken for a host and a tag.
TEST(PrefixParser, SyslogHostProgramAndNotAnApplicationsLevel) {
  kb::LoadResult kr = kb::load(kb::embedded_files());
  auto p = PrefixParser::create(kr.kb.prefixes);
  ASSERT_TRUE(p.ok());
  Record rec;
  p.value()->parse("Dec  2 04:03:55 gpu-node-7 train[4242] [rank2]: RuntimeError: x", rec);
  EXPECT_EQ(rec.node, "gpu-node-7");
  EXPECT_EQ(rec.program, "train");
  EXPECT_EQ(rec.pid, 4242);
  EXPECT_EQ(rec.rank, 2);
  EXPECT_EQ(rec.message, "RuntimeError: x");
  rec = Record{};
  p.value()->parse("<13>1 2026-12-02T04:03:55.200619+00:00 vm train 4242 - [timeQuality tzKnown=\"1\"] boom", rec);
  EXPECT_EQ(rec.node, "vm");
  EXPECT_EQ(rec.program, "train");
  EXPECT_EQ(rec.message, "boom");
  EXPECT_NE(rec.time_us, kNoTime);
  rec = Record{};
  p.value()->parse("2024-01-01T10:00:00Z INFO train: step 3", rec);
  EXPECT_EQ(rec.node, "");
  EXPECT_EQ(rec.program, "");
  EXPECT_EQ(rec.level, 'I');
  EXPECT_EQ(rec.message, "train: step 3");
}

TEST(PrefixParser, PeelsPrefixesFromKbFormats) {
  kb::LoadResult r = kb::load(kb::embedded_files());
  auto p = PrefixParser::create(r.kb.prefixes);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_TRUE(p.value()->check_samples().empty());
  Record rec;
  p.value()->parse("[default3]:2026-11-30 10:20:42,398 INFO [rank3] train: initializing process group", rec);
  EXPECT_EQ(rec.rank, 3);
  EXPECT_EQ(rec.level, 'I');
  EXPECT_TRUE(rec.time_subsecond);
  EXPECT_EQ(rec.message, "train: initializing process group");
  p.value()->parse("[rank1]: ValueError: buffer length", rec);
  EXPECT_EQ(rec.rank, 1);
  EXPECT_EQ(rec.message, "ValueError: buffer length");
  p.value()->parse("3: Traceback (most recent call last):", rec);
  EXPECT_EQ(rec.rank, 3);
  p.value()->parse("[1,2]<stdout>:smc-gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected", rec);
  EXPECT_EQ(rec.rank, 2);
  EXPECT_EQ(rec.node, "smc-gpu-03");
  EXPECT_EQ(rec.gpu, 0);
  EXPECT_EQ(rec.message, "smc-gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected");
  p.value()->parse("worker-1: [default0]:[rank0]:[E1120 10:11:12.345678 140 ProcessGroupNCCL.cpp:616] boom", rec);
  EXPECT_EQ(rec.node, "worker-1");
  EXPECT_EQ(rec.rank, 0);
  EXPECT_EQ(rec.level, 'E');
  EXPECT_EQ(rec.message, "boom");
  // Under torchrun's tee on a multi-node job: the tee's index is the local one, PyTorch's
  // own "[rank12]:" after it the global rank (rank_wins).
  p.value()->parse("[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] watchdog", rec);
  EXPECT_EQ(rec.rank, 12);
  // Syslog's wire form: the priority, then the BSD header.
  p.value()->parse("<14>Nov 30 10:21:08 gpu-node-07 python3[4242]: [rank3]: Traceback (most recent call last):", rec);
  EXPECT_EQ(rec.node, "gpu-node-07");
  EXPECT_EQ(rec.pid, 4242);
  EXPECT_EQ(rec.rank, 3);
  EXPECT_EQ(rec.message, "Traceback (most recent call last):");
  p.value()->parse("RuntimeError: not a prefix", rec);
  EXPECT_EQ(rec.message, "RuntimeError: not a prefix");
  EXPECT_EQ(rec.rank, -1);
}

}  // namespace
}  // namespace ff::record

namespace ff::record {
namespace {

TEST(TracebackJoiner, BackToBackTracebacksOfDifferentProcessesAreSeparate) {
  TracebackJoiner j;
  std::vector<std::string> lines = {
      "Traceback (most recent call last):",
      "  File \"a.py\", line 1, in <module>",
      "RuntimeError: mat1 and mat2 shapes cannot be multiplied",
      "Traceback (most recent call last):",
      "  File \"a.py\", line 9, in <module>",
      "RuntimeError: Connection closed by peer",
      "During handling of the above exception, another exception occurred:",
      "",
      "Traceback (most recent call last):",
      "  File \"b.py\", line 2, in g",
      "KeyError: 'x'",
      "done",
  };
  std::vector<Traceback> tbs;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (auto t = j.feed(rec_of(lines[i]), i + 1)) tbs.push_back(*t);
  }
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_EQ(tbs[0].exceptions.back().line, 3u);
  EXPECT_EQ(tbs[1].first_line, 4u);
  ASSERT_EQ(tbs[1].exceptions.size(), 2u);
  EXPECT_EQ(tbs[1].exceptions.back().type, "KeyError");
}

}  // namespace
}  // namespace ff::record

// The hand-written prefix matchers against RE2, their reference (record/prefix_fast.cc).
namespace ff::record {
namespace {

struct Span {
  size_t at = 0, len = 0;
  bool operator==(const Span& o) const { return at == o.at && len == o.len; }
};
Span span_in(std::string_view whole, std::string_view part) {
  if (part.empty()) return {};
  return {static_cast<size_t>(part.data() - whole.data()), part.size()};
}

// A readable difference between two matches of one format on one text, or "".
std::string match_diff(std::string_view text, const PrefixParser::FormatMatch& a, const PrefixParser::FormatMatch& b) {
  std::string d;
  auto cmp = [&](const char* name, std::string_view x, std::string_view y) {
    if (!(span_in(text, x) == span_in(text, y)))
      d += std::string(" ") + name + ": '" + std::string(x) + "' vs '" + std::string(y) + "'";
  };
  if (a.matched != b.matched) return a.matched ? " fast matches, RE2 does not" : " RE2 matches, fast does not";
  if (!a.matched) return "";
  if (a.length != b.length) d += " length " + std::to_string(a.length) + " vs " + std::to_string(b.length);
  cmp("rank", a.rank, b.rank);
  cmp("local_rank", a.local_rank, b.local_rank);
  cmp("pid", a.pid, b.pid);
  cmp("gpu", a.gpu, b.gpu);
  cmp("node", a.node, b.node);
  cmp("level", a.level, b.level);
  cmp("time", a.time, b.time);
  cmp("program", a.program, b.program);
  return d;
}

std::string record_diff(const Record& a, const Record& b) {
  std::string d;
  if (a.rank != b.rank) d += " rank";
  if (a.local_rank != b.local_rank) d += " local_rank";
  if (a.pid != b.pid) d += " pid";
  if (a.gpu != b.gpu) d += " gpu";
  if (a.node != b.node) d += " node";
  if (a.program != b.program) d += " program";
  if (a.time_us != b.time_us || a.clock != b.clock || a.time_subsecond != b.time_subsecond) d += " time";
  if (a.time_text != b.time_text) d += " time_text";
  if (a.level != b.level) d += " level";
  if (a.message.data() != b.message.data() || a.message.size() != b.message.size()) d += " message";
  if (a.prefix_id != b.prefix_id) d += " prefix_id";
  return d;
}

class FastPrefixes : public ::testing::Test {
 protected:
  void SetUp() override {
    kb::LoadResult r = kb::load(kb::embedded_files());
    formats_ = r.kb.prefixes;
    make_parsers();
  }
  void make_parsers() {
    auto f = PrefixParser::create(formats_, PrefixParser::Matchers::kFast);
    auto c = PrefixParser::create(formats_, PrefixParser::Matchers::kCompiled);
    auto re = PrefixParser::create(formats_, PrefixParser::Matchers::kRegexOnly);
    ASSERT_TRUE(f.ok() && c.ok() && re.ok());
    fast_ = std::move(f.value());
    compiled_ = std::move(c.value());
    regex_ = std::move(re.value());
  }
  // Every format at the start of text, and the whole parse, both ways.
  void check(std::string_view text) {
    for (size_t i = 0; i < fast_->format_count(); ++i) {
      auto a = fast_->match_format(i, text, PrefixParser::Matchers::kFast);
      auto b = fast_->match_format(i, text, PrefixParser::Matchers::kRegexOnly);
      std::string d = match_diff(text, a, b);
      if (!d.empty() && ++failures_ <= 20) ADD_FAILURE() << fast_->format(i).id << " on '" << text << "':" << d;
      // The program compiled from the regex (every format's, hand-written matcher or not).
      auto p = fast_->match_format(i, text, PrefixParser::Matchers::kCompiled);
      d = match_diff(text, p, b);
      if (!d.empty() && ++failures_ <= 20)
        ADD_FAILURE() << fast_->format(i).id << "'s program on '" << text << "':" << d;
      // The two-byte filter never turns away a text the format matches.
      auto kind = detail::fast_kind_for(fast_->format(i).id, fast_->format(i).regex);
      if (b.matched && text.size() >= 2 && kind != detail::FastKind::kNone &&
          !detail::may_start2(kind, static_cast<unsigned char>(text[0]), static_cast<unsigned char>(text[1])) &&
          ++failures_ <= 20)
        ADD_FAILURE() << fast_->format(i).id << " matches '" << text << "' but may_start2 says no";
    }
    Record a, b, c;
    fast_->parse(text, a);
    regex_->parse(text, b);
    compiled_->parse(text, c);
    std::string d = record_diff(a, b);
    if (!d.empty() && ++failures_ <= 20) ADD_FAILURE() << "parse of '" << text << "' differs:" << d;
    d = record_diff(c, b);
    if (!d.empty() && ++failures_ <= 20) ADD_FAILURE() << "parse of '" << text << "' with the programs differs:" << d;
    if (yaml_) {
      // The formats of a KB directory that renamed every built-in one: the same record,
      // under the new names.
      Record y;
      yaml_->parse(text, y);
      const std::string want = a.prefix_id.empty() ? "" : std::string(a.prefix_id) + "-yaml";
      y.prefix_id = y.prefix_id == want ? a.prefix_id : std::string_view("(other)");
      d = record_diff(y, a);
      if (!d.empty() && ++failures_ <= 20)
        ADD_FAILURE() << "parse of '" << text << "' with the YAML-only formats differs:" << d;
    }
    ++checked_;
  }
  std::vector<kb::PrefixFormat> formats_;
  // Streams of lines of one shape each (see LinesOfOneShapeParseLikeRe2).
  void shape_streams();
  std::unique_ptr<PrefixParser> fast_, compiled_, regex_, yaml_;
  std::vector<std::string> extra_bases_;
  int failures_ = 0;
  size_t checked_ = 0;
};

TEST_F(FastPrefixes, EveryEmbeddedFormatCompilesToAProgram) {
  // A format needs no hand-written matcher (prefix_fast.h): its regex compiles to a
  // program (prefix_program.h), which keeps the memo on for the lines it is tried on. A
  // regex outside the programs' subset would still be correct (RE2), but slower.
  for (size_t i = 0; i < fast_->format_count(); ++i)
    EXPECT_TRUE(fast_->has_program(i)) << fast_->format(i).id << "'s regex is outside the programs' subset";
}

TEST_F(FastPrefixes, SamplesAndTheirSuffixesMatchLikeRe2) {
  for (const auto& f : formats_) {
    for (const auto& s : f.samples) {
      for (size_t k = 0; k <= s.size(); ++k) check(std::string_view(s).substr(k));
      for (size_t k = 0; k <= s.size(); ++k) check(std::string_view(s).substr(0, k));
    }
  }
  EXPECT_EQ(failures_, 0);
}

TEST_F(FastPrefixes, RandomPrefixesMatchLikeRe2) {
  // Pieces the formats are made of, glued at random, plus mutated samples.
  const std::vector<std::string> pieces = {"[",
                                           "]",
                                           "(",
                                           ")",
                                           ":",
                                           ": ",
                                           " ",
                                           "  ",
                                           "     ",
                                           "|",
                                           " | ",
                                           ",",
                                           ".",
                                           "-",
                                           "/",
                                           "_",
                                           "<",
                                           ">",
                                           "=",
                                           "0",
                                           "3",
                                           "12",
                                           "123456",
                                           "2026",
                                           "11",
                                           "30",
                                           "-11-30",
                                           "10:20:42",
                                           ",398",
                                           ".123456",
                                           "T",
                                           "Z",
                                           "+05:30",
                                           "-0800",
                                           "+05",
                                           "rank",
                                           "Rank",
                                           "default",
                                           "trainer",
                                           "INFO",
                                           "WARNING",
                                           "WARN",
                                           "WARNINGS",
                                           "ERROR",
                                           "DEBUG",
                                           "CRITICAL",
                                           "FATAL",
                                           "I",
                                           "W",
                                           "E",
                                           "F",
                                           "E1120",
                                           "1120",
                                           "stdout",
                                           "stderr",
                                           "stdou",
                                           "F ",
                                           "P ",
                                           "pid=",
                                           "[pod/",
                                           "pod/",
                                           "] ",
                                           "worker-0",
                                           "a.b",
                                           ", ip=",
                                           "10.0.0.1",
                                           "::1",
                                           "LLMRayActor",
                                           "node-1",
                                           "worker-1",
                                           "a1.b",
                                           "a.1",
                                           "host",
                                           "Oct",
                                           " 4",
                                           "Nov",
                                           "kernel",
                                           "[123]",
                                           "ProcessGroupNCCL.cpp:1234",
                                           "file.py",
                                           ":497",
                                           "NCCL",
                                           "x",
                                           "\t",
                                           "\xff",
                                           "\xc3\xa9",
                                           "[rank3]:",
                                           "[default0]:",
                                           "2026-11-30 10:20:42,398 ",
                                           "INFO ",
                                           "[rank3] ",
                                           "3: ",
                                           "[1,2]<stdout>:",
                                           "06-30 06:10:12",
                                           "02/10 22:55:41",
                                           "[74785.660366] ",
                                           "[01:17:10.938]: ",
                                           "kp-ddp-worker-0:3468:3905 [4] ",
                                           "__main__",
                                           "torch.distributed",
                                           "d2.engine"};
  std::mt19937 rng(12345);
  std::vector<std::string> seeds;
  for (const auto& f : formats_) seeds.insert(seeds.end(), f.samples.begin(), f.samples.end());
  for (int iter = 0; iter < 60000; ++iter) {
    std::string t;
    if (iter % 3 == 0 && !seeds.empty()) {
      t = seeds[rng() % seeds.size()];
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !t.empty(); ++e) {
        size_t at = rng() % t.size();
        switch (rng() % 3) {
          case 0: t[at] = pieces[rng() % pieces.size()][0]; break;
          case 1: t.erase(at, 1 + rng() % 3); break;
          default: t.insert(at, pieces[rng() % pieces.size()]); break;
        }
      }
    } else {
      int n = 1 + static_cast<int>(rng() % 10);
      for (int k = 0; k < n; ++k) t += pieces[rng() % pieces.size()];
    }
    check(t);
    if (failures_ > 20) break;
  }
  EXPECT_EQ(failures_, 0);
  EXPECT_GT(checked_, 50000u);
}

TEST_F(FastPrefixes, LinesOfOneShapeParseLikeRe2) {
  // The parser remembers how the formats went on recent lines and replays that on lines
  // of the same shape: streams of lines that differ in their digits (and now and then in
  // a byte or their length) must parse as RE2 parses them.
  shape_streams();
  EXPECT_EQ(failures_, 0);
}

TEST_F(FastPrefixes, LinesOfOneShapeParseLikeRe2WithFormatsOfAKbEdit) {
  // Formats without a hand-written matcher (a KB edit): programs that tell digits apart
  // (the memo then replays round by round and runs such winners again), and one only
  // RE2 can match (the memo is off on the lines it is tried on).
  kb::PrefixFormat extra;
  extra.id = "custom-worker";
  extra.regex = R"(w(?P<rank>[0-4]\d?)> )";
  formats_.insert(formats_.begin() + 3, extra);
  // One whose first byte is some digits only: a line starting with another digit has
  // other candidates.
  kb::PrefixFormat tag;
  tag.id = "custom-tag";
  tag.regex = R"((?P<rank>[5-9]\d*)@ )";
  formats_.push_back(tag);
  kb::PrefixFormat word;
  word.id = "custom-job";
  word.regex = R"((?i)job(?P<rank>\d+)% )";
  formats_.insert(formats_.begin() + 1, word);
  make_parsers();
  EXPECT_FALSE(fast_->has_program(1));
  extra_bases_ = {"w3> [rank3]:2026-11-30 10:20:42,398 INFO step 1",
                  "w41> w5> INFO x",
                  "[default3]:w27> 2026-11-30 10:20:42,398 x",
                  "12@ INFO x",
                  "[rank3]:33@ 2026-11-30 10:20:42,398 y",
                  "JOB3% [rank3]:2026-11-30 10:20:42,398 INFO x",
                  "[rank12]:job12% INFO step 7"};
  shape_streams();
  EXPECT_EQ(failures_, 0);
}

TEST_F(FastPrefixes, FormatsWrittenOnlyInYamlParseAsTheBuiltInOnes) {
  // Issue 23: a format added in kb/formats/prefixes.yaml alone, with no C++. A temporary
  // KB directory holds the embedded KB with every prefix format renamed (id + "-yaml"),
  // so none of them has its hand-written matcher: each runs as its program, with the
  // memo on, and every line must parse as with the built-in formats.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ff-yaml-formats-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const kb::File& f : kb::embedded_files()) {
    std::string content = f.content;
    if (f.path == "formats/prefixes.yaml") {
      for (const auto& p : formats_) {
        const std::string from = "  - id: " + p.id + "\n", to = "  - id: " + p.id + "-yaml\n";
        const size_t at = content.find(from);
        ASSERT_NE(at, std::string::npos) << p.id;
        content.replace(at, from.size(), to);
      }
    }
    fs::create_directories((dir / f.path).parent_path());
    std::ofstream(dir / f.path, std::ios::binary) << content;
  }
  kb::LoadResult r = kb::load({}, {dir.string()});
  fs::remove_all(dir);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().to_string();
  ASSERT_EQ(r.kb.prefixes.size(), formats_.size());
  auto y = PrefixParser::create(r.kb.prefixes, PrefixParser::Matchers::kFast);
  ASSERT_TRUE(y.ok());
  yaml_ = std::move(y.value());
  for (size_t i = 0; i < yaml_->format_count(); ++i) {
    EXPECT_EQ(yaml_->format(i).id, formats_[i].id + "-yaml");
    EXPECT_FALSE(yaml_->has_fast_matcher(i));
    EXPECT_TRUE(yaml_->has_program(i));
  }
  for (const auto& f : formats_) {
    for (const auto& s : f.samples) check(s);
  }
  shape_streams();
  EXPECT_EQ(failures_, 0);
}

void FastPrefixes::shape_streams() {
  std::vector<std::string> bases = {
      "[rank12]:2026-11-30 10:20:42,398 INFO [rank12] train: step 29 | loss 2.1844",
      "[default3]:[rank3]:[E1120 10:11:12.345678 140 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught",
      "12: [rank12]:[E1120 10:11:12.345678 1 ProcessGroupNCCL.cpp:1234] msg",
      "node-3:1234:5678 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/IPC",
      "[rank1]:node-001:10009:10016 [1] NCCL INFO comm 0x55 rank 9 nranks 64 - Init COMPLETE",
      "worker-1: [default0]:2026-11-30 10:20:42.398 WARNING | fairseq.trainer | OOM",
      "Oct  4 13:19:39 gpu-node-7 kernel: NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
      "Nov 14 13:19:39 llm sd-webui[394]: NVIDIA",
      "[74785.660366] pcieport 0000:00:02.0: AER: Corrected error received",
      "2024-05-01T10:00:00.123456789Z stderr F RuntimeError: CUDA error",
      "ERROR 06-30 06:10:12 worker_base.py:145] Error executing method",
      "[1,2]<stdout>:smc-gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU",
      "(LLMRayActor pid=1112, ip=172.26.5.7) update weight",
      "  3: [rank3]: Traceback (most recent call last):",
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 10043 closing signal SIGTERM",
  };
  for (const auto& f : formats_) bases.insert(bases.end(), f.samples.begin(), f.samples.end());
  bases.insert(bases.end(), extra_bases_.begin(), extra_bases_.end());
  std::mt19937 rng(77);
  for (int iter = 0; iter < 40000 && failures_ <= 20; ++iter) {
    std::string t = bases[(iter / 40) % bases.size()];
    for (char& ch : t) {
      if (ch >= '0' && ch <= '9' && rng() % 2) ch = static_cast<char>('0' + rng() % 10);
    }
    switch (rng() % 12) {
      case 0:
        if (!t.empty()) t.erase(rng() % t.size(), 1);
        break;
      case 1: t.insert(rng() % (t.size() + 1), 1, static_cast<char>('0' + rng() % 10)); break;
      case 2: t.insert(rng() % (t.size() + 1), 1, "[] :|x3"[rng() % 7]); break;
      case 3: t = t.substr(0, rng() % (t.size() + 1)); break;
      default: break;
    }
    check(t);
  }
}

TEST(CleanLine, ViewIsTheLineItselfWhenNothingIsToClean) {
  std::string buf;
  std::string_view plain = "[rank0]: step 3 | loss 0.5\ttab";
  EXPECT_EQ(clean_line_view(plain, buf).data(), plain.data());
  for (std::string raw : {std::string("a\x1b[31mred\x1b[0m b"), std::string("x\ry"), std::string("a\0b", 3),
                          std::string("0123456789abcdef\r"), std::string("0123456789abcde\x1b[0m")}) {
    std::string want;
    clean_line(raw, want);
    EXPECT_TRUE(needs_cleaning(raw));
    EXPECT_EQ(clean_line_view(raw, buf), want);
  }
  // Every byte value at every position of a 20-byte line: needs_cleaning is exact.
  for (int b = 0; b < 256; ++b) {
    for (size_t at = 0; at < 20; ++at) {
      std::string s(20, 'a');
      s[at] = static_cast<char>(b);
      bool want = b == 0x1b || b == '\r' || b == 0;
      EXPECT_EQ(needs_cleaning(s), want) << b << " at " << at;
    }
  }
}

}  // namespace
}  // namespace ff::record

namespace ff::record {
namespace {

// The lines of a file, cleaned as the scan cleans them.
std::vector<std::string> clean_lines_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> out;
  std::string raw, clean;
  while (std::getline(in, raw)) {
    clean_line(raw, clean);
    out.push_back(clean);
  }
  return out;
}

std::unique_ptr<PrefixParser> kb_parser() {
  kb::LoadResult r = kb::load(kb::embedded_files());
  auto p = PrefixParser::create(r.kb.prefixes, PrefixParser::Matchers::kFast, r.kb.glue);
  EXPECT_TRUE(p.ok()) << p.error().to_string();
  return p.ok() ? std::move(p.value()) : nullptr;
}

// Tolerant framing: a message is found where it starts inside its line. Real output: a
// DataLoader worker's segfault report glued to tqdm's bar (Debian's python3-torch and
// python3-tqdm, tests/data/real/programs/loader_segv.py), a c10 line glued to another
// rank's unfinished output (a public excerpt, read in place), and pdsh's host prefix by
// address (tests/data/real/programs/pdsh_job.sh).
TEST(PrefixParser, FindsTheMessageWhereItStartsInsideALine) {
  auto p = kb_parser();
  ASSERT_TRUE(p);
  Record rec;
  int glued = 0;
  for (const std::string& line :
       clean_lines_of(std::string(FF_SOURCE_DIR) + "/tests/data/real/tqdm_glued_worker_segfault.log")) {
    if (line.find("it/s]ERROR: Unexpected segmentation fault") == std::string::npos) continue;
    ++glued;
    p->parse(line, rec);
    EXPECT_EQ(rec.message, "Unexpected segmentation fault encountered in worker.") << line;
    EXPECT_EQ(rec.level, 'E');
  }
  EXPECT_EQ(glued, 1);
  // A bar alone stays a bar (its numbers are progress), and a bar with a postfix finds the
  // message after it.
  p->parse(" 44%|####4     | 7/16 [00:01<00:01,  6.27it/s]", rec);
  EXPECT_EQ(rec.message, " 44%|####4     | 7/16 [00:01<00:01,  6.27it/s]");
  p->parse("Epoch 3:  41%|####1     | 7/17 [00:02<00:03,  2.81it/s, loss=0.412]Killed", rec);
  EXPECT_EQ(rec.message, "Killed");
  // Brackets inside a message are not prefixes: "x[0]: y" keeps its text.
  p->parse("    return self.weight[0]: value", rec);
  EXPECT_EQ(rec.message, "    return self.weight[0]: value");

  const std::string excerpt = std::string(FF_SHARED_DIR) + "/corpus/github-issues-3/cases/067.log";
  if (std::filesystem::exists(excerpt)) {
    int found = 0;
    for (const std::string& line : clean_lines_of(excerpt)) {
      if (line.rfind("P[E ProcessGroupNCCL.cpp", 0) != 0) continue;
      ++found;
      p->parse(line, rec);
      EXPECT_EQ(rec.rank, 1) << line;
      EXPECT_EQ(rec.level, 'E');
      EXPECT_EQ(rec.message.rfind("Watchdog caught collective operation timeout", 0), 0u) << rec.message;
    }
    EXPECT_EQ(found, 1);
  }

  int hosts = 0;
  for (const std::string& line :
       clean_lines_of(std::string(FF_SOURCE_DIR) + "/tests/data/real/pdsh_two_hosts_rank_raised.log")) {
    if (line.rfind("127.0.0.1: [default0]:RuntimeError:", 0) != 0) continue;
    ++hosts;
    p->parse(line, rec);
    EXPECT_EQ(rec.node, "127.0.0.1");
    EXPECT_EQ(rec.message.rfind("RuntimeError: ", 0), 0u) << rec.message;
  }
  EXPECT_EQ(hosts, 1);
}

// Identity lines and rank headers: every sample reads as declared; NCCL's topology lines
// name the writer's rank (the receive side is the second rank), spawn's header its own.
TEST(LineIdentity, ReadsTheRankALineStates) {
  kb::LoadResult r = kb::load(kb::embedded_files());
  auto li = LineIdentity::create(r.kb.identity, r.kb.rank_headers);
  ASSERT_TRUE(li.ok()) << li.error().to_string();
  EXPECT_TRUE(li.value()->check_samples().empty());
  const LineIdentity& id = *li.value();
  EXPECT_EQ(id.writer_rank("h:1:2 [0] NCCL INFO Trees [0] 2/-1/-1->1->0|0->1->2/-1/-1"), 1);
  EXPECT_EQ(id.writer_rank("h:1:2 [0] NCCL INFO Channel 00 : 3[b2000] -> 0[88000] [receive] via NET/Socket/0"), 0);
  EXPECT_EQ(id.writer_rank("h:1:2 [0] NCCL INFO Channel 00/0 : 1[89000] -> 2[b1000] [send] via NET/Socket/0"), 1);
  EXPECT_EQ(id.writer_rank("h:1:2 [0] NCCL INFO Using network Socket"), -1);
  EXPECT_TRUE(id.may_be_header("-- Process 3 terminated with the following error:"));
  EXPECT_EQ(id.header_rank("-- Process 3 terminated with the following error:"), 3);
  EXPECT_EQ(id.header_rank("step 3 terminated"), -1);
}

}  // namespace
}  // namespace ff::record
