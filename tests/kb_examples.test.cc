// Every KB example must trigger its own entry and win against every other entry (the
// collision check); negatives must not match; prefix samples must parse.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "kb_check/kb_check.h"
#include "pipeline/pipeline.h"
#include "base/strings.h"

namespace ff::app {
namespace {

TEST(KbExamples, EveryExampleTriggersItsEntryAndNoCollisions) {
  Options opt;
  opt.no_cache = true;
  auto loaded = load_everything(opt, true);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  for (const auto& e : loaded->kb_errors) ADD_FAILURE() << e.to_string();
  KbCheckReport rep = check_kb(*loaded->kb, *loaded->engine);
  EXPECT_GE(rep.examples, loaded->kb->entries.size());
  for (const auto& p : rep.problems) ADD_FAILURE() << p;
}

TEST(KbExamples, AllPatternsCompileInVectorscan) {
  Options opt;
  opt.no_cache = true;
  auto loaded = load_everything(opt, true);
  ASSERT_TRUE(loaded.ok());
#ifdef FF_HAVE_VECTORSCAN
  for (const auto& w : loaded->engine->warnings()) ADD_FAILURE() << w.to_string();
#endif
}

// Runs a shell command line and returns what it printed (stdout and stderr).
std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// A verify command is runnable as written: `bash -n` parses every shell and rerun command,
// and Python compiles every in-process one (kb/README.md, "The page").
TEST(KbExamples, EveryVerifyCommandParses) {
  Options opt;
  opt.no_cache = true;
  auto loaded = load_everything(opt, true);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ff-verify-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::map<std::string, std::string> file_to_id;
  size_t shell = 0, python = 0;
  for (size_t i = 0; i < loaded->kb->entries.size(); ++i) {
    const kb::Entry& e = loaded->kb->entries[i];
    if (e.verify_where.empty()) continue;
    bool py = e.verify_where == "in-process";
    std::string name = std::to_string(i) + (py ? ".py" : ".sh");
    std::ofstream(dir / name) << e.verify << "\n";
    file_to_id[name] = e.id;
    (py ? python : shell)++;
  }
  std::string bash_out = run("cd '" + dir.string() + "' && for f in *.sh; do [ -e \"$f\" ] || continue; bash -n \"$f\" || echo \"FAILED $f\"; done");
  std::string py_out = run("cd '" + dir.string() + "' && python3 -c 'import glob,sys\nfor f in sorted(glob.glob(\"*.py\")):\n  try: compile(open(f).read(), f, \"exec\")\n  except SyntaxError as e: print(\"FAILED\", f, e)'");
  for (const std::string* out : {&bash_out, &py_out}) {
    for (std::string_view line : split(*out, '\n')) {
      if (line.substr(0, 7) != "FAILED ") continue;
      std::string file(line.substr(7, line.find(' ', 7) == std::string_view::npos ? line.npos : line.find(' ', 7) - 7));
      ADD_FAILURE() << file_to_id[file] << ": verify.command does not parse: " << *out;
    }
  }
  fs::remove_all(dir);
  // Every entry but the healthy ones has a structured verify (kb check's verify.command rule).
  EXPECT_GT(shell + python, loaded->kb->entries.size() / 2) << "too few structured verify commands were checked";
  EXPECT_GT(python, 0u);
}

// kb check's rule names.exist (kb/README.md, "Names that exist"): a flag, a variable or a
// DeepSpeed config key that no table of kb/names holds fails kb check, with the entry's file
// and line and the nearest real names; a script's own flags and variables of prefixes that
// are not checked (Slurm's) pass.
TEST(KbExamples, KbCheckFailsOnANameAbsentFromTheTables) {
  Options opt;
  opt.no_cache = true;
  auto loaded = load_everything(opt, true);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  kb::KnowledgeBase planted = *loaded->kb;
  kb::Entry* e = nullptr;
  for (auto& x : planted.entries)
    if (x.id == "megatron.numerics.nan-in-loss") e = &x;
  ASSERT_NE(e, nullptr);
  // The real KB passes the rule, and it looked at many names.
  KbCheckReport clean = check_kb(planted, *loaded->engine);
  const RuleCount* rule = nullptr;
  for (const auto& r : clean.rules)
    if (r.name == "names.exist") rule = &r;
  ASSERT_NE(rule, nullptr);
  EXPECT_GT(rule->checked, 1000u);
  EXPECT_EQ(rule->failed, 0u);
  for (const auto& p : clean.problems) EXPECT_EQ(p.find("names.exist"), std::string::npos) << p;

  e->code_examples["megatron"] += "--tensor-model-paralel-size 2 --check-for-nan-in-loss-and-grad\n";
  e->fix.push_back("Export `NCCL_SOCKET_IFNAMES=eth0` and run `python train.py --my-own-flag` under `srun --my-srun-flag`; "
                   "`SLURM_JOB_ID` says which job.");
  e->code_examples["deepspeed"] = R"({"zero_optimization": {"stage": 3, "overlap_com": true}})";
  e->fix.push_back("Set `zero_optimization.stage3_prefetch_bucket` lower.");
  KbCheckReport rep = check_kb(planted, *loaded->engine);
  std::string all;
  for (const auto& p : rep.problems) all += p + "\n";
  auto has = [&](const std::string& s) { return all.find(s) != std::string::npos; };
  EXPECT_TRUE(has("megatron/nan-in-loss.yaml:")) << all;
  EXPECT_TRUE(has("flag '--tensor-model-paralel-size' is not in the table of megatron")) << all;
  EXPECT_TRUE(has("did you mean --tensor-model-parallel-size")) << all;
  EXPECT_TRUE(has("flag '--check-for-nan-in-loss-and-grad'")) << all;
  EXPECT_TRUE(has("variable 'NCCL_SOCKET_IFNAMES'")) << all;
  EXPECT_TRUE(has("did you mean NCCL_SOCKET_IFNAME")) << all;
  EXPECT_TRUE(has("config 'overlap_com'")) << all;
  EXPECT_TRUE(has("config 'stage3_prefetch_bucket'")) << all;
  EXPECT_FALSE(has("--my-own-flag")) << all;    // train.py's own
  EXPECT_FALSE(has("--my-srun-flag")) << all;   // srun's: another program
  EXPECT_FALSE(has("SLURM_JOB_ID")) << all;     // Slurm's prefix is not checked
  for (const auto& r : rep.rules) {
    if (r.name == "names.exist") {
      EXPECT_EQ(r.failed, 5u) << all;
    }
  }
}

// A verify must read its state where the state exists (kb/formats/lint.yaml
// verify_not_yet): Lightning's batch counts read in on_fit_start are not counted yet.
TEST(KbExamples, KbCheckFailsOnAVerifyReadBeforeItsStateExists) {
  Options opt;
  opt.no_cache = true;
  auto loaded = load_everything(opt, true);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  kb::KnowledgeBase planted = *loaded->kb;
  kb::Entry* e = nullptr;
  for (auto& x : planted.entries)
    if (x.id == "lightning.data.limit-batches-too-small") e = &x;
  ASSERT_NE(e, nullptr);
  e->verify_expect = "in `on_fit_start` of a callback; every count is at least 1";
  KbCheckReport rep = check_kb(planted, *loaded->engine);
  std::string all;
  for (const auto& p : rep.problems) all += p + "\n";
  EXPECT_NE(all.find("verify reads num_val_batches in on_fit_start, where it does not exist yet"), std::string::npos)
      << all;
}

}  // namespace
}  // namespace ff::app
