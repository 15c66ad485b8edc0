// `firstfault bundle` end to end (issue "Reports people would rather look at"): a real log
// with secrets planted on the lines before the failure and on the failing line itself, and
// the environment lines a job prints; the bundle holds every file its manifest names, no
// planted secret, the same diagnosis as `diagnose`, and the environment facts.
#include <re2/re2.h>

#include <nlohmann/json.hpp>

#include "bundle/bundle.h"
#include "harness.h"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Every fact of kb/formats/environment.yaml reads its own example lines.
TEST(BundleFacts, EachFactReadsItsExamples) {
  auto facts = ff::app::environment_facts(ff::kb::embedded_files());
  ASSERT_TRUE(facts.ok()) << facts.error().to_string();
  ASSERT_GE(facts->size(), 10u);
  for (const auto& f : *facts) {
    SCOPED_TRACE(f.name + ": " + f.regex);
    ASSERT_FALSE(f.examples.empty()) << "a fact without an example line is untested";
    RE2 re(f.regex);
    for (const auto& ex : f.examples) {
      std::string value;
      EXPECT_NE(ex.find(f.literal), std::string::npos) << ex;
      EXPECT_TRUE(RE2::PartialMatch(ex, re, &value)) << ex;
      EXPECT_FALSE(value.empty()) << ex;
    }
  }
}

class Bundle : public ff::test::TempDirTest {
 protected:
  // The members of a bundle, by name (without the folder).
  std::map<std::string, std::string> unpack(const fs::path& tgz) {
    const fs::path out = dir_ / "unpacked";
    fs::create_directories(out);
    const std::string cmd = "tar -xzf " + ff::test::quote(tgz.string()) + " -C " + ff::test::quote(out.string());
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(out))
      if (e.is_regular_file()) files[e.path().filename().string()] = ff::test::slurp(e.path());
    fs::remove_all(out);
    return files;
  }
};

const std::vector<std::string> kSecrets = {"hf_Qx7LmN2pR8sT4vW9yZ1aB3cD5eF6gH0jK", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zAb",
                                           "alice.smith@corp.example.com", "10.23.45.67", "s3cr3tPassw0rd"};

