#include "base/cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ff {
namespace {

namespace fs = std::filesystem;

class CacheFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ff-cache-files-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

TEST_F(CacheFiles, WrittenAtomicallyAndReadOnlyWhenRegular) {
  const std::string path = (dir_ / "kb-1.bin").string();
  ASSERT_TRUE(write_cache_file(dir_.string(), path, {"ab", "", "cd"}));
  EXPECT_EQ(slurp(path), "abcd");
  size_t size = 0;
  int fd = open_cache_file(path, &size);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(size, 4u);
  ::close(fd);
  // Nothing but the file is left (no temporary).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  // A link, a FIFO, a folder: not opened (a FIFO would block).
  fs::create_symlink(path, dir_ / "link.bin");
  ASSERT_EQ(::mkfifo((dir_ / "fifo.bin").c_str(), 0600), 0);
  fs::create_directories(dir_ / "dir.bin");
  for (const char* name : {"link.bin", "fifo.bin", "dir.bin", "missing.bin"})
    EXPECT_LT(open_cache_file((dir_ / name).string(), &size), 0) << name;
  // Written over a link: the link is replaced, its target untouched.
  std::ofstream(dir_ / "target") << "keep";
  fs::create_symlink(dir_ / "target", dir_ / "over.bin");
  ASSERT_TRUE(write_cache_file(dir_.string(), (dir_ / "over.bin").string(), {"new"}));
  EXPECT_EQ(slurp(dir_ / "target"), "keep");
  EXPECT_FALSE(fs::is_symlink(dir_ / "over.bin"));
}

TEST_F(CacheFiles, AFailedWriteIsToldOnce) {
  std::ofstream(dir_ / "file") << "x";
  const std::string bad = (dir_ / "file" / "cache").string();
  EXPECT_FALSE(write_cache_file(bad, bad + "/kb-1.bin", {"x"}));
  EXPECT_FALSE(write_cache_file(bad, bad + "/kb-2.bin", {"x"}));
  auto p = take_cache_problem();
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->find("cannot write the cache in " + bad), std::string::npos) << *p;
  EXPECT_FALSE(take_cache_problem().has_value());
}

TEST_F(CacheFiles, PruneKeepsTheNewestOfItsOwnAndNothingElse) {
  auto put = [&](const std::string& name, const std::string& bytes, int hours_ago) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    fs::last_write_time(dir_ / name, fs::file_time_type::clock::now() - std::chrono::hours(hours_ago));
  };
  for (int i = 0; i < 5; ++i) put("kb-" + std::to_string(i), "MAGIC" + std::to_string(i), i);
  put("kb-mine.txt", "my notes", 10);
  put("kb-short", "MAG", 11);
  prune_cache(dir_.string(), "kb-", "MAGIC", 2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(fs::exists(dir_ / ("kb-" + std::to_string(i))), i < 2) << i;
  EXPECT_TRUE(fs::exists(dir_ / "kb-mine.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "kb-short"));
}

TEST(CacheChecksum, EveryBitCounts) {
  std::string data(1000, 'a');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  const uint64_t sum = cache_checksum(data);
  for (size_t bit = 0; bit < data.size() * 8; bit += 13) {
    std::string d = data;
    d[bit / 8] = static_cast<char>(d[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_NE(cache_checksum(d), sum) << bit;
  }
  EXPECT_NE(cache_checksum(data.substr(0, 999)), sum);
}

}  // namespace
}  // namespace ff
