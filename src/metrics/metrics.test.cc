#include "metrics/metrics.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

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

// Issue 30, mechanism 4: the examples of kb/formats/metrics.yaml (lines as the Trainer,
// apex, fairseq, Megatron and Lightning print them, from their format strings) read as
// they say, by the tokeniser and again through a kept shape.
TEST(Progress, TheFormatsExamplesReadAsTheySay) {
  const YAML::Node doc = YAML::LoadFile(std::string(FF_SOURCE_DIR) + "/kb/formats/metrics.yaml");
  ASSERT_TRUE(doc["examples"].IsSequence());
  ASSERT_GE(doc["examples"].size(), 10u);
  for (const YAML::Node& ex : doc["examples"]) {
    const std::string line = ex["line"].as<std::string>();
    ASSERT_TRUE(ex["source"]) << line;
    double step = -1;
    std::map<std::string, double> got = parse(line, &step);
    EXPECT_EQ(step, ex["step"] ? ex["step"].as<double>() : -1.0) << line;
    for (const auto& kv : ex["reads"]) {
      const std::string name = kv.first.as<std::string>(), want = kv.second.as<std::string>();
      ASSERT_TRUE(got.count(name)) << line << ": no " << name;
      if (want == "nan")
        EXPECT_TRUE(std::isnan(got[name])) << line << ": " << name;
      else
        EXPECT_DOUBLE_EQ(got[name], std::stod(want)) << line << ": " << name;
    }
    // A kept shape reads the line again as the tokeniser did (a line whose words were
    // decided by looking into a later number keeps no shape: the timestamped one).
    ProgressParser pp(aliases());
    ProgressLine first, again;
    ASSERT_TRUE(pp.parse(line, first)) << line;
    if (pp.known(line, again)) {
      EXPECT_EQ(again.samples.size(), first.samples.size()) << line;
      EXPECT_EQ(again.event, first.event) << line;
      EXPECT_EQ(again.has_step, first.has_step) << line;
    }
  }
}

// An event message's key alone makes a progress line (an overflow's new loss scale); the
// same key's words in a config dump do not make "loss_scale=0" one.
TEST(Progress, AnEventMessageStandsWithoutAStepOrALoss) {
  ProgressLine p;
  ASSERT_TRUE(parse_progress_line("Gradient overflow.  Skipping step, reducing loss scale to 512.0", aliases(), p));
  EXPECT_TRUE(p.event);
  EXPECT_FALSE(p.has_step);
  EXPECT_FALSE(parse_progress_line("fp16: loss_scale=0 initial_scale_power=16", aliases(), p));
  EXPECT_EQ(aliases().by_key("reducing loss scale to"), aliases().id("loss_scale"));
}

// The number reader (eight bytes at a time, or digit by digit, or from_chars) gives
// exactly what std::from_chars gives, whatever the digits around the point and however
// many bytes follow the number in the text.
TEST(Progress, NumbersReadExactlyAsFromChars) {
  std::mt19937_64 rng(7);
  const char* tails[] = {"", " ", " | lr 1", " tokens/s and more text after it"};
  for (int i = 0; i < 20000; ++i) {
    std::string num;
    if (rng() % 4 == 0) num += '-';
    const int ik = static_cast<int>(rng() % 12), fk = static_cast<int>(rng() % 12);
    for (int k = 0; k < ik; ++k) num += static_cast<char>('0' + rng() % 10);
    if (fk > 0 || ik == 0) {
      num += '.';
      for (int k = 0; k < std::max(fk, ik == 0 ? 1 : 0); ++k) num += static_cast<char>('0' + rng() % 10);
    }
    if (rng() % 3 == 0) num += "e-0" + std::to_string(rng() % 10);
    const std::string line = "step 3 | loss " + num + tails[rng() % 4];
    ProgressLine p;
    ASSERT_TRUE(parse_progress_line(line, aliases(), p)) << line;
    ASSERT_FALSE(p.samples.empty()) << line;
    ASSERT_EQ(aliases().name(p.samples[0].metric), "loss") << line;
    const char* b = num.data() + (num[0] == '-' ? 1 : 0);
    double want = 0;
    std::from_chars(b, num.data() + num.size(), want);
    if (num[0] == '-') want = -want;
    EXPECT_EQ(std::memcmp(&p.samples[0].value, &want, sizeof want), 0) << line << " read " << p.samples[0].value;
  }
}

