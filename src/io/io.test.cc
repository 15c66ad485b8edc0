#include "io/io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "io/journal.h"

namespace ff::io {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// Helpers

struct Source {
  SourceInfo info;
  std::string data;
  size_t calls = 0;
  size_t max_chunk = 0;
  bool ended = false;
  std::optional<Error> error;  // from end()
};

// Records everything, and checks the begin/data/end protocol as it goes.
class Collect : public ByteSink {
 public:
  std::vector<Source> sources;

  void begin(const SourceInfo& s) override {
    EXPECT_TRUE(sources.empty() || sources.back().ended) << "begin() before end() of the previous source";
    sources.push_back(Source{s, {}, 0, 0, false, std::nullopt});
  }
  void data(std::string_view chunk) override {
    ASSERT_FALSE(sources.empty());
    ASSERT_FALSE(sources.back().ended) << "data() after end()";
    EXPECT_FALSE(chunk.empty());
    sources.back().data.append(chunk);
    sources.back().calls++;
    sources.back().max_chunk = std::max(sources.back().max_chunk, chunk.size());
  }
  void end(const SourceInfo& s, const Status& st) override {
    ASSERT_FALSE(sources.empty());
    EXPECT_FALSE(sources.back().ended);
    EXPECT_EQ(s.name, sources.back().info.name);
    sources.back().ended = true;
    if (!st.ok()) sources.back().error = st.error();
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Source& s : sources) out.push_back(s.info.name);
    return out;
  }
};

// A log-like text: timestamps, ANSI colours, a progress bar, non-ASCII.
std::string make_log(int lines, int seed = 0) {
  std::string s;
  for (int i = 0; i < lines; ++i) {
    s += "2024-05-01 12:00:" + std::to_string(10 + (i + seed) % 50) + " [rank" + std::to_string(i % 8) +
         "] \x1b[32mINFO\x1b[0m step " + std::to_string(i) + " loss=" + std::to_string(1.0 / (i + 1 + seed)) +
         (i % 7 == 0 ? " █████▌    57% ✓" : "") + "\n";
  }
  return s;
}

// Deterministic pseudo-random bytes (incompressible, binary).
std::string random_bytes(size_t n, uint32_t seed = 12345) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    s[i] = static_cast<char>(seed >> 24);
  }
  return s;
}

void write_file(const fs::path& p, std::string_view bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << p;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool have_tool(const char* tool) {
  return std::system(("command -v " + std::string(tool) + " >/dev/null 2>&1").c_str()) == 0;
}

void sh(const std::string& cmd) { ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd; }

// What a command prints (its exit status is ignored: `gzip -dc` on a cut file fails after
// printing everything it could decode, which is the reference we want).
std::string capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ff_io_test.XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    // Tests may leave unreadable files behind.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink()) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& rel) const { return (dir_ / rel).string(); }
  // Runs a shell command inside the temp dir.
  void in_dir(const std::string& cmd) const { sh("cd '" + dir_.string() + "' && " + cmd); }

  fs::path dir_;
};

// ---------------------------------------------------------------------------------------
// looks_binary

TEST(LooksBinary, EmptyIsText) { EXPECT_FALSE(looks_binary("")); }

TEST(LooksBinary, LogsWithEscapesProgressBarsAndUtf8AreText) {
  EXPECT_FALSE(looks_binary(make_log(100)));
  EXPECT_FALSE(looks_binary("Epoch 1: 100%|██████████| 938/938 [00:12<00:00, 77.1it/s]\r\n"));
  EXPECT_FALSE(looks_binary("\x1b[1;31mERROR\x1b[0m \x1b[2K\rstep 5\tloss 0.1\f\n"));
  EXPECT_FALSE(looks_binary("日本語のログ 🚀 ok\n"));
}

TEST(LooksBinary, AFewNulsOrInvalidBytesAreStillText) {
  std::string log = make_log(50);
  log[100] = '\0';
  log[2000] = '\0';
  log[300] = '\xff';
  log[301] = '\xfe';
  log[4000] = '\x01';
  EXPECT_FALSE(looks_binary(log));
  // Latin-1 text (invalid UTF-8 here and there).
  EXPECT_FALSE(looks_binary("caf\xe9 na\xefve r\xe9sum\xe9 - the rest of the line is ascii\n"));
}

// Issue 14: a log in a legacy encoding was skipped as binary (and a folder holding it then
// looked healthy). Like ripgrep, only control bytes make a file binary.
TEST(LooksBinary, LegacyEncodingsAreText) {
  // "RuntimeError: CUDA out of memory" after a Chinese message, in GBK; most bytes are
  // not UTF-8.
  std::string gbk;
  for (int i = 0; i < 60; ++i) gbk += "\xd1\xb5\xc1\xb7\xca\xa7\xb0\xdc\xa3\xac\xcf\xd4\xb4\xe6\xb2\xbb\xd7\xe3\n";
  gbk += "RuntimeError: CUDA out of memory.\n";
  EXPECT_FALSE(looks_binary(gbk));
  std::string latin1;
  for (int i = 0; i < 200; ++i) latin1 += "\xe9\xe8\xe0\xe7\xf9 ";
  EXPECT_FALSE(looks_binary(latin1));
}

TEST(LooksBinary, UtfSequenceCutAtBlockEndIsText) {
  std::string s = "progress ██";
  s.pop_back();  // leaves a truncated 3-byte sequence at the end
  EXPECT_FALSE(looks_binary(s));
}

TEST(LooksBinary, RandomAndNulHeavyDataIsBinary) {
  EXPECT_TRUE(looks_binary(random_bytes(8192)));
  std::string nul_heavy = make_log(20);
  for (size_t i = 0; i < nul_heavy.size(); i += 5) nul_heavy[i] = '\0';  // 20% NUL
  EXPECT_TRUE(looks_binary(nul_heavy));
  EXPECT_TRUE(looks_binary(std::string(4096, '\0')));
  // 35% control bytes, no NUL.
  std::string ctrl;
  for (int i = 0; i < 1000; ++i) ctrl += (i % 20 < 7) ? '\x02' : 'a';
  EXPECT_TRUE(looks_binary(ctrl));
}

