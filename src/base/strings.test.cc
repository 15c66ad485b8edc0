#include "base/strings.h"

#include <gtest/gtest.h>

#include "base/result.h"

namespace ff {
namespace {

TEST(Strings, TrimAndSplit) {
  EXPECT_EQ(trim("  a b \r\n"), "a b");
  auto parts = split("a,b,,c", ',');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[2], "");
  EXPECT_EQ(parts[3], "c");
}

TEST(Strings, SanitizeUtf8KeepsValidAndReplacesInvalid) {
  EXPECT_EQ(sanitize_utf8("plain é ✓"), "plain é ✓");
  EXPECT_EQ(sanitize_utf8(std::string("a\xff"
                                      "b")),
            "a\xEF\xBF\xBD"
            "b");
  // Overlong encoding of '/' must not pass as valid.
  EXPECT_EQ(sanitize_utf8(std::string("\xC0\xAF")), "\xEF\xBF\xBD\xEF\xBF\xBD");
  // Truncated multi-byte sequence at the end.
  EXPECT_EQ(sanitize_utf8(std::string("x\xE2\x9C")), "x\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Strings, ParseInt) {
  long long v = 0;
  EXPECT_TRUE(parse_int("1234", v));
  EXPECT_EQ(v, 1234);
  EXPECT_FALSE(parse_int("12a", v));
  EXPECT_FALSE(parse_int("", v));
  EXPECT_FALSE(parse_int("-5", v)) << "non-negative only, as documented (issue 7)";
}

TEST(Result, CarriesValueOrError) {
  Result<int> good = 3;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  Result<int> bad = make_error(ErrorCode::kNotFound, "no such file", {"a.log", 3, ""});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(), "a.log:3: no such file");
}

}  // namespace
}  // namespace ff
