#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ff::metrics {
namespace {

const Aliases& aliases() {
  static const Aliases a = [] {
    kb::LoadResult r = kb::load(kb::embedded_files());
    return Aliases::from_kb(r.kb.metric_specs);
  }();
  return a;
}

// metric name -> value, for readable assertions
std::map<std::string, double> parse(std::string_view line, double* step = nullptr, bool expect = true) {
  ProgressLine p;
  bool ok = parse_progress_line(line, aliases(), p);
  EXPECT_EQ(ok, expect) << line;
  std::map<std::string, double> m;
  for (const auto& s : p.samples) m[aliases().name(s.metric)] = s.value;
  if (step) *step = p.has_step ? p.step : -1;
  return m;
}

TEST(Progress, PlainPipeSeparated) {
  double step;
  auto m = parse("train: epoch 0 step 12/60 | loss 0.9257 | grad_norm 0.703 | lr 9.990e-04 | loss_scale 65536 | 42.7 ms/step",
                 &step);
  EXPECT_EQ(step, 12);
  EXPECT_DOUBLE_EQ(m["loss"], 0.9257);
  EXPECT_DOUBLE_EQ(m["grad_norm"], 0.703);
  EXPECT_DOUBLE_EQ(m["lr"], 9.990e-04);
  EXPECT_DOUBLE_EQ(m["loss_scale"], 65536);
  EXPECT_DOUBLE_EQ(m["step_time_ms"], 42.7);
  EXPECT_DOUBLE_EQ(m["epoch"], 0);
}

TEST(Progress, NanAndInfAndScientific) {
  auto m = parse("step 44/80 | loss 1.847e+28 | grad_norm inf | lr 2.724e-01");
  EXPECT_DOUBLE_EQ(m["loss"], 1.847e+28);
  EXPECT_TRUE(std::isinf(m["grad_norm"]));
  m = parse("step 45 loss nan lr 1E-4");
  EXPECT_TRUE(std::isnan(m["loss"]));
  EXPECT_DOUBLE_EQ(m["lr"], 1e-4);
  m = parse("step=3 loss=-Infinity");
  EXPECT_TRUE(std::isinf(m["loss"]) && m["loss"] < 0);
}

TEST(Progress, HuggingFaceTrainerDict) {
  double step;
  auto m = parse("{'loss': 2.3456, 'grad_norm': 1.875, 'learning_rate': 4.5e-05, 'epoch': 0.12}", &step);
  EXPECT_EQ(step, -1);  // no step in the line: the series numbers it
  EXPECT_DOUBLE_EQ(m["loss"], 2.3456);
  EXPECT_DOUBLE_EQ(m["grad_norm"], 1.875);
  EXPECT_DOUBLE_EQ(m["lr"], 4.5e-05);
  EXPECT_DOUBLE_EQ(m["epoch"], 0.12);
}

TEST(Progress, DeepSpeedStepLineWithLists) {
  double step;
  auto m = parse("[Rank 0] step=10, skipped=2, lr=[0.0001, 0.0001], mom=[(0.9, 0.999), (0.9, 0.999)]", &step);
  EXPECT_EQ(step, 10);
  EXPECT_DOUBLE_EQ(m["skipped"], 2);
  EXPECT_DOUBLE_EQ(m["lr"], 0.0001);
}

TEST(Progress, MegatronColumns) {
  double step;
  auto m = parse(
      " iteration      100/  500000 | consumed samples:        51200 | elapsed time per iteration (ms): 1234.5 | "
      "learning rate: 1.000E-04 | global batch size:   512 | lm loss: 7.123456E+00 | loss scale: 65536.0 | "
      "grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |",
      &step);
  EXPECT_EQ(step, 100);
  EXPECT_DOUBLE_EQ(m["step_time_ms"], 1234.5);
  EXPECT_DOUBLE_EQ(m["lr"], 1e-4);
  EXPECT_DOUBLE_EQ(m["loss"], 7.123456);
  EXPECT_DOUBLE_EQ(m["loss_scale"], 65536);
  EXPECT_DOUBLE_EQ(m["grad_norm"], 1.234);
  EXPECT_DOUBLE_EQ(m["skipped"], 0);
  EXPECT_DOUBLE_EQ(m["nan_iterations"], 0);
}

TEST(Progress, TqdmPostfixAndUnits) {
  auto m = parse("Epoch 1: 100%|##########| 10/10 [00:01<00:00, 9.51it/s, loss=0.123, v_num=0]");
  EXPECT_DOUBLE_EQ(m["loss"], 0.123);
  EXPECT_DOUBLE_EQ(m["it_per_s"], 9.51);
  m = parse("step 5 loss 1.5 2.5 s/it");
  EXPECT_DOUBLE_EQ(m["step_time_ms"], 2500);
}

TEST(Progress, OddSpacing) {
  double step;
  auto m = parse("step:   7   loss :  0.5   lr= 3e-4", &step);
  EXPECT_EQ(step, 7);
  EXPECT_DOUBLE_EQ(m["loss"], 0.5);
  EXPECT_DOUBLE_EQ(m["lr"], 3e-4);
}

TEST(Progress, ConfigDumpsAndProseAreNotProgress) {
  parse("config: batch_size=32 hidden=128 lr=0.5 min_scale=1.0 steps=80 warmup_steps=10", nullptr, false);
  parse("starting training for 60 steps", nullptr, false);
  parse("Loss is nan at step 45, stopping training", nullptr, false);
  parse("model: MLP with 20865 parameters", nullptr, false);
}

TEST(Series, ThinsEvenlyAndKeepsExtremesAndFirstNonFinite) {
  Series s;
  for (int i = 0; i < 100000; ++i) s.add(Point{double(i), i == 70000 ? NAN : double(i % 1000), 0, uint64_t(i), 0});
  EXPECT_EQ(s.count, 100000u);
  EXPECT_LT(s.points.size(), Series::kMaxPoints);
  EXPECT_GT(s.points.size(), Series::kMaxPoints / 4);
  EXPECT_EQ(s.max, 999);
  EXPECT_TRUE(s.has_nonfinite);
  EXPECT_EQ(s.first_nonfinite.step, 70000);
  EXPECT_EQ(s.last.step, 99999);
}

}  // namespace
}  // namespace ff::metrics