TEST(Progress, PlainPipeSeparated) {
  double step;
  auto m = parse(
      "train: epoch 0 step 12/60 | loss 0.9257 | grad_norm 0.703 | lr 9.990e-04 | loss_scale 65536 | 42.7 ms/step",
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

TEST(Progress, KeysAfterALoggerName) {
  // Python logging's "%(name)s: %(message)s" puts the logger's name before the first key.
  double step;
  auto m = parse("train: step 7 | loss 0.5 | lr 3.000e-04", &step);
  EXPECT_EQ(step, 7);
  EXPECT_DOUBLE_EQ(m["loss"], 0.5);
  EXPECT_DOUBLE_EQ(m["lr"], 3e-4);
  m = parse("Validation: loss 1.25 step 40", &step);
  EXPECT_EQ(step, 40);
  EXPECT_DOUBLE_EQ(m["loss"], 1.25);
}

// ProgressParser (kept shapes, and a slot's last value reused when its text comes again)
// against the tokeniser, its reference: streams of progress lines of several layouts whose
// numbers vary in length, sign, exponent and nan/inf, repeat now and then, and whose text
// is sometimes changed by a byte.
TEST(ProgressParser, ReadsLikeTheTokeniser) {
  std::mt19937_64 rng(21);
  auto number = [&]() -> std::string {
    switch (rng() % 10) {
      case 0: return "nan";
      case 1: return rng() % 2 ? "inf" : "-Infinity";
      case 2: return std::to_string(rng() % 100000);
      case 3: return "1.000e-0" + std::to_string(rng() % 9);
      case 4: return "-" + std::to_string(rng() % 10) + "." + std::to_string(rng() % 1000);
      case 5: return std::to_string(rng() % 1000000000000ull) + "." + std::to_string(rng() % 100);
      default: return std::to_string(rng() % 10) + "." + std::to_string(1000 + rng() % 9000);
    }
  };
  const std::vector<std::string> layouts = {
      "step {} | loss {} | lr {} | grad_norm {} | loss_scale {} | {} ms/step | {} tokens/s",
      "train: epoch {} step {}/60 | loss {}",
      "{'loss': {}, 'grad_norm': {}, 'learning_rate': {}, 'epoch': {}}",
      "[Rank 0] step={}, skipped={}, lr=[{}, {}], mom=[(0.9, 0.999)]",
      " iteration      {}/  500000 | consumed samples: {} | lm loss: {} | loss scale: {} | grad norm: {} |",
      "Epoch 1: {}%| {}/{} [00:01<00:00, {}it/s, loss={}, v_num=0]",
      "iter 7 loss {} x",
  };
  ProgressParser pp(aliases());
  std::vector<std::string> last(8);
  int known_lines = 0;
  for (int i = 0; i < 30000; ++i) {
    const std::string& layout = layouts[(i / 50) % layouts.size()];
    std::string line;
    size_t slot = 0;
    for (size_t k = 0; k < layout.size(); ++k) {
      if (layout.compare(k, 2, "{}") == 0) {
        // Half the time the slot's text of the line before: the value memo's case.
        if (rng() % 2 == 0 || last[slot].empty()) last[slot] = number();
        line += last[slot];
        slot = (slot + 1) % last.size();
        ++k;
      } else {
        line += layout[k];
      }
    }
    if (rng() % 20 == 0 && !line.empty()) line[rng() % line.size()] = " 0x.:|-e"[rng() % 8];
    ProgressLine want, got;
    const bool w = parse_progress_line(line, aliases(), want);
    const bool known = pp.known(line, got);
    const bool g = known || pp.learn(line, got);
    known_lines += known;
    ASSERT_EQ(g, w) << line;
    if (!w) continue;
    ASSERT_EQ(got.has_step, want.has_step) << line;
    if (want.has_step) { ASSERT_EQ(std::memcmp(&got.step, &want.step, sizeof(double)), 0) << line; }
    ASSERT_EQ(got.samples.size(), want.samples.size()) << line;
    for (size_t k = 0; k < want.samples.size(); ++k) {
      ASSERT_EQ(got.samples[k].metric, want.samples[k].metric) << line;
      const bool both_nan = std::isnan(got.samples[k].value) && std::isnan(want.samples[k].value);
      ASSERT_TRUE(both_nan || std::memcmp(&got.samples[k].value, &want.samples[k].value, sizeof(double)) == 0)
          << line << " sample " << k << ": " << got.samples[k].value << " vs " << want.samples[k].value;
    }
  }
  EXPECT_GT(known_lines, 10000);  // many lines went through a kept shape
}

TEST(ProgressParser, KnownShapesTellTheirText) {
  kb::LoadResult r = kb::load(kb::embedded_files());
  Aliases a = Aliases::from_kb(r.kb.metric_specs);
  ProgressParser pp(a);
  ProgressLine p;
  EXPECT_FALSE(pp.known("step 5 | loss 0.5", p));
  ASSERT_TRUE(pp.learn("step 5 | loss 0.5", p));
  ASSERT_TRUE(pp.known("step 6 | loss 0.25", p));
  EXPECT_NE(p.shape, 0u);
  EXPECT_EQ(pp.shape_text(p.shape), "step  | loss ");
  const uint32_t first = p.shape;
  ASSERT_TRUE(pp.learn("step 7 | loss 1.5 | Traceback: x", p));
  ASSERT_TRUE(pp.known("step 8 | loss 1.25 | Traceback: x", p));
  EXPECT_NE(p.shape, first);
  EXPECT_EQ(pp.shape_text(p.shape), "step  | loss  | Traceback: x");
  EXPECT_EQ(pp.shape_text(12345), "");
  // A word that starts like "inf" or "nan" before a number ("iter 7") does not keep the
  // shape from being kept: the tokeniser looked only at "it" to tell it is no number.
  ASSERT_TRUE(pp.learn("iter 7 loss 1.5 x", p));
  EXPECT_TRUE(pp.known("iter 8 loss 1.25 x", p));
  ASSERT_TRUE(pp.learn("step 3 | loss nan | lr 0.1", p));
  EXPECT_TRUE(pp.known("step 4 | loss nan | lr 0.2", p));
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

bool same_point(const Point& a, const Point& b) {
  return std::memcmp(&a.step, &b.step, sizeof(double)) == 0 && std::memcmp(&a.value, &b.value, sizeof(double)) == 0 &&
         a.source == b.source && a.line == b.line && a.time_us == b.time_us;
}

// A difference between two series sets, or "".
std::string set_diff(const SeriesSet& a, const SeriesSet& b) {
  if (a.all().size() != b.all().size()) return "series count";
  for (auto ia = a.all().begin(), ib = b.all().begin(); ia != a.all().end(); ++ia, ++ib) {
    if (ia->first != ib->first) return "keys";
    const Series &x = ia->second, &y = ib->second;
    std::string k = "metric " + std::to_string(ia->first.first) + " rank " + std::to_string(ia->first.second) + ": ";
    if (x.count != y.count) return k + "count";
    if (x.has_finite != y.has_finite || x.has_nonfinite != y.has_nonfinite) return k + "flags";
    if (x.has_finite && (std::memcmp(&x.min, &y.min, 8) != 0 || std::memcmp(&x.max, &y.max, 8) != 0))
      return k + "min/max";
    if (!same_point(x.first, y.first) || !same_point(x.last, y.last)) return k + "first/last";
    if (x.has_finite && (!same_point(x.min_point, y.min_point) || !same_point(x.max_point, y.max_point)))
      return k + "min/max point";
    if (x.has_nonfinite && !same_point(x.first_nonfinite, y.first_nonfinite)) return k + "nonfinite";
    if (x.min_text != y.min_text || x.max_text != y.max_text || x.nonfinite_text != y.nonfinite_text)
      return k + "texts";
    if (x.stride != y.stride || std::memcmp(&x.anchor, &y.anchor, 8) != 0) return k + "thinning state";
    if (x.points.size() != y.points.size())
      return k + "points " + std::to_string(x.points.size()) + " vs " + std::to_string(y.points.size());
    for (size_t i = 0; i < x.points.size(); ++i)
      if (!same_point(x.points[i], y.points[i])) return k + "point " + std::to_string(i);
  }
  if (a.last_progress().size() != b.last_progress().size()) return "last_progress count";
  for (auto ia = a.last_progress().begin(), ib = b.last_progress().begin(); ia != a.last_progress().end(); ++ia, ++ib)
    if (ia->first != ib->first || !same_point(ia->second, ib->second)) return "last_progress";
  return "";
}

TEST(SeriesBatch, AppendingBatchesEqualsAddingLineByLine) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 40; ++trial) {
    SeriesSet one, batched;
    SeriesBatch batch;
    int nranks = trial % 5 == 1 ? 1 : 1 + static_cast<int>(rng() % 5);
    int nmetrics = trial % 5 == 1 ? 1 : 4;
    size_t lines = 200 + rng() % (trial % 3 == 2 ? 40000 : 6000);       // some long enough to thin a lot
    double step_frac = trial % 4 == 0 ? 0.0 : 0.5 + 0.5 * (rng() % 2);  // some runs never print a step
    uint64_t line_no = 0;
    std::vector<std::string> texts;
    size_t offered = 0, kept = 0;
    for (size_t i = 0; i < lines; ++i) {
      ProgressLine p;
      int rank = static_cast<int>(rng() % nranks) - 1;
      p.has_step = (rng() % 1000) < step_frac * 1000;
      p.step = trial % 3 == 0 ? double(i) / 3 : double(i);  // non-integer steps too
      int ns = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < ns; ++k) {
        double v = (rng() % 7 == 0) ? NAN : (rng() % 11 == 0 ? -0.0 : double(rng() % 50) / 7);
        if (rng() % 13 == 0) v = INFINITY;
        p.samples.push_back({static_cast<MetricId>(rng() % nmetrics), v});
      }
      std::string text = "line " + std::to_string(i);
      ++line_no;
      one.add(rank, p, 0, line_no, int64_t(i), text);
      texts.push_back(text);
      // Half the trials drop samples off the grids published by the appends so far, as
      // the scan's threads do: the result must not change.
      const StepGrids* grids = trial % 2 == 0 ? batched.grids(nmetrics) : nullptr;
      batch.add(rank, p, 0, line_no, int64_t(i), static_cast<uint32_t>(texts.size() - 1), grids);
      offered += p.samples.size();
      if (rng() % 97 == 0 || i + 1 == lines) {
        kept += batch.candidates();
        batched.append(batch, [&](uint32_t ref) { return std::string_view(texts[ref]); });
        texts.clear();
      }
    }
    std::string d = set_diff(one, batched);
    EXPECT_EQ(d, "") << "trial " << trial;
    if (trial % 2 == 1) { EXPECT_EQ(kept, offered); }
    // Long runs with a step on most lines thin a lot: most samples never reach append.
    if (trial % 2 == 0 && lines > 20000 && step_frac == 1.0 && trial % 3 != 0) {
      EXPECT_LT(kept * 4, offered) << trial;
    }
  }
}

