// `--redact` end to end: real logs (tests/data, ../shared/corpus read in place, a generated
// two-node job) with secrets of every kind planted in copies (config lines at the top and
// the end, and on the decisive line itself). No planted secret, and no node name of the
// job, may survive in any output of diagnose (text and JSON), events, diff or verify; the
// redacted diagnosis is the plain one's in id, category, decisive line and rank.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ff::test::lines_of;

using ff::test::quote;
using ff::test::slurp;
using ff::test::write_file;

// What is planted, and the part of it that must not survive.
struct Secret {
  const char* kind;
  const char* value;
};
const Secret kSecrets[] = {
    {"hf-token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"},
    {"wandb-key", "0123456789abcdef0123456789abcdef01234567"},
    {"aws-access-key-id", "AKIAIOSFODNN7EXAMPLE"},
    {"aws-access-key-id", "ASIAY34FZKBOKMUTVV7A"},
    {"aws-secret-access-key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
    {"github-token", "ghp_1234567890abcdefghijklmnopqrstuvwxyz"},
    {"github-token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"},
    {"openai-key", "sk-proj-abc123DEF456ghi789JKL012mno345"},
    {"slack-token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl"},
    {"bearer-token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.abc123"},
    {"url-password", "s3cr3tPass"},
    {"secret", "hunter2xyz"},
    {"email", "alice.smith@example.com"},
    {"host", "gpu-node-17.cluster.example.com"},
    {"ipv4", "10.128.0.7"},
    {"ipv4", "172.16.4.2"},
    {"ipv6", "fe80::42:acff:fe11:2"},
    {"user", "alicia"},
};

// Lines a job prints at start-up (a shell trace, env dumps, a clone, a health check).
const char* kConfigLines =
    "+ export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\n"
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY "
    "session ASIAY34FZKBOKMUTVV7A\n"
    "Cloning into 'data'... https://alicia:s3cr3tPass@git.example.com/ml/data.git\n"
    "GITHUB_TOKEN=ghp_1234567890abcdefghijklmnopqrstuvwxyz "
    "GH_PAT=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz\n"
    "OPENAI_API_KEY=sk-proj-abc123DEF456ghi789JKL012mno345 SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKl\n"
    "+ curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.abc123' http://10.128.0.7:8000/v1/models\n"
    "mlflow: tracking db password=hunter2xyz at gpu-node-17.cluster.example.com, master 172.16.4.2\n"
    "NCCL INFO Bootstrap : Using eth0:fe80::42:acff:fe11:2%eth0<0>\n"
    "Job submitted by alice.smith@example.com from /home/alicia/proj\n";
// Appended to the decisive line.
const char* kOnDecisive =
    " (by alice.smith@example.com on gpu-node-17.cluster.example.com 10.128.0.7, "
    "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567, /home/alicia/run)";

class Redact : public ff::test::TempDirTest {
 protected:
  json diagnose(const std::string& path, const std::string& flags = "") {
    ff::test::Outcome r = run("diagnose --format json " + flags + " " + quote(path));
    EXPECT_TRUE(r.rc == 1 || r.rc == 0 || r.rc == 3) << r.err;
    return json::parse(r.out);
  }
  // The node names the job's own diagnosis knows (they must not survive either).
  static std::vector<std::string> nodes_of(const json& d) {
    std::vector<std::string> out;
    auto add = [&](const json& n) {
      // localhost is kept (kb/formats/secrets.yaml `keep`): it names no machine.
      if (n.is_string() && n.get<std::string>().size() >= 4 && n != "localhost") out.push_back(n.get<std::string>());
    };
    if (d["primary"].is_object()) {
      add(d["primary"]["node"]);
      for (const auto& e : d["primary"]["evidence"]) add(e["node"]);
    }
    for (const auto& c : d["collateral"])
      for (const auto& n : c["nodes"]) add(n);
    return out;
  }
  // A copy of `log` with the secrets planted; returns its path and the decisive line's number.
  std::pair<std::string, uint64_t> plant(const std::string& log, const std::string& name) {
    json d = diagnose(log);
    EXPECT_TRUE(d["primary"].is_object()) << log;
    if (!d["primary"].is_object()) return {"", 0};
    const uint64_t line = d["primary"]["evidence"][0]["line"].get<uint64_t>();
    std::vector<std::string> lines = lines_of(slurp(log));
    EXPECT_LE(line, lines.size());
    lines[line - 1] += kOnDecisive;
    const size_t top = lines_of(kConfigLines).size();
    std::string out = kConfigLines;
    for (const auto& l : lines) out += l + "\n";
    out += kConfigLines;
    fs::path path = dir_ / "planted" / name;
    write_file(path, out);
    nodes_[path.string()] = nodes_of(d);
    // Planting changes nothing in the diagnosis.
    json planted = diagnose(path.string());
    EXPECT_EQ(planted["primary"]["id"], d["primary"]["id"]) << name;
    EXPECT_EQ(planted["primary"]["evidence"][0]["line"].get<uint64_t>(), line + top) << name;
    return {path.string(), line + top};
  }
  void expect_clean(const std::string& what, const std::string& output, const std::string& input) {
    for (const Secret& s : kSecrets)
      EXPECT_EQ(output.find(s.value), std::string::npos) << what << ": a " << s.kind << " survived: " << s.value;
    for (const auto& n : nodes_[input]) EXPECT_EQ(output.find(n), std::string::npos) << what << ": node " << n << " survived";
  }
  // Every command on one planted log.
  void check(const std::string& log, const std::string& name) {
    auto [path, line] = plant(log, name);
    if (path.empty()) return;
    json plain = diagnose(path);
    ff::test::Outcome rj = run("diagnose --redact --format json " + quote(path));
    expect_clean(name + " diagnose json", rj.out + rj.err, path);
    json red = json::parse(rj.out);
    EXPECT_EQ(red["verdict"], plain["verdict"]) << name;
    EXPECT_EQ(red["primary"]["id"], plain["primary"]["id"]) << name;
    EXPECT_EQ(red["primary"]["category"], plain["primary"]["category"]) << name;
    EXPECT_EQ(red["primary"]["rank"], plain["primary"]["rank"]) << name;
    EXPECT_EQ(red["primary"]["evidence"][0]["line"], plain["primary"]["evidence"][0]["line"]) << name;
    EXPECT_EQ(red["primary"]["evidence"][0]["line"].get<uint64_t>(), line) << name;
    const std::string decisive = red["primary"]["evidence"][0]["text"].get<std::string>();
    EXPECT_NE(decisive.find("[REDACTED:hf-token]"), std::string::npos) << decisive;
    EXPECT_NE(decisive.find("user-1@example.invalid"), std::string::npos) << decisive;
    // The summary counts what the report shows: here the decisive line's kinds (the config
    // lines are in no diagnosis; the diff below shows them).
    ASSERT_TRUE(red["redaction"].is_object()) << name;
    EXPECT_GT(red["redaction"]["total"].get<int>(), 0);
    for (const char* kind : {"hf-token", "email", "host", "ipv4", "user"}) EXPECT_TRUE(counted(red, kind)) << name << ": " << kind;
    EXPECT_FALSE(plain.contains("redaction"));
    // A node is one pseudonym everywhere: the primary's node is its evidence's.
    if (plain["primary"]["node"].is_string() && plain["primary"]["node"] == plain["primary"]["evidence"][0]["node"]) {
      EXPECT_EQ(red["primary"]["node"], red["primary"]["evidence"][0]["node"]);
    }

    ff::test::Outcome rt = run("diagnose --redact -v " + quote(path));
    expect_clean(name + " diagnose text", rt.out + rt.err, path);
    EXPECT_NE(rt.out.find("Redacted (--redact): "), std::string::npos) << rt.out;
    for (const char* fmt : {"html", "markdown"}) {
      ff::test::Outcome rf = run(std::string("diagnose --redact --format ") + fmt + " " + quote(path));
      EXPECT_EQ(rf.rc, plain["exit_code"].get<int>()) << rf.err;
      expect_clean(name + " diagnose " + fmt, rf.out + rf.err, path);
    }
    for (const char* fmt : {"jsonl", "text"}) {
      ff::test::Outcome re = run(std::string("events --redact --format ") + fmt + " " + quote(path));
      EXPECT_EQ(re.rc, 1) << re.err;
      expect_clean(name + " events " + fmt, re.out + re.err, path);
      EXPECT_NE(re.out.find("[REDACTED:hf-token]"), std::string::npos);
    }
  }
  static bool counted(const json& j, const std::string& kind) {
    for (const auto& k : j["redaction"]["kinds"])
      if (k["kind"] == kind) return k["count"].get<int>() > 0;
    return false;
  }
  std::map<std::string, std::vector<std::string>> nodes_;
};

const std::string kData = std::string(FF_SOURCE_DIR) + "/tests/data/";
const std::string kCorpus = std::string(FF_SHARED_DIR) + "/corpus/";

TEST_F(Redact, ARankExceptionUnderTorchrunTee) { check(kData + "01_rank_exception__tee.log", "tee.log"); }
TEST_F(Redact, AGlooHang) { check(kData + "06_hang.log", "hang.log"); }

TEST_F(Redact, CorpusLogsWithNodeNamesInNcclPrefixes) {
  for (const char* c : {"github-issues/cases/011.log", "github-issues/cases/021.log", "github-issues-2/cases/d2-037.log"}) {
    if (!fs::exists(kCorpus + c)) GTEST_SKIP() << "no corpus at " << kCorpus;
    check(kCorpus + c, fs::path(c).filename().string());
  }
}

// Two nodes with real-looking names, per-rank NCCL lines naming them and their addresses.
TEST_F(Redact, ATwoNodeJob) {
  std::string raw = (dir_ / "gen.log").string();
  std::string cmd = "python3 " + quote(std::string(FF_SOURCE_DIR) + "/bench/genlog.py") +
                    " --ranks 16 --ranks-per-node 8 --steps 3 --failure oom --stamp ms --seed 3 > " + quote(raw) +
                    " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string text = slurp(raw);
  for (auto [from, to] : {std::pair<std::string, std::string>{"node-000", "dgx-a100-017"}, {"node-001", "dgx-a100-018"}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  }
  ASSERT_NE(text.find("dgx-a100-018"), std::string::npos);
  write_file(dir_ / "job.log", text);
  check((dir_ / "job.log").string(), "two-node.log");
  // Both nodes, not only the failing one.
  ff::test::Outcome r = run("diagnose --redact -v " + quote((dir_ / "planted" / "two-node.log").string()));
  EXPECT_EQ(r.out.find("dgx-a100"), std::string::npos) << r.out;
  ff::test::Outcome e = run("events --redact " + quote((dir_ / "planted" / "two-node.log").string()));
  EXPECT_EQ(e.out.find("dgx-a100"), std::string::npos);
}

TEST_F(Redact, DiffAndVerify) {
  auto [failed, line] = plant(kData + "01_rank_exception__tee.log", "failed.log");
  ASSERT_FALSE(failed.empty());
  // The control: a healthy run without them, so the config lines are new in the failed run.
  std::string control = kData + "09_healthy__tee.log";
  for (const char* fmt : {"text", "json"}) {
    ff::test::Outcome d = run(std::string("diff --redact --format ") + fmt + " " + quote(failed) + " --control " + quote(control));
    EXPECT_EQ(d.rc, 1) << d.err;
    expect_clean(std::string("diff ") + fmt, d.out + d.err, failed);
    ff::test::Outcome plain = run(std::string("diff --format ") + fmt + " " + quote(failed) + " --control " + quote(control));
    EXPECT_NE(plain.out.find("hf_AbCdEfGh"), std::string::npos) << "the planted line is not in the plain diff";
    if (std::string(fmt) == "json") {
      json j = json::parse(d.out), p = json::parse(plain.out);
      EXPECT_EQ(j["diagnosis"]["primary"]["id"], p["diagnosis"]["primary"]["id"]);
      EXPECT_EQ(j["diagnosis"]["primary"]["evidence"][0]["line"], p["diagnosis"]["primary"]["evidence"][0]["line"]);
      for (const Secret& s : kSecrets) EXPECT_TRUE(counted(j, s.kind)) << "diff: no " << s.kind << " counted";
    } else {
      EXPECT_NE(d.out.find("Redacted (--redact): "), std::string::npos);
    }
    ff::test::Outcome v = run(std::string("verify --redact --format ") + fmt + " --before " + quote(failed) + " --after " + quote(control));
    expect_clean(std::string("verify ") + fmt, v.out + v.err, failed);
    ff::test::Outcome vp = run(std::string("verify --format ") + fmt + " --before " + quote(failed) + " --after " + quote(control));
    EXPECT_EQ(v.rc, vp.rc);
  }
}

}  // namespace