TEST_F(Bundle, HoldsTheDiagnosisTheEvidenceAndTheEnvironmentRedacted) {
  const std::string original = ff::test::slurp(std::string(FF_SOURCE_DIR) + "/tests/data/01_rank_exception__tee.log");
  // Environment lines and secrets early in the log (they become lines before the failure),
  // and a secret on the failing line (the decisive line, line 215 of the original).
  std::string planted =
      "PyTorch version: 2.1.0+cu121\nCUDA used to build PyTorch: 12.1\nNvidia driver version: 535.129.03\n"
      "GPU 0: NVIDIA A100-SXM4-80GB\n[default2]:HF_TOKEN=" + kSecrets[0] + " GITHUB_TOKEN=" + kSecrets[1] +
      " owner " + kSecrets[2] + " MASTER_ADDR=" + kSecrets[3] + " db=postgres://svc:" + kSecrets[4] + "@db.internal/x\n";
  std::string log;
  size_t line = 0;
  for (std::string l : ff::test::lines_of(original)) {
    ++line;
    if (line == 3) log += planted;
    if (l.find("mat1 and mat2 shapes cannot be multiplied") != std::string::npos && l.find("RuntimeError") != std::string::npos)
      l += " (user " + kSecrets[2] + " at " + kSecrets[3] + ")";
    log += l + "\n";
  }
  const fs::path job = dir_ / "job.log";
  ff::test::write_file(job, log);

  ff::test::Outcome plain = run("diagnose --format json " + ff::test::quote(job.string()));
  ASSERT_EQ(plain.rc, 1) << plain.err;
  const json p = json::parse(plain.out);
  ASSERT_EQ(p["primary"]["id"], "pytorch.model.shape-mismatch");

  const fs::path tgz = dir_ / "evidence.tar.gz";
  ff::test::Outcome b = run("bundle " + ff::test::quote(job.string()) + " -o " + ff::test::quote(tgz.string()));
  ASSERT_EQ(b.rc, 1) << b.err << b.out;
  EXPECT_NE(b.out.find("redacted"), std::string::npos) << b.out;
  auto files = unpack(tgz);
  ASSERT_TRUE(files.count("manifest.json")) << "members: " << files.size();
  const json manifest = json::parse(files["manifest.json"]);
  EXPECT_EQ(manifest["redacted"], true);
  EXPECT_EQ(manifest["verdict"], "failed");
  for (const auto& f : manifest["files"]) {
    const std::string name = f["name"];
    ASSERT_TRUE(files.count(name)) << name << " is in the manifest but not in the bundle";
    EXPECT_EQ(f["bytes"].get<size_t>(), files[name].size()) << name;
  }
  for (const char* name : {"diagnosis.json", "diagnosis.md", "report.html", "evidence.txt", "environment.json"})
    EXPECT_TRUE(files.count(name)) << name;
  for (const auto& [name, bytes] : files)
    for (const auto& s : kSecrets) EXPECT_EQ(bytes.find(s), std::string::npos) << s << " survived in " << name;
  // The same diagnosis as `diagnose`: redaction comes after the analysis.
  const json d = json::parse(files["diagnosis.json"]);
  EXPECT_EQ(d["primary"]["id"], p["primary"]["id"]);
  EXPECT_EQ(d["primary"]["rank"], p["primary"]["rank"]);
  EXPECT_EQ(d["primary"]["evidence"][0]["line"], p["primary"]["evidence"][0]["line"]);
  EXPECT_GT(d["redaction"]["total"].get<int>(), 0);
  // The decisive line with the lines before it.
  EXPECT_NE(files["evidence.txt"].find("> RuntimeError: mat1 and mat2 shapes cannot be multiplied"), std::string::npos);
  EXPECT_NE(files["evidence.txt"].find("== each rank's first event"), std::string::npos);
  const json env = json::parse(files["environment.json"]);
  EXPECT_EQ(env["torch_version"][0]["value"], "2.1.0+cu121");
  EXPECT_EQ(env["cuda_version"][0]["value"], "12.1");
  EXPECT_EQ(env["driver_version"][0]["value"], "535.129.03");
  EXPECT_EQ(env["gpu_model"][0]["value"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(env["world_size"][0]["value"], "4");

  // --no-redact keeps the text as logged, and says so.
  ff::test::Outcome raw = run("bundle --no-redact " + ff::test::quote(job.string()) + " -o " + ff::test::quote(tgz.string()));
  EXPECT_EQ(raw.rc, 1) << raw.err;
  EXPECT_NE(raw.out.find("NOT redacted"), std::string::npos) << raw.out;
  files = unpack(tgz);
  EXPECT_NE(files["diagnosis.json"].find(kSecrets[2]), std::string::npos) << "the decisive line as logged";
}

TEST_F(Bundle, ABundleThatCannotBeWrittenIsAClearErrorAndLeavesNothing) {
  const fs::path job = dir_ / "job.log";
  fs::copy_file(std::string(FF_SOURCE_DIR) + "/tests/data/01_rank_exception__tee.log", job);
  ff::test::Outcome b = run("bundle " + ff::test::quote(job.string()) + " -o " + ff::test::quote((dir_ / "no" / "such" / "dir" / "e.tar.gz").string()));
  EXPECT_EQ(b.rc, 2);
  EXPECT_NE(b.err.find("cannot write"), std::string::npos) << b.err;
  EXPECT_FALSE(fs::exists(dir_ / "no"));
  ff::test::Outcome none = run("bundle " + ff::test::quote((dir_ / "missing.log").string()) + " -o " +
                               ff::test::quote((dir_ / "e.tar.gz").string()));
  EXPECT_EQ(none.rc, 2);
  EXPECT_FALSE(fs::exists(dir_ / "e.tar.gz"));
}

}  // namespace