// Issue 14: past SeriesSet::kMaxRanks distinct ranks, the others share one summary
// (kOtherRanks) and are counted; batches merge several of them rank by rank, which must
// give what adding the lines one by one gives (ties broken by the earlier line, no points).
TEST(SeriesBatch, RanksPastTheCapAreSummarisedAlikeInBothPaths) {
  std::mt19937 rng(7);
  SeriesSet one, batched;
  SeriesBatch batch;
  std::vector<std::string> texts;
  const int nranks = static_cast<int>(SeriesSet::kMaxRanks) + 3000;
  uint64_t line_no = 0;
  for (int i = 0; i < 60000; ++i) {
    ProgressLine p;
    const int rank = i < nranks ? i : static_cast<int>(rng() % nranks);
    p.has_step = true;
    p.step = double(i / nranks + 1);
    double v = double(rng() % 5);
    if (rng() % 50 == 0) v = NAN;
    p.samples.push_back({0, v});
    std::string text = "line " + std::to_string(i);
    ++line_no;
    one.add(rank, p, 0, line_no, int64_t(i), text);
    texts.push_back(text);
    batch.add(rank, p, 0, line_no, int64_t(i), static_cast<uint32_t>(texts.size() - 1), nullptr);
    if (rng() % 500 == 0 || i + 1 == 60000) {
      batched.append(batch, [&](uint32_t ref) { return std::string_view(texts[ref]); });
      texts.clear();
    }
  }
  EXPECT_EQ(set_diff(one, batched), "");
  EXPECT_EQ(one.other_ranks(), 3000u);
  EXPECT_EQ(batched.other_ranks(), 3000u);
  // kMaxRanks own series, one summary, and no more.
  EXPECT_EQ(one.last_progress().size(), SeriesSet::kMaxRanks + 1);
  auto it = one.all().find({0, SeriesSet::kOtherRanks});
  ASSERT_NE(it, one.all().end());
  EXPECT_TRUE(it->second.points.empty());
}