TEST(LooksBinary, CheckpointFormatsThatLookLikeTextAreBinary) {
  EXPECT_TRUE(looks_binary(std::string("PK\x03\x04") + "archive/data.pklarchive/version" + make_log(5)));
  std::string safetensors("\x58\x3e\x00\x00\x00\x00\x00\x00", 8);
  safetensors += "{\"__metadata__\":{\"format\":\"pt\"},\"model.embed.weight\":{\"dtype\":\"BF16\"}}";
  EXPECT_TRUE(looks_binary(safetensors));
  EXPECT_TRUE(looks_binary(std::string("\x80\x02") + "ctorch._utils\n_rebuild_tensor_v2\n"));
  EXPECT_TRUE(looks_binary(std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False}")));
}

// ---------------------------------------------------------------------------------------
// Plain files

TEST_F(IoTest, PlainFile) {
  const std::string log = make_log(1000);
  write_file(path("train.log"), log);
  Collect sink;
  InputReport rep = read_inputs({path("train.log")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  ASSERT_EQ(sink.sources.size(), 1u);
  const Source& s = sink.sources[0];
  EXPECT_EQ(s.info.name, path("train.log"));
  EXPECT_EQ(s.info.encoding, "plain");
  EXPECT_EQ(s.info.size_hint, log.size());
  EXPECT_EQ(s.data, log);
  EXPECT_TRUE(s.ended);
  EXPECT_FALSE(s.error);
  EXPECT_EQ(rep.sources_read, 1);
  EXPECT_EQ(rep.bytes_read, log.size());
}

TEST_F(IoTest, LargePlainFileIsChunkedByChunkSize) {
  const std::string log = make_log(40000);  // ~3 MB
  write_file(path("big.log"), log);
  Collect sink;
  ReadOptions opt;
  opt.chunk_size = 256 * 1024;
  InputReport rep = read_inputs({path("big.log")}, sink, opt);
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].data, log);
  EXPECT_LE(sink.sources[0].max_chunk, opt.chunk_size);
  EXPECT_GE(sink.sources[0].calls, log.size() / opt.chunk_size);
  EXPECT_EQ(rep.bytes_read, log.size());
}

TEST_F(IoTest, TinyChunkSizeReassemblesIdentically) {
  const std::string log = make_log(300);
  write_file(path("a.log"), log);
  in_dir("gzip -k a.log");
  for (const char* name : {"a.log", "a.log.gz"}) {
    Collect sink;
    ReadOptions opt;
    opt.chunk_size = 7;
    InputReport rep = read_inputs({path(name)}, sink, opt);
    EXPECT_TRUE(rep.errors.empty()) << name;
    ASSERT_EQ(sink.sources.size(), 1u) << name;
    EXPECT_EQ(sink.sources[0].data, log) << name;
    EXPECT_LE(sink.sources[0].max_chunk, 7u) << name;
    EXPECT_GE(sink.sources[0].calls, log.size() / 7) << name;
  }
}

TEST_F(IoTest, EmptyFileIsOneEmptySource) {
  write_file(path("empty.log"), "");
  Collect sink;
  InputReport rep = read_inputs({path("empty.log")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].data, "");
  EXPECT_EQ(sink.sources[0].calls, 0u);
  EXPECT_TRUE(sink.sources[0].ended);
  EXPECT_FALSE(sink.sources[0].error);
  EXPECT_EQ(rep.sources_read, 1);
}

TEST_F(IoTest, InputsAreStreamedInTheOrderGiven) {
  write_file(path("b.log"), "bee\n");
  write_file(path("a.log"), "ay\n");
  Collect sink;
  InputReport rep = read_inputs({path("b.log"), path("a.log")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(sink.names(), (std::vector<std::string>{path("b.log"), path("a.log")}));
  EXPECT_EQ(rep.bytes_read, 7u);
}

// ---------------------------------------------------------------------------------------
// Compression

TEST_F(IoTest, GzipZstdXzBzip2GiveIdenticalBytes) {
  // Bigger than every internal buffer, so refills and output-full paths are exercised.
  const std::string log = make_log(6000);
  write_file(path("log.txt"), log);
  in_dir("gzip -c log.txt > log.gz && zstd -q -c log.txt > log.zst && xz -c log.txt > log.xz");
  std::vector<std::pair<std::string, std::string>> cases = {{"log.gz", "gzip"}, {"log.zst", "zstd"}, {"log.xz", "xz"}};
  if (have_tool("bzip2")) {
    in_dir("bzip2 -c log.txt > log.bz2");
    cases.emplace_back("log.bz2", "bzip2");
  }
  for (const auto& [name, encoding] : cases) {
    Collect sink;
    InputReport rep = read_inputs({path(name)}, sink);
    EXPECT_TRUE(rep.errors.empty()) << name << ": " << (rep.errors.empty() ? "" : rep.errors[0].to_string());
    ASSERT_EQ(sink.sources.size(), 1u) << name;
    EXPECT_EQ(sink.sources[0].info.name, path(name));
    EXPECT_EQ(sink.sources[0].info.encoding, encoding);
    EXPECT_EQ(sink.sources[0].info.size_hint, fs::file_size(path(name))) << "compressed size";
    EXPECT_TRUE(sink.sources[0].data == log)
        << name << " differs (" << sink.sources[0].data.size() << " vs " << log.size() << " bytes)";
    EXPECT_EQ(rep.bytes_read, log.size()) << name;
  }
}

TEST_F(IoTest, CompressionIsDetectedByMagicNotExtension) {
  const std::string log = make_log(50);
  write_file(path("src.txt"), log);
  in_dir("gzip -c src.txt > rank0.log && zstd -q -c src.txt > rank1.txt");
  Collect sink;
  InputReport rep = read_inputs({path("rank0.log"), path("rank1.txt")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  ASSERT_EQ(sink.sources.size(), 2u);
  EXPECT_EQ(sink.sources[0].info.encoding, "gzip");
  EXPECT_EQ(sink.sources[0].data, log);
  EXPECT_EQ(sink.sources[1].info.encoding, "zstd");
  EXPECT_EQ(sink.sources[1].data, log);
}

TEST_F(IoTest, ConcatenatedStreamsDecodeAsOne) {
  const std::string a = make_log(100, 1), b = make_log(80, 2);
  write_file(path("a"), a);
  write_file(path("b"), b);
  in_dir(
      "gzip -c a > ab.gz && gzip -c b >> ab.gz && zstd -q -c a > ab.zst && zstd -q -c b >> ab.zst"
      " && xz -c a > ab.xz && xz -c b >> ab.xz");
  for (const char* name : {"ab.gz", "ab.zst", "ab.xz"}) {
    Collect sink;
    InputReport rep = read_inputs({path(name)}, sink);
    EXPECT_TRUE(rep.errors.empty()) << name;
    ASSERT_EQ(sink.sources.size(), 1u);
    EXPECT_EQ(sink.sources[0].data, a + b) << name;
  }
}

TEST_F(IoTest, EmptyCompressedFilesAreEmptySources) {
  write_file(path("e"), "");
  in_dir("gzip -c e > e.gz && zstd -q -c e > e.zst && xz -c e > e.xz");
  std::vector<std::string> names = {"e.gz", "e.zst", "e.xz"};
  if (have_tool("bzip2")) {
    in_dir("bzip2 -c e > e.bz2");
    names.push_back("e.bz2");
  }
  for (const std::string& name : names) {
    Collect sink;
    InputReport rep = read_inputs({path(name)}, sink);
    EXPECT_TRUE(rep.errors.empty()) << name << ": " << (rep.errors.empty() ? "" : rep.errors[0].to_string());
    ASSERT_EQ(sink.sources.size(), 1u) << name;
    EXPECT_EQ(sink.sources[0].data, "");
    EXPECT_FALSE(sink.sources[0].error) << name;
  }
}

TEST_F(IoTest, TruncatedGzipDeliversThePrefixThenReportsTruncation) {
  // Small enough that everything fits in one decoder output block: libarchive's filter
  // would deliver nothing here; we must deliver most of the log.
  const std::string log = make_log(400);
  write_file(path("src"), log);
  in_dir("gzip -c src > full.gz");
  const std::string gz = read_file(path("full.gz"));
  write_file(path("cut.gz"), gz.substr(0, gz.size() * 2 / 3));
  Collect sink;
  InputReport rep = read_inputs({path("cut.gz")}, sink);
  ASSERT_EQ(sink.sources.size(), 1u);
  const Source& s = sink.sources[0];
  EXPECT_GT(s.data.size(), log.size() / 2) << "the decodable prefix is delivered";
  EXPECT_LT(s.data.size(), log.size());
  EXPECT_EQ(log.compare(0, s.data.size(), s.data), 0) << "delivered bytes are a prefix of the log";
  // Exactly what gzip(1) itself recovers from the cut file.
  // At least what gzip(1) recovers from the cut file (zlib may decode a byte or two more
  // of the last partial deflate symbol run than gzip's own inflater).
  const std::string reference = capture("gzip -dc '" + path("cut.gz") + "' 2>/dev/null");
  EXPECT_GE(s.data.size(), reference.size());
  EXPECT_LE(s.data.size(), reference.size() + 16);
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->code, ErrorCode::kTruncated);
  EXPECT_EQ(s.error->where.file, path("cut.gz"));
  EXPECT_EQ(s.error->message,
            "truncated gzip stream after " + std::to_string(s.data.size()) + " bytes: unexpected end of file");
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kTruncated);
  EXPECT_EQ(rep.errors[0].where.file, path("cut.gz"));
  EXPECT_EQ(rep.bytes_read, s.data.size());
}

TEST_F(IoTest, TruncatedZstdAndXzDeliverThePrefix) {
  // zstd decodes whole blocks (128 KiB of output), so take a log of many blocks.
  const std::string log = make_log(20000);
  write_file(path("src"), log);
  in_dir("zstd -q -c src > full.zst && xz -c src > full.xz");
  for (const char* name : {"full.zst", "full.xz"}) {
    const std::string packed = read_file(path(name));
    const std::string cut = std::string("cut_") + name;
    write_file(path(cut), packed.substr(0, packed.size() / 2));
    Collect sink;
    InputReport rep = read_inputs({path(cut)}, sink);
    ASSERT_EQ(sink.sources.size(), 1u) << name;
    const Source& s = sink.sources[0];
    EXPECT_GT(s.data.size(), log.size() / 4) << name;
    EXPECT_EQ(log.compare(0, s.data.size(), s.data), 0) << name;
    ASSERT_TRUE(s.error) << name;
    EXPECT_EQ(s.error->code, ErrorCode::kTruncated) << name;
    ASSERT_EQ(rep.errors.size(), 1u);
    EXPECT_EQ(rep.errors[0].where.file, path(cut));
  }
}

TEST_F(IoTest, TruncatedBzip2IsReported) {
  if (!have_tool("bzip2")) GTEST_SKIP() << "bzip2 not installed";
  write_file(path("src"), make_log(3000));
  in_dir("bzip2 -c src > full.bz2");
  const std::string packed = read_file(path("full.bz2"));
  write_file(path("cut.bz2"), packed.substr(0, packed.size() / 2));
  Collect sink;
  InputReport rep = read_inputs({path("cut.bz2")}, sink);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kTruncated) << rep.errors[0].to_string();
  EXPECT_EQ(rep.errors[0].where.file, path("cut.bz2"));
}

TEST_F(IoTest, CorruptGzipMidwayDeliversWhatDecodedAndFails) {
  const std::string log = make_log(3000);
  write_file(path("src"), log);
  in_dir("gzip -c src > full.gz");
  std::string gz = read_file(path("full.gz"));
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 64; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  write_file(path("bad.gz"), gz);
  Collect sink;
  InputReport rep = read_inputs({path("bad.gz")}, sink);
  ASSERT_EQ(sink.sources.size(), 1u);
  const Source& s = sink.sources[0];
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->code, ErrorCode::kTruncated);
  EXPECT_NE(s.error->message.find("corrupt gzip stream after"), std::string::npos) << s.error->message;
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].where.file, path("bad.gz"));
  // Deflate checks little until the trailer: the bytes delivered before the damage match.
  EXPECT_GT(s.data.size(), 0u);
  const size_t good = std::min(s.data.size(), log.size() / 4);
  EXPECT_EQ(log.compare(0, good, s.data, 0, good), 0);
}

