// `firstfault diff` and `firstfault verify` on real runs of the same training script:
// failed runs and a healthy control (tests/data, written by real PyTorch runs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ff::test::data;

struct Out {
  int rc;
  json j;
};

Out run(const std::string& args) {
  ff::test::Outcome r =
      ff::test::run_firstfault(args + " --format json", fs::temp_directory_path() / ("ff-compare-" + std::to_string(::getpid())));
  Out o{r.rc, json::parse(r.out, nullptr, false)};
  EXPECT_FALSE(o.j.is_discarded()) << args << "\n" << r.err;
  return o;
}

TEST(Diff, TheFailuresOwnLinesComeFirstAndSharedLinesAreSuppressed) {
  Out o = run("diff " + data("01_rank_exception__tee.log") + " --control " + data("09_healthy__tee.log"));
  EXPECT_EQ(o.rc, 1);
  ASSERT_GT(o.j["failure_lines"].get<int>(), 0);
  const json& first = o.j["new_templates"][0];
  EXPECT_NE(first["first"].get<std::string>().find("mat1 and mat2 shapes cannot be multiplied"), std::string::npos);
  // Step lines, process-group set-up and the like are in both runs: none of them is "new".
  for (const auto& t : o.j["new_templates"]) {
    std::string text = t["first"];
    EXPECT_EQ(text.find("grad_norm"), std::string::npos) << text;
    EXPECT_EQ(text.find("Reducer buckets have been rebuilt"), std::string::npos) << text;
  }
  // The first departure is the config line that differs (the fault was injected by config).
  EXPECT_NE(o.j["first_departure"]["text"].get<std::string>().find("config:"), std::string::npos);
  EXPECT_EQ(o.j["diagnosis"]["primary"]["id"], "pytorch.model.shape-mismatch");
}

TEST(Diff, ARunAgainstItselfHasNothingNewAndItsFailureIsNoise) {
  Out o = run("diff " + data("01_rank_exception__tee.log") + " --control " + data("01_rank_exception__tee.log"));
  EXPECT_EQ(o.j["new_templates_total"], 0);
  EXPECT_TRUE(o.j["first_departure"].is_null());
  // Every line is also in the control, so nothing can be the failure.
  EXPECT_TRUE(o.j["diagnosis"]["primary"].is_null());
}

TEST(Verify, HealthyRerunAfterTheFixPasses) {
  Out o = run("verify --before " + data("01_rank_exception__tee.log") + " --after " + data("09_healthy__tee.log"));
  EXPECT_EQ(o.rc, 0);
  EXPECT_EQ(o.j["outcome"], "fixed");
  EXPECT_FALSE(o.j["collateral_gone"].empty());
}

TEST(Verify, TheSameFailureAgainFailsEvenInAnotherLogFormat) {
  Out o = run("verify --before " + data("01_rank_exception__tee.log") + " --after " + data("01_rank_exception__rankprefix.log"));
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.j["outcome"], "still-failing");
  EXPECT_EQ(o.j["before"]["fingerprint"], o.j["after"]["fingerprint"]);
}

TEST(Verify, ADifferentFailureAfterTheFirstFails) {
  Out o = run("verify --before " + data("01_rank_exception__tee.log") + " --after " + data("05_signal_kill__tee.log"));
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.j["outcome"], "replaced");
  EXPECT_NE(o.j["before"]["fingerprint"], o.j["after"]["fingerprint"]);
}

TEST(Verify, NumbersThatChangedAreReported) {
  Out o = run("verify --before " + data("03_loss_scale_terminal__tee.log") + " --after " + data("03_loss_scale_transient__tee.log"));
  EXPECT_EQ(o.rc, 0);
  bool loss_scale = false;
  for (const auto& n : o.j["number_changes"]) loss_scale = loss_scale || n.get<std::string>().find("loss-scale: terminal -> transient") == 0;
  EXPECT_TRUE(loss_scale) << o.j.dump();
}

}  // namespace
