// Unit tests of the Follower: growth, new files, truncation, rotation by rename and by
// copy, each byte delivered once, in order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "base/strings.h"
#include "base/wrap.h"
#include "watch/follow.h"
#include "watch/watch.h"

namespace ff::watch {
namespace {

namespace fs = std::filesystem;

struct Recorder : FollowSink {
  void opened(uint32_t file, const std::string& name) override { names[file] = name; }
  void data(uint32_t file, std::string_view bytes) override { got[file] += std::string(bytes); }
  void cut(uint32_t file, const std::string& why) override {
    got[file] += "|" + why + "|";
    ++cuts;
  }
  void note(const std::string& text) override { notes.push_back(text); }
  void error(const Error& e) override { errors.push_back(e.to_string()); }
  std::map<uint32_t, std::string> names, got;
  std::vector<std::string> notes, errors;
  int cuts = 0;
};

class FollowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ff-follow-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void append(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::app | std::ios::binary) << s; }
  void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::trunc | std::ios::binary) << s; }
  fs::path dir_;
};

TEST_F(FollowTest, GrowingFileEveryByteOnceInOrder) {
  const fs::path f = dir_ / "train.log";
  write(f, "a\n");
  Follower fo({f.string()});
  Recorder r;
  fo.poll(r);
  append(f, "b\nc");  // a line still being written
  fo.poll(r);
  append(f, "\nd\n");
  fo.poll(r);
  fo.poll(r);
  EXPECT_EQ(r.got[0], "a\nb\nc\nd\n");
  EXPECT_EQ(r.cuts, 0);
}

TEST_F(FollowTest, NewFilesInFoldersAreFollowed) {
  fs::create_directories(dir_ / "attempt_0" / "0");
  write(dir_ / "attempt_0" / "0" / "stdout.log", "rank0\n");
  Follower fo({dir_.string()});
  Recorder r;
  fo.poll(r, true);
  fs::create_directories(dir_ / "attempt_1" / "0");
  write(dir_ / "attempt_1" / "0" / "stdout.log", "restarted\n");
  fo.poll(r, true);
  ASSERT_EQ(r.names.size(), 2u);
  EXPECT_EQ(r.got[0], "rank0\n");
  EXPECT_EQ(r.got[1], "restarted\n");
}

TEST_F(FollowTest, TruncationReadsAgainFromTheStart) {
  const fs::path f = dir_ / "train.log";
  write(f, "line one that is long enough\nline two\n");
  Follower fo({f.string()});
  Recorder r;
  fo.poll(r);
  write(f, "new\n");  // copytruncate, then a short line
  fo.poll(r);
  EXPECT_EQ(r.got[0], "line one that is long enough\nline two\n|truncated|new\n");
  // Truncated and written past the old size between two polls: the first bytes differ.
  write(f, std::string(100, 'x') + "\n");
  fo.poll(r);
  EXPECT_EQ(r.cuts, 2);
  EXPECT_EQ(r.got[0].substr(r.got[0].size() - 101), std::string(100, 'x') + "\n");
}

TEST_F(FollowTest, RotationByRenameReadsTheOldFileToItsEndThenTheNewOne) {
  const fs::path f = dir_ / "train.log";
  write(f, "1\n");
  Follower fo({dir_.string()});
  Recorder r;
  fo.poll(r, true);
  append(f, "2\n");  // written before the rename, not yet read
  fs::rename(f, dir_ / "train.log.1");
  write(f, "3\n");
  fo.poll(r, true);
  fo.poll(r, true);
  EXPECT_EQ(r.got[0], "1\n2\n|rotated|3\n");
  EXPECT_EQ(r.names.size(), 1u) << "the renamed file is not a new source";
}

TEST_F(FollowTest, RotatedCopyAppearingLaterIsNotReadAgain) {
  const fs::path f = dir_ / "train.log";
  write(f, "1\n2\n");
  Follower fo({dir_.string()});
  Recorder r;
  fo.poll(r, true);
  fs::copy_file(f, dir_ / "train.log.1");  // logrotate copytruncate: a copy, then the cut
  write(f, "");
  append(f, "3\n");
  fo.poll(r, true);
  EXPECT_EQ(r.names.size(), 1u);
  EXPECT_EQ(r.got[0], "1\n2\n|truncated|3\n");
}