TEST_F(IoTest, FileWithGzipMagicThatIsNotGzipIsAFormatError) {
  write_file(path("fake.log"), std::string("\x1f\x8b") + "this is not gzip at all\n");
  write_file(path("ok.log"), "fine\n");
  Collect sink;
  InputReport rep = read_inputs({path("fake.log"), path("ok.log")}, sink);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kFormat);
  EXPECT_EQ(rep.errors[0].where.file, path("fake.log"));
  EXPECT_NE(rep.errors[0].message.find("not a valid gzip stream"), std::string::npos) << rep.errors[0].message;
  // The bad input is not a source; the next input is still read.
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].data, "fine\n");
}

TEST_F(IoTest, BzhTextIsNotMistakenForBzip2) {
  write_file(path("a.log"), "BZh is how this log line starts\n");
  Collect sink;
  InputReport rep = read_inputs({path("a.log")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].info.encoding, "plain");
}

TEST_F(IoTest, ExpandedSizeLimitStopsTheSourceAndTheRest) {
  const std::string log = make_log(200);
  write_file(path("src"), log);
  in_dir("gzip -c src > a.gz");
  write_file(path("b.log"), "never read\n");
  Collect sink;
  ReadOptions opt;
  opt.max_total_bytes = 1000;
  opt.chunk_size = 300;
  InputReport rep = read_inputs({path("a.gz"), path("b.log")}, sink, opt);
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].data, log.substr(0, 1000));
  ASSERT_TRUE(sink.sources[0].error);
  EXPECT_EQ(sink.sources[0].error->code, ErrorCode::kLimit);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kLimit);
  EXPECT_EQ(rep.errors[0].where.file, path("a.gz"));
  EXPECT_NE(rep.errors[0].message.find("expanded size exceeds the limit of 1000 bytes"), std::string::npos)
      << rep.errors[0].message;
  EXPECT_EQ(rep.bytes_read, 1000u);
  ASSERT_EQ(rep.notes.size(), 1u);
  EXPECT_NE(rep.notes[0].find("1 more input(s) not read"), std::string::npos) << rep.notes[0];
}

