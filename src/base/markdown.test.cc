#include "base/markdown.h"

#include <gtest/gtest.h>

#include <string>

namespace ff {
namespace {

TEST(Markdown, TheFourFormsBecomeHtml) {
  EXPECT_EQ(markdown_html("set `NCCL_DEBUG=INFO` and **rerun**"),
            "set <code>NCCL_DEBUG=INFO</code> and <strong>rerun</strong>");
  EXPECT_EQ(
      markdown_html("a *very* short [note](https://pytorch.org/docs/a?b=1&c=2)"),
      "a <em>very</em> short <a href=\"https://pytorch.org/docs/a?b=1&amp;c=2\" rel=\"noopener noreferrer\">note</a>");
  EXPECT_EQ(markdown_html("**bold with `code` inside**"), "<strong>bold with <code>code</code> inside</strong>");
  EXPECT_EQ(markdown_html("[the `docs`](https://x.org/(a))"),
            "<a href=\"https://x.org/(a)\" rel=\"noopener noreferrer\">the <code>docs</code></a>");
}

TEST(Markdown, HtmlIsEscapedBeforeTheMarkup) {
  EXPECT_EQ(markdown_html("<script>alert(1)</script> `a<b>`"),
            "&lt;script&gt;alert(1)&lt;/script&gt; <code>a&lt;b&gt;</code>");
  // The link's target is escaped too, and only https:// becomes a link.
  EXPECT_EQ(markdown_html("[x](javascript:alert(1))"), "x (javascript:alert(1))");
  EXPECT_EQ(markdown_html("[x](http://example.com)"), "x (http://example.com)");
  EXPECT_EQ(markdown_html("[x](https://a.org/\"onmouseover=\"y)"),
            "<a href=\"https://a.org/&quot;onmouseover=&quot;y\" rel=\"noopener noreferrer\">x</a>");
}

TEST(Markdown, NothingInsideCodeIsMarkup) {
  EXPECT_EQ(markdown_html("`2**30` and `a*b*c` and `[x](https://y.z)`"),
            "<code>2**30</code> and <code>a*b*c</code> and <code>[x](https://y.z)</code>");
  EXPECT_EQ(markdown_html("`*` then *em*"), "<code>*</code> then <em>em</em>");
}

TEST(Markdown, LoneStarsAndUnpairedDelimitersShowAsThemselves) {
  EXPECT_EQ(markdown_html("4 * 8 GPUs"), "4 * 8 GPUs");
  EXPECT_EQ(markdown_html("* bullet"), "* bullet");
  EXPECT_EQ(markdown_html("an odd ` tick"), "an odd ` tick");
  EXPECT_EQ(markdown_html("**open only"), "**open only");
  EXPECT_EQ(markdown_html("glob *.pt"), "glob *.pt");
  EXPECT_EQ(markdown_html("max_split_size_mb and _x_"), "max_split_size_mb and _x_");
  EXPECT_EQ(markdown_html("[not a link] (x)"), "[not a link] (x)");
  EXPECT_EQ(markdown_html("escaped \\*star\\* and \\`tick\\`"), "escaped *star* and `tick`");
  EXPECT_FALSE(markdown_balanced("glob *.pt"));
  EXPECT_FALSE(markdown_balanced("an odd ` tick"));
  EXPECT_TRUE(markdown_balanced("4 * 8 GPUs, `a*b`, *em* and **b**"));
}

TEST(Markdown, GnuStyleQuotesBecomeTypographicQuotes) {
  // Slurm and GNU tools quote `like this'; an unpaired backtick that opens such a quote is
  // shown as a quote, not a raw backtick. It still counts as unpaired (kb check agrees).
  EXPECT_EQ(markdown_html("couldn't chdir to `%s': %m"), "couldn&#39;t chdir to \xE2\x80\x98%s\xE2\x80\x99: %m");
  EXPECT_EQ(markdown_plain("chdir to `DIR': x"), "chdir to `DIR': x");
  EXPECT_FALSE(markdown_balanced("chdir to `DIR': x"));
  EXPECT_EQ(markdown_html("a ` b' c"), "a ` b&#39; c") << "a space inside is not a quote";
  EXPECT_EQ(markdown_html("`x` and `y'"), "<code>x</code> and \xE2\x80\x98y\xE2\x80\x99");
}

TEST(Markdown, PlainTextForTheTerminal) {
  EXPECT_EQ(markdown_plain("run `nvidia-smi` **now**, *then* read [the docs](https://a.org)"),
            "run `nvidia-smi` now, then read the docs (https://a.org)");
  EXPECT_EQ(markdown_plain("run `nvidia-smi` <now>", PlainCode::kBare), "run nvidia-smi <now>");
}

TEST(Markdown, LinearOnHostileText) {
  std::string many(200000, '*');
  std::string mixed;
  for (int i = 0; i < 50000; ++i) mixed += "a* `b **c [d](";
  EXPECT_EQ(markdown_html(many).size(), many.size());
  EXPECT_FALSE(markdown_html(mixed).empty());
}

}  // namespace
}  // namespace ff
