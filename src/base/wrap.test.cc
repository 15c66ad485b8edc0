#include "base/wrap.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/strings.h"

namespace ff {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  for (auto l : split(s, '\n')) out.emplace_back(l);
  return out;
}

// The words of a text in order, whatever the line breaks and indentation.
std::string words_of(const std::string& s) {
  std::string out;
  for (auto l : split(s, '\n')) {
    for (auto w : split(l, ' ')) {
      if (w.empty()) continue;
      if (!out.empty()) out += ' ';
      out += w;
    }
  }
  return out;
}

TEST(Wrap, DisplayWidthCountsCharactersNotBytesAndSkipsEscapes) {
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("\xC3\xA9t\xC3\xA9"), 3u) << "é is one column";
  EXPECT_EQ(display_width("\x1b[1;31mred\x1b[0m"), 3u);
  EXPECT_EQ(display_width("\xE6\x98\xBE\xE5\xAD\x98"), 4u) << "CJK characters take two columns";
  EXPECT_EQ(display_width("\xE2\x80\xA6"), 1u);
}

// Code to paste (kVerbatim) is written whole at any width, and the marker never shows.
TEST(Wrap, AVerbatimLineIsNeverWrappedAndLosesItsMarker) {
  const std::string code = "  print(f\"rank {dist.get_rank()} peak host RSS {rss_gib:.1f} GiB\", flush=True)";
  const std::string text = "Verify\n" + std::string(1, kVerbatim) + code + "\nafter it a long line of prose that wraps";
  for (size_t width : {0, 20, 60, 120}) {
    const std::string out = wrap_text(text, width);
    EXPECT_NE(out.find("\n" + code + "\n"), std::string::npos) << width << ":\n" << out;
    EXPECT_EQ(out.find(kVerbatim), std::string::npos) << width;
  }
  // The prose around it still wraps.
  const std::string narrow = wrap_text(text, 20);
  const std::string prose = narrow.substr(narrow.find(code) + code.size() + 1);
  for (size_t at = 0, nl; at < prose.size(); at = nl + 1) {
    nl = prose.find('\n', at);
    if (nl == std::string::npos) nl = prose.size();
    EXPECT_LE(nl - at, 20u) << prose;
  }
  EXPECT_GT(std::count(prose.begin(), prose.end(), '\n'), 0) << prose;
}

TEST(Wrap, BreaksAtSpacesAndKeepsEveryWord) {
  const std::string text =
      "Fix: reduce the micro-batch size, or enable activation checkpointing, then run the same step again";
  for (size_t width : {20u, 40u, 80u}) {
    std::string w = wrap_text(text, width);
    for (const auto& l : lines_of(w)) EXPECT_LE(display_width(l), width) << "'" << l << "' at " << width;
    EXPECT_EQ(words_of(w), words_of(text)) << "no word lost or split at " << width;
  }
  EXPECT_EQ(wrap_text(text, 0), text);
  EXPECT_EQ(wrap_text(text, 200), text);
}

TEST(Wrap, ContinuationLinesHangUnderTheItemText) {
  std::string w = wrap_text("  1. one two three four five six seven", 16);
  auto ls = lines_of(w);
  ASSERT_GE(ls.size(), 2u);
  EXPECT_EQ(ls[0], "  1. one two");
  EXPECT_EQ(ls[1].substr(0, 5), "     ") << "under 'one', past '1. '";
  EXPECT_NE(ls[1][5], ' ');
  w = wrap_text("  - alpha beta gamma delta", 14);
  EXPECT_EQ(lines_of(w)[1].substr(0, 4), "    ");
}

TEST(Wrap, AShellCommandIsContinuedWithABackslashSoItStillPastes) {
  std::string w = wrap_text("  $ firstfault verify --before 'logs/run one' --after NEW_LOGS", 36);
  auto ls = lines_of(w);
  ASSERT_GE(ls.size(), 2u);
  for (size_t i = 0; i + 1 < ls.size(); ++i) {
    EXPECT_EQ(ls[i].substr(ls[i].size() - 2), " \\") << ls[i];
    EXPECT_LE(display_width(ls[i]), 36u);
  }
  EXPECT_EQ(ls.back().substr(0, 4), "    ");
  std::string joined;  // what the shell reads: each backslash-newline removed
  for (size_t i = 0; i < ls.size(); ++i) joined += i + 1 < ls.size() ? ls[i].substr(0, ls[i].size() - 1) : ls[i];
  EXPECT_EQ(words_of(joined), "$ firstfault verify --before 'logs/run one' --after NEW_LOGS");
}

TEST(Wrap, AShellWordWiderThanTheLineIsNotCut) {
  const std::string path = "'/a/very/long/quoted/path/of/logs/that/does/not/fit.log'";
  std::string w = wrap_text("  $ firstfault verify --before " + path + " --after NEW_LOGS", 30);
  EXPECT_NE(w.find("\n    " + path + " \\\n"), std::string::npos) << "whole, on a line of its own\n" << w;
}

TEST(Wrap, AWordWiderThanTheLineIsCutNotLost) {
  const std::string path = "/very/long/path/to/a/checkpoint/file/that/will/not/fit.pt";
  std::string w = wrap_text("  at " + path, 20);
  for (const auto& l : lines_of(w)) EXPECT_LE(display_width(l), 20u);
  std::string joined;
  for (const auto& l : lines_of(w)) joined += std::string(trim(l));
  EXPECT_EQ(joined, "at" + path);
}

TEST(Wrap, FitWidthCutsWithAnEllipsis) {
  EXPECT_EQ(fit_width("short", 10), "short");
  EXPECT_EQ(fit_width("a longer title", 8), "a longe\xE2\x80\xA6");
  EXPECT_EQ(display_width(fit_width("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 3)), 3u);
}

TEST(Wrap, NearestWordsForDidYouMean) {
  const std::vector<std::string> subs = {"diagnose", "events", "explain", "search", "site", "diff", "verify"};
  EXPECT_EQ(nearest_words("diagnsoe", subs), std::vector<std::string>{"diagnose"});
  EXPECT_EQ(nearest_words("Search", subs), std::vector<std::string>{"search"}) << "case does not count";
  EXPECT_TRUE(nearest_words("zzzzzzz", subs).empty());
  const std::vector<std::string> ids = {"pytorch.cuda.out-of-memory", "pytorch.cpu.out-of-memory-killed",
                                        "nccl.timeout"};
  EXPECT_EQ(nearest_words("out-of-memory", ids),
            (std::vector<std::string>{"pytorch.cuda.out-of-memory", "pytorch.cpu.out-of-memory-killed"}));
  EXPECT_EQ(nearest_words("nccl.timout", ids), std::vector<std::string>{"nccl.timeout"});
}

}  // namespace
}  // namespace ff