// ---------------------------------------------------------------------------------------
// Tar

TEST_F(IoTest, TarGzMembersAreSourcesInArchiveOrder) {
  const std::string l0 = make_log(100, 0), l1 = make_log(200, 1), l2 = make_log(50, 2);
  write_file(path("b/node0.log"), l0);
  write_file(path("b/node1/rank3.log"), l1);
  write_file(path("b/a_last.log"), l2);
  in_dir("tar -czf bundle.tar.gz -C b node0.log node1/rank3.log a_last.log");
  Collect sink;
  InputReport rep = read_inputs({path("bundle.tar.gz")}, sink);
  EXPECT_TRUE(rep.errors.empty()) << (rep.errors.empty() ? "" : rep.errors[0].to_string());
  const std::string a = path("bundle.tar.gz");
  ASSERT_EQ(sink.names(), (std::vector<std::string>{a + ":node0.log", a + ":node1/rank3.log", a + ":a_last.log"}));
  EXPECT_EQ(sink.sources[0].data, l0);
  EXPECT_EQ(sink.sources[1].data, l1);
  EXPECT_EQ(sink.sources[2].data, l2);
  for (const Source& s : sink.sources) {
    EXPECT_EQ(s.info.encoding, "tar+gzip");
    EXPECT_FALSE(s.error);
  }
  EXPECT_EQ(sink.sources[1].info.size_hint, l1.size());
  EXPECT_EQ(rep.sources_read, 3);
  EXPECT_EQ(rep.bytes_read, l0.size() + l1.size() + l2.size());
}

TEST_F(IoTest, TarSkipsDirectoriesHiddenAndBinaryMembersAndDecompressesMembers) {
  const std::string l0 = make_log(30, 0), l1 = make_log(40, 1);
  write_file(path("b/logs/x.log"), l0);
  write_file(path("b/logs/.DS_Store"), "hidden\n");
  write_file(path("b/ckpt/model.pt"), random_bytes(20000));
  write_file(path("b/rotated.log"), l1);
  in_dir("gzip b/rotated.log && tar -cf all.tar -C b ./logs ./ckpt ./rotated.log.gz");
  Collect sink;
  InputReport rep = read_inputs({path("all.tar")}, sink);
  EXPECT_TRUE(rep.errors.empty()) << (rep.errors.empty() ? "" : rep.errors[0].to_string());
  const std::string a = path("all.tar");
  ASSERT_EQ(sink.names(), (std::vector<std::string>{a + ":logs/x.log", a + ":rotated.log.gz"}));
  EXPECT_EQ(sink.sources[0].data, l0);
  EXPECT_EQ(sink.sources[0].info.encoding, "tar");
  EXPECT_EQ(sink.sources[1].data, l1);
  EXPECT_EQ(sink.sources[1].info.encoding, "gzip+tar");
  ASSERT_EQ(rep.notes.size(), 1u);
  EXPECT_EQ(rep.notes[0], "skipped binary archive member " + a + ":ckpt/model.pt");
}

TEST_F(IoTest, TruncatedTarGzDeliversEarlierMembersAndReportsTheCutOne) {
  const std::string l0 = make_log(300, 0), l1 = make_log(3000, 1);
  write_file(path("b/first.log"), l0);
  write_file(path("b/second.log"), l1);
  in_dir("tar -czf t.tar.gz -C b first.log second.log");
  const std::string packed = read_file(path("t.tar.gz"));
  write_file(path("cut.tar.gz"), packed.substr(0, packed.size() * 3 / 4));
  Collect sink;
  InputReport rep = read_inputs({path("cut.tar.gz")}, sink);
  const std::string a = path("cut.tar.gz");
  ASSERT_EQ(sink.sources.size(), 2u);
  EXPECT_EQ(sink.sources[0].info.name, a + ":first.log");
  EXPECT_EQ(sink.sources[0].data, l0);
  EXPECT_FALSE(sink.sources[0].error);
  const Source& cut = sink.sources[1];
  EXPECT_EQ(cut.info.name, a + ":second.log");
  EXPECT_GT(cut.data.size(), 0u);
  // Every decodable byte of the member: (at least) the tar stream gzip(1) recovers, less
  // the first member (header + data padded to 512) and the second member's header.
  const size_t tar_bytes = capture("gzip -dc '" + path("cut.tar.gz") + "' 2>/dev/null").size();
  const size_t data_start = 512 + (l0.size() + 511) / 512 * 512 + 512;
  ASSERT_GT(tar_bytes, data_start);
  EXPECT_GE(cut.data.size(), tar_bytes - data_start);
  EXPECT_LE(cut.data.size(), tar_bytes - data_start + 16);
  EXPECT_LT(cut.data.size(), l1.size());
  EXPECT_EQ(l1.compare(0, cut.data.size(), cut.data), 0);
  ASSERT_TRUE(cut.error);
  EXPECT_EQ(cut.error->code, ErrorCode::kTruncated);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kTruncated);
  EXPECT_EQ(rep.errors[0].where.file, a + ":second.log");
}

TEST_F(IoTest, TruncatedPlainTarDeliversTheCutMembersBytes) {
  const std::string l0 = make_log(100, 0), l1 = make_log(1000, 1);
  write_file(path("b/first.log"), l0);
  write_file(path("b/second.log"), l1);
  in_dir("tar -cf t.tar -C b first.log second.log");
  const size_t data_start = 512 + (l0.size() + 511) / 512 * 512 + 512;
  const size_t cut_at = data_start + 12345;
  write_file(path("cut.tar"), read_file(path("t.tar")).substr(0, cut_at));
  Collect sink;
  InputReport rep = read_inputs({path("cut.tar")}, sink);
  ASSERT_EQ(sink.sources.size(), 2u);
  EXPECT_EQ(sink.sources[0].data, l0);
  EXPECT_EQ(sink.sources[1].data, l1.substr(0, 12345));
  ASSERT_TRUE(sink.sources[1].error);
  EXPECT_EQ(sink.sources[1].error->code, ErrorCode::kTruncated);
  EXPECT_EQ(sink.sources[1].error->message,
            "truncated tar archive: the member ends after 12345 of its " + std::to_string(l1.size()) + " bytes");
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].where.file, path("cut.tar") + ":second.log");
}

TEST_F(IoTest, ArchiveMemberLimit) {
  for (int i = 0; i < 5; ++i) write_file(path("m/f" + std::to_string(i) + ".log"), "x\n");
  in_dir("tar -cf m.tar -C m f0.log f1.log f2.log f3.log f4.log");
  Collect sink;
  ReadOptions opt;
  opt.max_archive_members = 2;
  InputReport rep = read_inputs({path("m.tar")}, sink, opt);
  EXPECT_EQ(sink.sources.size(), 2u);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kLimit);
  EXPECT_EQ(rep.errors[0].where.file, path("m.tar"));
}

