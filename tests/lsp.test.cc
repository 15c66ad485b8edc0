// The language server's text positions and message framing (app/lsp.h); the protocol
// itself is tested end to end by tests/lsp (node, vscode-languageserver-protocol).
#include "lsp/lsp.h"

#include "lsp/lsp_internal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace ff::app::lsp {
namespace {

TEST(LspText, Utf16LengthCountsSurrogatePairsTwice) {
  EXPECT_EQ(utf16_length(""), 0u);
  EXPECT_EQ(utf16_length("abc"), 3u);
  EXPECT_EQ(utf16_length("a\xC3\xA9\xF0\x9F\x98\x80"), 4u) << "a, e-acute (1), an emoji (2)";
  EXPECT_EQ(utf16_length("\xFF\xFE"
                         "a"),
            3u)
      << "a byte that is not UTF-8 counts one";
  EXPECT_EQ(utf16_length("\xF0\x9F"), 2u) << "a cut sequence does not read past the end";
}

// Issue 31: every didChange copied the whole buffer (200 edits to a 100 MB log delayed a
// hover by 139 s). Edits now apply in place while no reader holds the text, and on one copy
// when a reader does, whose snapshot stays as it was.
TEST(LspText, Issue31EditsApplyInPlaceAndNeverUnderAReader) {
  auto edit = [](size_t line, size_t from, size_t to, const char* text) {
    return json::array(
        {{{"range", {{"start", {{"line", line}, {"character", from}}}, {"end", {{"line", line}, {"character", to}}}}},
          {"text", text}}});
  };
  auto text = std::make_shared<std::string>(std::string(1 << 20, 'x') + "\nRuntimeError: boom\n");
  const std::string* before = text.get();
  text->reserve(text->size() + 4096);
  const char* data = text->data();
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(apply_changes(text, edit(1, 0, 0, "a")));
  EXPECT_EQ(text.get(), before) << "no reader: the same string, edited in place";
  EXPECT_EQ(text->data(), data) << "and not reallocated while it has room";
  EXPECT_EQ(line_at(*text, 1), std::string(200, 'a') + "RuntimeError: boom");

  std::shared_ptr<const std::string> reader = text;  // the diagnosing thread's snapshot
  EXPECT_TRUE(apply_changes(text, edit(1, 0, 200, "")));
  EXPECT_EQ(line_at(*reader, 1), std::string(200, 'a') + "RuntimeError: boom") << "the reader's text is unchanged";
  EXPECT_EQ(line_at(*text, 1), "RuntimeError: boom");
  EXPECT_FALSE(apply_changes(text, edit(1, 0, 0, "b"))) << "the copy is the writer's own: no second copy";
  EXPECT_EQ(line_at(*text, 1), "bRuntimeError: boom");

  // A whole-text change replaces it; a reversed range is the same range.
  EXPECT_FALSE(apply_changes(text, json::array({{{"text", "one\ntwo\n"}}})));
  EXPECT_FALSE(apply_changes(text, edit(1, 3, 0, "2")));
  EXPECT_EQ(*text, "one\n2\n");
}

TEST(LspText, PositionsBecomeByteOffsets) {
  // line 0 "ab", line 1 "e-acute emoji x" ending in CRLF, line 2 "last" without an end.
  const std::string t = "ab\n\xC3\xA9\xF0\x9F\x98\x80x\r\nlast";
  EXPECT_EQ(byte_offset(t, 0, 0), 0u);
  EXPECT_EQ(byte_offset(t, 0, 2), 2u);
  EXPECT_EQ(byte_offset(t, 0, 9), 2u) << "past the end of a line: its end";
  EXPECT_EQ(byte_offset(t, 1, 0), 3u);
  EXPECT_EQ(byte_offset(t, 1, 1), 5u) << "after e-acute (2 bytes)";
  EXPECT_EQ(byte_offset(t, 1, 3), 9u) << "after the emoji (4 bytes, 2 units)";
  EXPECT_EQ(byte_offset(t, 1, 2), 9u) << "inside the surrogate pair: rounded up";
  EXPECT_EQ(byte_offset(t, 1, 99), 10u) << "before the CRLF, never between CR and LF";
  EXPECT_EQ(byte_offset(t, 2, 4), t.size());
  EXPECT_EQ(byte_offset(t, 7, 0), t.size()) << "past the last line: the end";
  EXPECT_EQ(line_at(t, 1), "\xC3\xA9\xF0\x9F\x98\x80x");
  EXPECT_EQ(line_at(t, 2), "last");
  EXPECT_EQ(line_at(t, 3), "");
}

// The bodies a reader gets from these bytes, written from another thread into a pipe.
std::vector<std::string> read_all(const std::string& bytes, size_t max_body = 1 << 20) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n =
          ::write(fds[1], bytes.data() + off, std::min<size_t>(bytes.size() - off, 7));  // in small pieces
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  MessageReader reader(fds[0], max_body);
  std::vector<std::string> out;
  while (auto b = reader.next()) out.push_back(*b);
  writer.join();
  ::close(fds[0]);
  return out;
}

TEST(LspFraming, BodiesByContentLengthAndBadHeadersSkipped) {
  const std::string bytes =
      "Content-Length: 2\r\n\r\n{}"
      "content-length: 7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1,2,3]"
      "Content-Length: twelve\r\n\r\n{\"lost\":1}"         // not a number: skipped
      "Content-Length: 99999999\r\n\r\n{\"too\":\"big\"}"  // over the limit: skipped
      "Content-Length: 4\n\nnull"                          // bare LF accepted
      "Content-Length: 10\r\n\r\n{\"cut\":";               // the input ends inside a body
  const auto bodies = read_all(bytes, 1 << 20);
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_EQ(bodies[0], "{}");
  EXPECT_EQ(bodies[1], "[1,2,3]");
  EXPECT_EQ(bodies[2], "null");
}

TEST(LspFraming, ABodyWithMultibyteTextIsCountedInBytes) {
  const std::string body = "{\"t\":\"\xC3\xA9\xF0\x9F\x98\x80\"}";
  const auto bodies = read_all("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(bodies[0], body);
}

// Issue 31: params nested 100,000 arrays deep crashed the server (SIGSEGV); the depth is
// bounded before parsing (tests/hostile.test.cc sends such a message to the binary).
TEST(LspFraming, Issue31NestingIsMeasuredWithoutParsing) {
  EXPECT_FALSE(json_deeper_than(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_TRUE(json_deeper_than(R"({"a":[1,{"b":[]}]})", 3));
  EXPECT_FALSE(json_deeper_than(R"({"text":"[[[[[[[[ \" {{{{{{"})", 1)) << "brackets in strings do not count";
  EXPECT_TRUE(json_deeper_than(std::string(100000, '[') + std::string(100000, ']'), kMaxJsonDepth));
  EXPECT_FALSE(json_deeper_than("]]]]}}}}", 0)) << "stray closers do not wrap around";
}

}  // namespace
}  // namespace ff::app::lsp
