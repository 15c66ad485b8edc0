#include "report/editor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

namespace ff::report {
namespace {

using analyze::Diagnosis;

// A failure on rank 2 with a traceback through the user's code and two kinds of collateral,
// one of them seen twice.
Diagnosis failed() {
  Diagnosis d;
  d.verdict = analyze::VerdictKind::kFailed;
  analyze::Finding p;
  p.id = "pytorch.shape-mismatch";
  p.title = "Shapes cannot be multiplied";
  p.category = "model-code";
  p.rank = 2;
  p.evidence.push_back(
      {"logs/job 1.log", 120, 2, "", "", "", "RuntimeError: mat1 and mat2 shapes cannot be multiplied"});
  p.fix = {"Check the input features", "Print the shapes"};
  p.verify = "python train.py --steps 1";
  p.root_cause = "The layer's in_features differ from the input's last dimension.";
  p.fingerprint = "abc123";
  p.traceback = {
      {"train.py", 74, "<module>"}, {"train.py", 61, "main"}, {"/usr/lib/python3/torch/nn/linear.py", 114, "forward"}};
  p.user_frame = analyze::Frame{"train.py", 61, "main"};
  d.primary = p;
  analyze::Collateral c;
  c.id = "gloo.connection-closed";
  c.title = "Gloo connection closed by peer";
  c.category = "communication";
  c.ranks = {0, 1, 3};
  c.count = 3;
  c.explained_by = p.id;
  c.first = {"logs/job 1.log", 40, 0, "", "", "", "RuntimeError: Connection closed by peer"};
  d.collateral.push_back(c);
  analyze::Collateral c2 = c;
  c2.id = "torchrun.child-failed";
  c2.title = "torchrun: a child process failed";
  c2.category = "launcher";
  c2.ranks = {};
  c2.count = 1;
  c2.first.line = 300;
  c2.first.text = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:";
  d.collateral.push_back(c2);
  return d;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e; (e = s.find('\n', b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
  EXPECT_EQ(b, s.size()) << "every line ends in a newline";
  return out;
}

TEST(Vimgrep, DecisiveLineFirstThenCollateralThenTheUsersFrame) {
  const auto lines = lines_of(render_vimgrep(failed()));
  ASSERT_EQ(lines.size(), 4u);
  const std::regex grep(R"(^(.+):([0-9]+):([0-9]+): (error|info|note): (.+)$)");
  std::vector<std::smatch> m(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_TRUE(std::regex_match(lines[i], m[i], grep)) << lines[i];
  EXPECT_EQ(m[0][1], "logs/job 1.log");
  EXPECT_EQ(m[0][2], "120");
  EXPECT_EQ(m[0][4], "error");
  EXPECT_NE(m[0][5].str().find("Shapes cannot be multiplied [pytorch.shape-mismatch], rank 2"), std::string::npos)
      << lines[0];
  EXPECT_NE(m[0][5].str().find("mat1 and mat2"), std::string::npos);
  EXPECT_EQ(m[1][2], "40");
  EXPECT_EQ(m[1][4], "info");
  EXPECT_NE(m[1][5].str().find("on ranks 0-1, 3, 3 lines; explained by pytorch.shape-mismatch at logs/job 1.log:120"),
            std::string::npos)
      << lines[1];
  EXPECT_EQ(m[2][2], "300");
  EXPECT_EQ(m[3][1], "train.py");
  EXPECT_EQ(m[3][2], "61");
  EXPECT_EQ(m[3][4], "note");
  EXPECT_NE(m[3][5].str().find("your code (main), the innermost frame"), std::string::npos);
}

TEST(Vimgrep, LogTextStaysOnOneEscapedLine) {
  Diagnosis d = failed();
  d.primary->evidence[0].text = "boom\nfake.log:1:1: error: injected\x1b[2J";
  d.collateral.clear();
  d.primary->user_frame.reset();
  const auto lines = lines_of(render_vimgrep(d));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find('\x1b'), std::string::npos);
  EXPECT_NE(lines[0].find("boom fake.log:1:1"), std::string::npos) << lines[0];
}

TEST(Vimgrep, NoPrimaryNoLines) {
  Diagnosis d;
  d.verdict = analyze::VerdictKind::kHealthy;
  EXPECT_EQ(render_vimgrep(d), "");
}

TEST(Sarif, OneRunWithTheRulesThatFiredAndTheirResults) {
  const auto j = nlohmann::json::parse(render_sarif(failed(), {.version = "9.9.9", .entry_link = {}}));
  EXPECT_EQ(j["version"], "2.1.0");
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& run = j["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "firstfault");
  EXPECT_EQ(run["tool"]["driver"]["version"], "9.9.9");
  const auto& rules = run["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0]["id"], "pytorch.shape-mismatch");
  EXPECT_EQ(rules[1]["id"], "gloo.connection-closed");
  EXPECT_EQ(rules[2]["id"], "torchrun.child-failed");
  const std::string help = rules[0]["help"]["text"];
  EXPECT_NE(help.find("1. Check the input features"), std::string::npos) << help;
  EXPECT_NE(help.find("python train.py --steps 1"), std::string::npos) << help;
  EXPECT_NE(std::string(rules[0]["help"]["markdown"]).find("```sh\npython train.py --steps 1\n```"), std::string::npos);
  EXPECT_EQ(rules[0]["fullDescription"]["text"], "The layer's in_features differ from the input's last dimension.");

  const auto& results = run["results"];
  ASSERT_EQ(results.size(), 3u);
  for (size_t i = 0; i < results.size(); ++i) {
    const int index = results[i]["ruleIndex"];
    EXPECT_EQ(rules[index]["id"], results[i]["ruleId"]) << "ruleIndex points at its rule";
  }
  EXPECT_EQ(results[0]["level"], "error");
  const auto& loc = results[0]["locations"][0]["physicalLocation"];
  EXPECT_EQ(loc["artifactLocation"]["uri"], "logs/job%201.log");
  EXPECT_EQ(loc["region"]["startLine"], 120);
  EXPECT_EQ(loc["region"]["snippet"]["text"], "RuntimeError: mat1 and mat2 shapes cannot be multiplied");
  EXPECT_NE(std::string(results[0]["message"]["text"]).find("Print the shapes"), std::string::npos);
  EXPECT_EQ(results[0]["properties"]["verify"], "python train.py --steps 1");
  EXPECT_EQ(results[0]["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"], "train.py");
  EXPECT_EQ(results[0]["relatedLocations"][0]["physicalLocation"]["region"]["startLine"], 61);
  const auto& frames = results[0]["stacks"][0]["frames"];
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0]["location"]["logicalLocations"][0]["name"], "forward") << "innermost first";
  EXPECT_EQ(frames[0]["location"]["physicalLocation"]["artifactLocation"]["uri"],
            "file:///usr/lib/python3/torch/nn/linear.py");
  EXPECT_EQ(results[0]["partialFingerprints"]["firstfault/v1"], "abc123");

  EXPECT_EQ(results[1]["level"], "note");
  EXPECT_EQ(results[1]["locations"][0]["physicalLocation"]["region"]["startLine"], 40);
  EXPECT_EQ(results[1]["relatedLocations"][0]["physicalLocation"]["region"]["startLine"], 120)
      << "collateral points at the line that explains it";
  EXPECT_EQ(run["properties"]["verdict"], "failed");
}

TEST(Sarif, AHealthyRunHasNoResults) {
  Diagnosis d;
  d.verdict = analyze::VerdictKind::kHealthy;
  const auto j = nlohmann::json::parse(render_sarif(d));
  EXPECT_TRUE(j["runs"][0]["results"].empty());
  EXPECT_TRUE(j["runs"][0]["tool"]["driver"]["rules"].empty());
  EXPECT_EQ(j["runs"][0]["properties"]["verdict"], "healthy");
}

TEST(Sarif, UrisAreEncoded) {
  EXPECT_EQ(path_to_uri_reference("a b/c#d?.log"), "a%20b/c%23d%3F.log");
  EXPECT_EQ(path_to_uri_reference("/var/log/x.log"), "file:///var/log/x.log");
  EXPECT_EQ(path_to_uri_reference("c:x.log"), "c%3Ax.log") << "never read as a scheme";
  EXPECT_EQ(path_to_uri_reference("caf\xC3\xA9.log"), "caf%C3%A9.log");
}

}  // namespace
}  // namespace ff::report