// ---------------------------------------------------------------------------------------
// Directories

TEST_F(IoTest, DirectorySortedSkipsBinaryWithNoteAndIgnoresHidden) {
  write_file(path("run/b.log"), "bee\n");
  write_file(path("run/a.log"), "ay\n");
  write_file(path("run/model.pt"), random_bytes(50000));
  write_file(path("run/.hidden.log"), "hidden\n");
  write_file(path("run/.git/config"), "hidden dir\n");
  Collect sink;
  InputReport rep = read_inputs({path("run")}, sink);
  EXPECT_TRUE(rep.errors.empty()) << (rep.errors.empty() ? "" : rep.errors[0].to_string());
  ASSERT_EQ(sink.names(), (std::vector<std::string>{path("run/a.log"), path("run/b.log")}));
  EXPECT_EQ(sink.sources[0].data, "ay\n");
  EXPECT_EQ(sink.sources[1].data, "bee\n");
  ASSERT_EQ(rep.notes.size(), 1u);
  EXPECT_EQ(rep.notes[0], "skipped binary file " + path("run/model.pt"));
}

TEST_F(IoTest, TrailingSlashGivesCleanNames) {
  write_file(path("run/a.log"), "ay\n");
  Collect sink;
  InputReport rep = read_inputs({path("run") + "/"}, sink);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(sink.names(), (std::vector<std::string>{path("run/a.log")}));
}

TEST_F(IoTest, NestedDirectoriesDepthFirstByName) {
  write_file(path("r/c/d/e.log"), "e\n");
  write_file(path("r/b.log"), "b\n");
  write_file(path("r/a/x.log"), "x\n");
  write_file(path("r/a.log"), "a\n");
  write_file(path("r/a/y.log.gz.src"), "y\n");
  in_dir("gzip -c r/a/y.log.gz.src > r/a/y.log.gz && rm r/a/y.log.gz.src");
  Collect sink;
  InputReport rep = read_inputs({path("r")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(sink.names(), (std::vector<std::string>{path("r/a/x.log"), path("r/a/y.log.gz"), path("r/a.log"),
                                                    path("r/b.log"), path("r/c/d/e.log")}));
  EXPECT_EQ(sink.sources[1].data, "y\n");
  EXPECT_EQ(sink.sources[1].info.encoding, "gzip");
}

TEST_F(IoTest, SymlinkLoopsTerminateAndFileSymlinksAreFollowedWhenAsked) {
  write_file(path("r/sub/x.log"), "x\n");
  write_file(path("outside.log"), "outside\n");
  fs::create_directory_symlink("..", path("r/sub/up"));  // loop back to r
  fs::create_directory_symlink(".", path("r/self"));     // loop to itself
  fs::create_symlink(path("outside.log"), path("r/link.log"));
  fs::create_symlink(path("nowhere"), path("r/dangling.log"));
  Collect sink;
  ReadOptions opt;
  opt.follow_symlinks = true;
  InputReport rep = read_inputs({path("r")}, sink, opt);
  EXPECT_TRUE(rep.errors.empty()) << (rep.errors.empty() ? "" : rep.errors[0].to_string());
  EXPECT_EQ(sink.names(), (std::vector<std::string>{path("r/link.log"), path("r/sub/x.log")}));
  EXPECT_EQ(sink.sources[0].data, "outside\n");
  bool loop_note = false, dangling_note = false;
  for (const std::string& n : rep.notes) {
    loop_note |= n.find("already visited") != std::string::npos;
    dangling_note |= n == "skipped broken symbolic link " + path("r/dangling.log");
  }
  EXPECT_TRUE(loop_note);
  EXPECT_TRUE(dangling_note);
}

// Issue 14: by default a walk does not follow links (a link planted in a log folder must
// not make firstfault read files elsewhere); each one skipped is a note. A link named as
// an input is followed, to a file or to a folder.
TEST_F(IoTest, SymlinksInAWalkAreSkippedWithANoteUnlessFollowed) {
  write_file(path("r/sub/x.log"), "x\n");
  write_file(path("outside/o.log"), "outside\n");
  fs::create_directory_symlink("..", path("r/sub/up"));
  fs::create_directory_symlink(path("outside"), path("r/dir"));
  fs::create_symlink(path("outside/o.log"), path("r/link.log"));
  fs::create_symlink(path("nowhere"), path("r/dangling.log"));
  Collect sink;
  InputReport rep = read_inputs({path("r")}, sink);
  EXPECT_TRUE(rep.errors.empty()) << (rep.errors.empty() ? "" : rep.errors[0].to_string());
  EXPECT_EQ(sink.names(), (std::vector<std::string>{path("r/sub/x.log")}));
  for (const char* link : {"r/dangling.log", "r/dir", "r/link.log", "r/sub/up"}) {
    bool noted = false;
    for (const std::string& n : rep.notes) noted |= n.find("skipped symbolic link " + path(link) + " ") == 0;
    EXPECT_TRUE(noted) << link;
  }
  Collect named;
  rep = read_inputs({path("r/link.log"), path("r/dir")}, named);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(named.names(), (std::vector<std::string>{path("r/link.log"), path("r/dir/o.log")}));
}

TEST_F(IoTest, EmptyDirectoryIsAnError) {
  fs::create_directories(path("empty"));
  Collect sink;
  InputReport rep = read_inputs({path("empty")}, sink);
  EXPECT_TRUE(sink.sources.empty());
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kNotFound);
  EXPECT_EQ(rep.errors[0].message, "no log files in directory");
  EXPECT_EQ(rep.errors[0].where.file, path("empty"));
}

TEST_F(IoTest, DirectoryOfOnlyBinaryFilesIsAnError) {
  write_file(path("ckpt/model.pt"), random_bytes(10000));
  Collect sink;
  InputReport rep = read_inputs({path("ckpt")}, sink);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kNotFound);
  EXPECT_EQ(rep.errors[0].message, "no log files in directory (1 binary files skipped)");
}

