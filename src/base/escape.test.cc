#include "base/escape.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "base/strings.h"

namespace ff {
namespace {

TEST(EscapeForTerminal, PrintableTextAndUtf8PassUnchanged) {
  EXPECT_EQ(escape_for_terminal("RuntimeError: CUDA error (rank 3)"), "RuntimeError: CUDA error (rank 3)");
  EXPECT_EQ(escape_for_terminal("tab\there é ✓ 🙂"), "tab\there é ✓ 🙂");
  EXPECT_EQ(escape_for_terminal(""), "");
}

TEST(EscapeForTerminal, EscapeSequencesAreShownNotSent) {
  // Clear screen, set title (OSC 0), write the clipboard (OSC 52), colour.
  EXPECT_EQ(escape_for_terminal("\x1b[2Jx"), "\\e[2Jx");
  EXPECT_EQ(escape_for_terminal("\x1b]0;owned\x07"), "\\e]0;owned\\x07");
  EXPECT_EQ(escape_for_terminal("\x1b]52;c;ZWNobyBoaQ==\x1b\\"), "\\e]52;c;ZWNobyBoaQ==\\e\\");
  EXPECT_EQ(escape_for_terminal("\x1b[33mWARN\x1b[0m"), "\\e[33mWARN\\e[0m");
}

TEST(EscapeForTerminal, EveryC0ControlButTabAndDelAreEscaped) {
  for (int c = 0; c < 0x20; ++c) {
    std::string in(1, static_cast<char>(c));
    std::string got = escape_for_terminal(in);
    if (c == '\t') {
      EXPECT_EQ(got, "\t");
    } else {
      for (char g : got) EXPECT_GE(static_cast<unsigned char>(g), 0x20) << "control " << c << " passed: " << got;
    }
  }
  EXPECT_EQ(escape_for_terminal(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_for_terminal("\b\a\v\f\r\x7f"), "\\x08\\x07\\x0b\\x0c\\x0d\\x7f");
  EXPECT_EQ(escape_for_terminal("two\nlines"), "two\\x0alines");
  EXPECT_EQ(escape_for_terminal("two\nlines", true), "two\nlines");
  EXPECT_EQ(escape_for_terminal("no\x1b[2J\nhere", true), "no\\e[2J\nhere");
}

TEST(EscapeForTerminal, C1ControlsAndInvalidBytesAreEscaped) {
  // CSI as UTF-8 (U+009B) and as a raw byte; NEL (U+0085); the ends of the range.
  EXPECT_EQ(escape_for_terminal("\xc2\x9b"
                                "2J"),
            "\\u{9b}2J");
  EXPECT_EQ(escape_for_terminal("\x9b"
                                "2J"),
            "\\x9b2J");
  EXPECT_EQ(escape_for_terminal("\xc2\x80\xc2\x85\xc2\x9f"), "\\u{80}\\u{85}\\u{9f}");
  EXPECT_EQ(escape_for_terminal("\xc2\xa0"), "\xc2\xa0") << "U+00A0 is text";
  // Invalid: a lone continuation byte, overlong '/', a surrogate, a cut sequence, 0xFF.
  EXPECT_EQ(escape_for_terminal("\x80\xc0\xaf\xed\xa0\x80\xe2\x82\xff"),
            "\\x80\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x82\\xff");
  // Every byte value: the result holds no control and is valid UTF-8.
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string got = escape_for_terminal(all + "\xc2\x9b");
  EXPECT_EQ(sanitize_utf8(got), got);
  for (size_t i = 0; i < got.size(); ++i) {
    const auto c = static_cast<unsigned char>(got[i]);
    EXPECT_TRUE(c >= 0x20 || c == '\t') << "byte " << int(c) << " at " << i;
    EXPECT_NE(c, 0x7f);
    if (c == 0xc2 && i + 1 < got.size()) { EXPECT_GE(static_cast<unsigned char>(got[i + 1]), 0xa0); }
  }
}

TEST(ShellQuote, SingleQuotesWithQuotesWrittenOutside) {
  EXPECT_EQ(shell_quote("a.log"), "'a.log'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("x'$(touch PWNED)'.log"), "'x'\\''$(touch PWNED)'\\''.log'");
}

// What sh makes of the quoted word: it must be the word itself, and run nothing.
TEST(ShellQuote, ShellReadsBackTheSameWordAndRunsNothing) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ff-shell-quote-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string words[] = {"x'$(touch PWNED)'.log",
                               "$(touch PWNED)",
                               "`touch PWNED`",
                               "'; touch PWNED; '",
                               "a\nb\\'\"",
                               "line\nbreak'$(touch PWNED)",
                               "*",
                               "~",
                               "$HOME",
                               "-n",
                               "!x",
                               "\x1b[2J"};
  for (const std::string& w : words) {
    const std::string cmd = "cd '" + dir.string() + "' && printf '%s' " + shell_quote(w);
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[256];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << cmd;
    EXPECT_EQ(out, w) << cmd;
  }
  EXPECT_FALSE(fs::exists(dir / "PWNED"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ff