TEST(Series, PointsLieOnAStepGridAndStayBounded) {
  // Steps 5, 8, 11, ... : the points are those at anchor + k * stride.
  Series s;
  for (int i = 0; i < 20000; ++i) s.add(Point{5.0 + 3 * i, double(i), 0, uint64_t(i), 0});
  ASSERT_GT(s.stride, 1u);
  EXPECT_LT(s.points.size(), Series::kMaxPoints);
  EXPECT_GE(s.points.size(), Series::kMaxPoints / 2 - 1);
  EXPECT_EQ(s.points.front().step, 5.0);
  for (const Point& p : s.points) EXPECT_EQ(std::fmod(p.step - 5.0, 3.0 * double(s.stride)), 0.0) << p.step;
  // Two ranks logging the same steps keep the same steps.
  Series a, b;
  for (int i = 0; i < 5000; ++i) {
    a.add(Point{double(i), 1, 0, 0, 0});
    if (i % 2 == 0) b.add(Point{double(i), 1, 0, 0, 0});
  }
  for (const Point& p : a.points) {
    if (p.step <= b.points.back().step && std::fmod(p.step, double(b.stride)) == 0) {
      EXPECT_TRUE(std::any_of(b.points.begin(), b.points.end(), [&](const Point& q) { return q.step == p.step; }))
          << p.step;
    }
  }
  // A step that never moves, and steps that are not whole: still bounded.
  Series same, frac;
  for (int i = 0; i < 100000; ++i) {
    same.add(Point{7, double(i), 0, 0, 0});
    frac.add(Point{i / 3.0, double(i), 0, 0, 0});
  }
  EXPECT_LT(same.points.size(), Series::kMaxPoints);
  EXPECT_GT(same.points.size(), 0u);
  EXPECT_LT(frac.points.size(), Series::kMaxPoints);
  EXPECT_GT(frac.points.size(), Series::kMaxPoints / 4);
}

TEST(StepGrids, PublishedGridsReadBack) {
  StepGrids g(4);
  int64_t anchor = 0;
  uint64_t stride = 0;
  EXPECT_FALSE(g.get(1, 3, anchor, stride));
  g.publish(1, 3, -12, 64);
  ASSERT_TRUE(g.get(1, 3, anchor, stride));
  EXPECT_EQ(anchor, -12);
  EXPECT_EQ(stride, 64u);
  g.publish(1, -1, 1e15, uint64_t{1} << 40);
  ASSERT_TRUE(g.get(1, -1, anchor, stride));
  EXPECT_EQ(anchor, int64_t(1e15));
  EXPECT_EQ(stride, uint64_t{1} << 40);
  // Not kept: an anchor that is not whole, a rank or metric out of the table.
  g.publish(2, 0, 0.5, 2);
  EXPECT_FALSE(g.get(2, 0, anchor, stride));
  g.publish(0, StepGrids::kRanks, 1, 2);
  EXPECT_FALSE(g.get(0, StepGrids::kRanks, anchor, stride));
  g.publish(9, 0, 1, 2);
  EXPECT_FALSE(g.get(9, 0, anchor, stride));
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