TEST_F(IoTest, FifoInsideADirectoryIsSkipped) {
  write_file(path("r/a.log"), "a\n");
  if (::mkfifo(path("r/pipe").c_str(), 0600) != 0) GTEST_SKIP() << "mkfifo not supported here";
  Collect sink;
  InputReport rep = read_inputs({path("r")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(sink.names(), (std::vector<std::string>{path("r/a.log")}));
  ASSERT_EQ(rep.notes.size(), 1u);
  EXPECT_EQ(rep.notes[0], "skipped " + path("r/pipe") + ": not a regular file");
}

// ---------------------------------------------------------------------------------------
// Errors

TEST_F(IoTest, MissingFileIsNotFoundAndOthersAreStillRead) {
  write_file(path("ok.log"), "ok\n");
  Collect sink;
  InputReport rep = read_inputs({path("missing.log"), path("ok.log")}, sink);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kNotFound);
  EXPECT_EQ(rep.errors[0].message, "no such file or directory");
  EXPECT_EQ(rep.errors[0].where.file, path("missing.log"));
  EXPECT_EQ(rep.errors[0].to_string(), path("missing.log") + ": no such file or directory");
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].data, "ok\n");
}

TEST_F(IoTest, BinaryFileNamedDirectlyIsAnError) {
  write_file(path("model.pt"), random_bytes(10000));
  Collect sink;
  InputReport rep = read_inputs({path("model.pt")}, sink);
  EXPECT_TRUE(sink.sources.empty());
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].code, ErrorCode::kFormat);
  EXPECT_EQ(rep.errors[0].message, "binary file, skipped");
  EXPECT_EQ(rep.errors[0].where.file, path("model.pt"));

  // With skip_binary off it is delivered as is.
  Collect all;
  ReadOptions opt;
  opt.skip_binary = false;
  InputReport rep2 = read_inputs({path("model.pt")}, all, opt);
  EXPECT_TRUE(rep2.errors.empty());
  ASSERT_EQ(all.sources.size(), 1u);
  EXPECT_EQ(all.sources[0].data, random_bytes(10000));
}

// The checks that need an unprivileged user: run them in a child process, dropping to
// "nobody" when the test runs as root (root reads everything).
TEST_F(IoTest, PermissionDenied) {
  write_file(path("r/secret.log"), "secret\n");
  write_file(path("r/ok.log"), "ok\n");
  write_file(path("locked/x.log"), "x\n");
  fs::permissions(path("r/secret.log"), fs::perms::none);
  fs::permissions(path("locked"), fs::perms::none);
  fs::permissions(dir_, fs::perms::all);  // let "nobody" reach the fixtures

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: no gtest assertions here; report through the exit code.
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(77);
    if (::geteuid() == 0) ::_exit(77);
    Collect sink;
    InputReport rep = read_inputs({path("r/secret.log"), path("r"), path("locked")}, sink);
    // secret.log directly, secret.log in the walk, the locked directory.
    if (rep.errors.size() != 3) ::_exit(1);
    for (const Error& e : rep.errors) {
      if (e.code != ErrorCode::kPermission || e.message != "permission denied") ::_exit(2);
    }
    if (rep.errors[0].where.file != path("r/secret.log")) ::_exit(3);
    if (rep.errors[1].where.file != path("r/secret.log")) ::_exit(4);
    if (rep.errors[2].where.file != path("locked")) ::_exit(5);
    if (sink.sources.size() != 1 || sink.sources[0].data != "ok\n") ::_exit(6);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "running as root and cannot drop privileges";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child check failed at step " << WEXITSTATUS(status);
}

// ---------------------------------------------------------------------------------------
// Pipes and stdin

TEST_F(IoTest, FifoIsReadLikeStdinAndSniffedForCompression) {
  const std::string log = make_log(2000);
  write_file(path("src"), log);
  in_dir("gzip -c src > src.gz");
  const std::string gz = read_file(path("src.gz"));
  for (const std::string* payload : {&log, &gz}) {
    const std::string fifo = path("fifo");
    fs::remove(fifo);
    if (::mkfifo(fifo.c_str(), 0600) != 0) GTEST_SKIP() << "mkfifo not supported here";
    // The writer dribbles the bytes in small pieces, so reads return short.
    std::thread writer([&] {
      // Non-blocking open until the reader is there (ENXIO before), so a broken reader
      // fails the test instead of hanging it.
      int fd = -1;
      for (int tries = 0; tries < 5000 && fd < 0; ++tries) {
        fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (fd < 0) return;
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      for (size_t off = 0; off < payload->size(); off += 1000) {
        size_t n = std::min<size_t>(1000, payload->size() - off);
        if (::write(fd, payload->data() + off, n) != static_cast<ssize_t>(n)) break;
      }
      ::close(fd);
    });
    Collect sink;
    InputReport rep = read_inputs({fifo}, sink);
    writer.join();
    EXPECT_TRUE(rep.errors.empty());
    ASSERT_EQ(sink.sources.size(), 1u);
    EXPECT_EQ(sink.sources[0].info.name, fifo);
    EXPECT_EQ(sink.sources[0].info.size_hint, 0u);
    EXPECT_EQ(sink.sources[0].info.encoding, payload == &log ? "plain" : "gzip");
    EXPECT_TRUE(sink.sources[0].data == log);
  }
}

// An upload's files: each written into a pipe while the feed hands the read ends out,
// one after the other; the streams are sniffed like stdin, and a stream read stops early
// on (a binary one) is closed, so its writer fails with EPIPE instead of blocking.
class PipeFeed : public StreamFeed {
 public:
  explicit PipeFeed(std::vector<std::pair<std::string, std::string>> files) : files_(std::move(files)) {}
  bool next(std::string& name, int& fd) override {
    if (i_ == files_.size()) return false;
    int p[2];
    if (::pipe(p) != 0) return false;
    const std::string bytes = files_[i_].second;
    name = files_[i_].first;
    fd = p[0];
    ++i_;
    if (writer_.joinable()) writer_.join();
    writer_ = std::thread([w = p[1], bytes, this] {
      size_t off = 0;
      while (off < bytes.size()) {
        ssize_t n = ::write(w, bytes.data() + off, std::min<size_t>(4096, bytes.size() - off));
        if (n <= 0) {
          ++broken;
          break;
        }
        off += static_cast<size_t>(n);
      }
      ::close(w);
    });
    return true;
  }
  ~PipeFeed() override {
    if (writer_.joinable()) writer_.join();
  }
  std::atomic<int> broken{0};

 private:
  std::vector<std::pair<std::string, std::string>> files_;
  size_t i_ = 0;
  std::thread writer_;
};

TEST_F(IoTest, StreamsOfAFeedAreSourcesInOrderSniffedAndClosedWhenSkipped) {
  std::signal(SIGPIPE, SIG_IGN);
  const std::string a = make_log(3000), b = make_log(500, 7);
  write_file(path("b"), b);
  in_dir("gzip -c b > b.gz");
  PipeFeed feed(
      {{"a.log", a}, {"b.log.gz", read_file(path("b.gz"))}, {"w.pt", random_bytes(1 << 20)}, {"c.log", "last\n"}});
  Collect sink;
  InputReport rep = read_streams(feed, sink);
  EXPECT_EQ(sink.names(), (std::vector<std::string>{"a.log", "b.log.gz", "c.log"}));
  ASSERT_EQ(sink.sources.size(), 3u);
  EXPECT_TRUE(sink.sources[0].data == a);
  EXPECT_EQ(sink.sources[1].info.encoding, "gzip");
  EXPECT_TRUE(sink.sources[1].data == b);
  EXPECT_EQ(sink.sources[2].data, "last\n");
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].where.file, "w.pt");
  EXPECT_NE(rep.errors[0].message.find("binary"), std::string::npos);
  EXPECT_EQ(feed.broken.load(), 1);  // only the skipped stream's writer met a closed pipe
}