// Issue 31: a followed file replaced by a symbolic link to a file of someone else's (the
// link's maker cannot read it; the user running watch can) is not read as the file
// rotated, without -L; with -L it is, as asked.
TEST_F(FollowTest, Issue31ALinkSwappedInForAFollowedFileIsNotFollowedWithoutL) {
  const fs::path logs = dir_ / "logs", f = logs / "train.log", secret = dir_ / "private.txt";
  fs::create_directories(logs);
  write(secret, "PRIVATE line\n");
  for (const bool follow_links : {false, true}) {
    FollowOptions o;
    o.follow_symlinks = follow_links;
    for (const std::string& named : {f.string(), logs.string()}) {
      fs::remove(f);
      write(f, "1\n");
      Follower fo({named}, o);
      Recorder r;
      fo.poll(r, true);
      const fs::path tmp = dir_ / "link.tmp";  // outside the followed folder
      fs::create_symlink(secret, tmp);
      fs::rename(tmp, f);  // atomically, as an attacker would
      fo.poll(r, true);
      fo.poll(r, true);
      if (follow_links) {
        EXPECT_NE(r.got[0].find("PRIVATE"), std::string::npos) << named;
      } else {
        EXPECT_EQ(r.got[0], "1\n") << named;
        bool said = false;
        for (const auto& n : r.notes) said |= n.find("symbolic link; not followed") != std::string::npos;
        EXPECT_TRUE(said) << named;
      }
      if (!follow_links) {
        for (const auto& [id, text] : r.got) EXPECT_EQ(text.find("PRIVATE"), std::string::npos) << id << " " << named;
      }
    }
  }
}

TEST_F(FollowTest, BinaryAndCompressedFilesAreSkipped) {
  write(dir_ / "model.pt", std::string("\x80\x02\x00\x00\x00\x01\x02\x03", 8) + std::string(4096, '\0'));
  write(dir_ / "old.log.gz", std::string("\x1f\x8b\x08\x00", 4) + std::string(64, 'z'));
  write(dir_ / "train.log", "ok\n");
  Follower fo({dir_.string()});
  Recorder r;
  fo.poll(r, true);
  std::string all;
  for (auto& [id, s] : r.got) all += s;
  EXPECT_EQ(all, "ok\n");
  EXPECT_EQ(r.notes.size(), 1u) << "binary: a note, as diagnose says";
  EXPECT_EQ(r.errors.size(), 1u) << "compressed: not read, an error";
}

TEST(RotatedName, KnownShapes) {
  EXPECT_TRUE(is_rotated_name("train.log.1", "train.log"));
  EXPECT_TRUE(is_rotated_name("train.log.12.gz", "train.log"));
  EXPECT_TRUE(is_rotated_name("train.log-20250101", "train.log"));
  EXPECT_TRUE(is_rotated_name("train.log.2025-01-01", "train.log"));
  EXPECT_TRUE(is_rotated_name("train.1.log", "train"));
  EXPECT_FALSE(is_rotated_name("train.log", "train.log"));
  EXPECT_FALSE(is_rotated_name("train.log.bak", "train.log"));
  EXPECT_FALSE(is_rotated_name("train.logger", "train.log"));
  EXPECT_FALSE(is_rotated_name("rank1.log", "rank"));
}

TEST(Severity, NamesRoundTrip) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kDegraded, Severity::kFailed}) {
    Severity back;
    ASSERT_TRUE(parse_severity(severity_name(s), back));
    EXPECT_EQ(back, s);
  }
  Severity x;
  EXPECT_FALSE(parse_severity("fatal", x));
}

// Issue 33, item 7: a live finding's text wraps to the terminal, and its verify code is
// shown whole, every line of it (it was cut to its first line).
TEST(AlertText, WrapsToTheWidthAndKeepsEveryLineOfTheVerifyCodeWhole) {
  Alert a;
  a.severity = Severity::kFailed;
  a.kind = "failure";
  a.id = "pytorch.model.shape-mismatch";
  a.title = "Tensor shape mismatch in a layer (matmul, broadcast, conv channels) on the first forward pass";
  a.source = "logs/rank2.log";
  a.line = 215;
  a.text = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x31 and 32x128)";
  a.fix = "Read the shapes in the message; for mat1/mat2 the second number of mat1 must equal the first of mat2.";
  a.verify = "out = model(batch[0])\nprint(\"input\", tuple(batch[0].shape), \"output\", tuple(out.shape))\n";
  const std::string text = alert_text(a, 40);
  std::vector<std::string> lines;
  for (std::string_view l : ff::split(text, '\n')) lines.emplace_back(l);
  const std::set<std::string> code = {"    out = model(batch[0])",
                                      "    print(\"input\", tuple(batch[0].shape), \"output\", tuple(out.shape))"};
  size_t code_seen = 0;
  for (const auto& l : lines) {
    if (code.count(l)) {
      ++code_seen;
      continue;
    }
    EXPECT_LE(ff::display_width(l), 40u) << "'" << l << "'\n" << text;
  }
  EXPECT_EQ(code_seen, 2u) << text;
  EXPECT_EQ(text.find('\x1f'), std::string::npos) << "no marker left";
  // Width 0 (a pipe): whole lines, the same words.
  const std::string piped = alert_text(a);
  EXPECT_NE(piped.find(a.title), std::string::npos) << piped;
  EXPECT_NE(piped.find(std::string(*code.rbegin())), std::string::npos) << piped;
}

}  // namespace
}  // namespace ff::watch