// journalctl -o json and -o export (the shapes journalctl 252 writes: keys in any order,
// a message that is not UTF-8 as an array of bytes, a binary field with its length) read
// as the lines rsyslog would have written.
TEST(Journal, JsonAndExportEntriesBecomeSyslogLines) {
  using detail::JournalDecoder;
  using detail::JournalFormat;
  const std::string json =
      R"({"_PID":"4242","MESSAGE":"Traceback (most recent call last):\n  File \"train.py\", line 3","__CURSOR":"s=1","_HOSTNAME":"gpu-node-7","SYSLOG_IDENTIFIER":"train","__REALTIME_TIMESTAMP":"1764500000123456"})"
      "\n"
      R"({"__CURSOR":"s=2","__REALTIME_TIMESTAMP":"1764500001000000","_HOSTNAME":"gpu-node-7","_SYSTEMD_UNIT":"eval.service","MESSAGE":[104,105,255]})"
      "\nnot json\n";
  EXPECT_EQ(detail::detect_journal(json), JournalFormat::kJson);
  JournalDecoder dj(JournalFormat::kJson);
  std::string out;
  for (size_t i = 0; i < json.size(); i += 7) dj.feed(std::string_view(json).substr(i, 7), out);  // pieces cut anywhere
  dj.finish(out);
  EXPECT_EQ(out,
            "2025-11-30T10:53:20.123456+00:00 gpu-node-7 train[4242]: Traceback (most recent call last):\n"
            "2025-11-30T10:53:20.123456+00:00 gpu-node-7 train[4242]:   File \"train.py\", line 3\n"
            "2025-11-30T10:53:21.000000+00:00 gpu-node-7 eval.service: hi\xff\n"
            "not json\n");
  EXPECT_EQ(dj.malformed(), 1u);

  std::string exp = "__CURSOR=s=1\n__REALTIME_TIMESTAMP=1764500000123456\n_HOSTNAME=gpu-node-7\n_COMM=python3\n";
  const std::string msg = "line one\nline two";
  exp += "MESSAGE\n";
  for (int k = 0; k < 8; ++k) exp += static_cast<char>(k == 0 ? msg.size() : 0);
  exp += msg + "\n\n__CURSOR=s=2\nMESSAGE=no host, no time\n\n";
  EXPECT_EQ(detail::detect_journal(exp), JournalFormat::kExport);
  JournalDecoder de(JournalFormat::kExport);
  out.clear();
  for (size_t i = 0; i < exp.size(); i += 5) de.feed(std::string_view(exp).substr(i, 5), out);
  de.finish(out);
  EXPECT_EQ(out,
            "2025-11-30T10:53:20.123456+00:00 gpu-node-7 python3: line one\n"
            "2025-11-30T10:53:20.123456+00:00 gpu-node-7 python3: line two\n"
            "no host, no time\n");
  EXPECT_EQ(de.entries(), 2u);
  EXPECT_EQ(detail::detect_journal("2026-12-02 INFO a line\n"), JournalFormat::kNone);
}

TEST_F(IoTest, AJournalExportIsReadAsTextWhateverItsName) {
  const std::string json =
      R"({"__REALTIME_TIMESTAMP":"1764500000000000","_HOSTNAME":"h1","SYSLOG_IDENTIFIER":"t","MESSAGE":"x"})"
      "\n";
  write_file(path("journal.bin"), json);
  Collect sink;
  InputReport rep = read_inputs({path("journal.bin")}, sink);
  EXPECT_TRUE(rep.errors.empty());
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].info.encoding, "journal-json");
  EXPECT_EQ(sink.sources[0].data, "2025-11-30T10:53:20.000000+00:00 h1 t: x\n");
}

// stdin is swapped for a pipe in a child process, so the test runner's own stdin (closed
// or /dev/null under CI) is never touched.
TEST_F(IoTest, StdinIsSniffedForCompression) {
  const std::string log = make_log(500);
  write_file(path("src"), log);
  in_dir("zstd -q -c src > src.zst");
  const std::string zst = read_file(path("src.zst"));

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[1]);
    if (fds[0] != STDIN_FILENO) {
      if (::dup2(fds[0], STDIN_FILENO) != STDIN_FILENO) ::_exit(10);
      ::close(fds[0]);
    }
    Collect sink;
    InputReport rep = read_inputs({"-"}, sink);
    if (!rep.errors.empty()) ::_exit(1);
    if (sink.sources.size() != 1) ::_exit(2);
    const Source& s = sink.sources[0];
    if (s.info.name != "<stdin>") ::_exit(3);
    if (s.info.encoding != "zstd") ::_exit(4);
    if (s.info.size_hint != 0) ::_exit(5);
    if (s.data != log) ::_exit(6);
    ::_exit(0);
  }
  ::close(fds[0]);
  // Written in pieces so the child's first reads come back short.
  for (size_t off = 0; off < zst.size(); off += 500) {
    const size_t n = std::min<size_t>(500, zst.size() - off);
    ASSERT_EQ(::write(fds[1], zst.data() + off, n), static_cast<ssize_t>(n));
  }
  ::close(fds[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child check failed at step " << WEXITSTATUS(status);
}

}  // namespace
}  // namespace ff::io

namespace ff::io {
namespace {

// A sink that takes mapped windows and keeps every window alive until the end, as the
// scan's chunks do while they are in flight.
class MappedCollect : public Collect {
 public:
  bool accepts_mapped() const override { return true; }
  void data_mapped(std::string_view window, std::shared_ptr<const MappedWindow> keep) override {
    ++windows;
    kept.push_back(std::move(keep));
    data(window);
  }
  size_t windows = 0;
  std::vector<std::shared_ptr<const MappedWindow>> kept;
};

TEST_F(IoTest, QuietLargeFilesAreMappedAndReadExactly) {
  std::string log;
  while (log.size() < (9u << 20)) log += make_log(1000, static_cast<int>(log.size()));
  write_file(path("big.log"), log);
  ReadOptions opt;
  opt.map_min_bytes = 1 << 20;
  opt.map_quiet_seconds = 0;
  MappedCollect sink;
  InputReport rep = read_inputs({path("big.log")}, sink, opt);
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(sink.sources[0].info.encoding, "plain");
  EXPECT_EQ(sink.sources[0].data, log);  // every byte, once, in order
  EXPECT_EQ(sink.windows, 3u);           // 4 MiB windows over 9+ MiB
  EXPECT_EQ(rep.bytes_read, log.size());
}

// The file is cut short while it is read (as a log rotation might): the windows past
// the new end are not mapped (touching them would fault) but read, and the read reports
// the short file.
TEST_F(IoTest, AFileThatShrinksWhileMappedIsReadNotFaulted) {
  std::string log;
  while (log.size() < (10u << 20)) log += make_log(1000);
  write_file(path("rotating.log"), log);
  class Truncating : public MappedCollect {
   public:
    std::string file;
    void data_mapped(std::string_view window, std::shared_ptr<const MappedWindow> keep) override {
      MappedCollect::data_mapped(window, std::move(keep));  // copies the bytes first
      kept.clear();                                         // and unmaps them
      if (windows == 1) { ASSERT_EQ(::truncate(file.c_str(), 5 << 20), 0); }
    }
  } sink;
  sink.file = path("rotating.log");
  ReadOptions opt;
  opt.map_min_bytes = 0;
  opt.map_quiet_seconds = 0;
  InputReport rep = read_inputs({path("rotating.log")}, sink, opt);
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.windows, 1u);
  EXPECT_EQ(sink.sources[0].data, log.substr(0, 5 << 20));  // the first window, then the rest of the 5 MiB read
  ASSERT_TRUE(sink.sources[0].error.has_value());
  EXPECT_EQ(sink.sources[0].error->message, kShrankMessage);
}

TEST_F(IoTest, MappingStopsAtTheByteLimitLikeReading) {
  std::string log;
  while (log.size() < (6u << 20)) log += make_log(1000);
  write_file(path("big.log"), log);
  ReadOptions opt;
  opt.map_min_bytes = 0;
  opt.map_quiet_seconds = 0;
  opt.max_total_bytes = 5 << 20;
  MappedCollect sink;
  InputReport rep = read_inputs({path("big.log")}, sink, opt);
  ASSERT_EQ(sink.sources.size(), 1u);
  EXPECT_EQ(sink.sources[0].data, log.substr(0, 5 << 20));
  ASSERT_TRUE(sink.sources[0].error.has_value());
  EXPECT_EQ(sink.sources[0].error->code, ErrorCode::kLimit);
}

TEST_F(IoTest, RecentlyWrittenOrSmallOrCompressedFilesAreNotMapped) {
  write_file(path("live.log"), make_log(20000));
  in_dir("head -c 300000 live.log | gzip -c > old.log.gz");
  MappedCollect sink;
  ReadOptions opt;
  opt.map_min_bytes = 0;  // live.log was just written: the default quiet time rules it out
  InputReport rep = read_inputs({path("live.log"), path("old.log.gz")}, sink, opt);
  ASSERT_EQ(sink.sources.size(), 2u);
  EXPECT_EQ(sink.windows, 0u);
  EXPECT_EQ(sink.sources[0].data, make_log(20000));
  opt.map_quiet_seconds = 0;
  opt.map_min_bytes = 1 << 30;  // too small to be worth it
  MappedCollect sink2;
  read_inputs({path("live.log")}, sink2, opt);
  EXPECT_EQ(sink2.windows, 0u);
}

}  // namespace
}  // namespace ff::io

namespace ff::io {
namespace {

// Issue 14 (logrotate's copytruncate): the file is cut to nothing while windows of it are
// still mapped and not yet read, as the scan's chunks in flight are. Touching them raised
// SIGBUS (exit 135); now the pages past the new end read as zeros, the window says it
// shrank, and the windows after it are read (and find the file short).
TEST_F(IoTest, ATruncatedFileUnderLiveMappingsDoesNotFault) {
  std::string log;
  while (log.size() < (10u << 20)) log += make_log(1000);
  write_file(path("rotated.log"), log);
  class Keeping : public Collect {
   public:
    std::string file;
    std::vector<std::pair<std::string_view, std::shared_ptr<const MappedWindow>>> windows;
    bool accepts_mapped() const override { return true; }
    void data_mapped(std::string_view window, std::shared_ptr<const MappedWindow> keep) override {
      windows.emplace_back(window, std::move(keep));
      if (windows.size() == 1) { ASSERT_EQ(::truncate(file.c_str(), 0), 0); }
    }
  } sink;
  sink.file = path("rotated.log");
  ReadOptions opt;
  opt.map_min_bytes = 0;
  opt.map_quiet_seconds = 0;
  InputReport rep = read_inputs({path("rotated.log")}, sink, opt);
  ASSERT_EQ(sink.windows.size(), 1u);
  EXPECT_FALSE(sink.windows[0].second->shrank()) << "not touched yet";
  uint64_t sum = 0;
  for (const auto& [w, keep] : sink.windows) {
    for (char c : w) sum += static_cast<unsigned char>(c);
  }
  EXPECT_EQ(sum, 0u) << "the pages past the new end read as zeros";
  EXPECT_TRUE(sink.windows[0].second->shrank());
  ASSERT_EQ(sink.sources.size(), 1u);
  ASSERT_TRUE(sink.sources[0].error.has_value());
  EXPECT_EQ(sink.sources[0].error->message, kShrankMessage);
  // A SIGBUS that is not about one of io's windows still kills, as before: io's handler
  // passes it on to the one it replaced, which is the default action, or AddressSanitizer's
  // report (it installs its own handler before main) in the sanitised build.
#if defined(__SANITIZE_ADDRESS__)
#define FF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FF_TEST_ASAN 1
#endif
#endif
#ifdef FF_TEST_ASAN
  EXPECT_DEATH(::raise(SIGBUS), "AddressSanitizer: BUS");
#else
  EXPECT_EXIT(::raise(SIGBUS), ::testing::KilledBySignal(SIGBUS), "");
#endif
}

// The same cut while the file is read with read() (it was written recently): the end of
// the file comes early, and says so.
TEST_F(IoTest, AFileTruncatedWhileReadIsAnError) {
  std::string log;
  while (log.size() < (3u << 20)) log += make_log(1000);
  write_file(path("live.log"), log);
  class Truncating : public Collect {
   public:
    std::string file;
    void data(std::string_view chunk) override {
      Collect::data(chunk);
      if (sources.back().calls == 1) { ASSERT_EQ(::truncate(file.c_str(), 0), 0); }
    }
  } sink;
  sink.file = path("live.log");
  ReadOptions opt;
  opt.chunk_size = 64 << 10;
  InputReport rep = read_inputs({path("live.log")}, sink, opt);
  ASSERT_EQ(sink.sources.size(), 1u);
  ASSERT_TRUE(sink.sources[0].error.has_value());
  EXPECT_EQ(sink.sources[0].error->message, kShrankMessage);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0].where.file, path("live.log"));
}

}  // namespace
}  // namespace ff::io
