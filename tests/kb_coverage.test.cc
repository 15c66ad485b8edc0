// The recognition test of the reference catalogue (issue 22): every `fatal` or `error` row
// of ../shared/reference/messages.tsv is rendered as the software prints it (each {} filled
// with a value of the kind its context asks for: a rank, a size such as "2.00 GiB", a pid,
// a version, a hex handle, a path), every other one behind a launcher's rank prefix, NCCL's lines
// behind NCCL's own host:pid:tid [gpu] prefix, kernel lines behind dmesg's stamp; a
// fragment row (a bare CUDA or NCCL error string) is put inside the message that carries it.
// Each line goes through the real engine (the prefix peeler, then the same most-specific
// ranking as `kb check`), and the row's expected entry must win one of its lines.
//
// The expected entry of a row is data: tests/data/catalogue/expected.tsv (template, entry,
// optional slot values, optional carrier). Rows the engine does not recognise yet are in
// tests/data/catalogue/known-gaps.tsv with a reason. The test fails on a row with neither,
// on a row whose expected entry does not win, on a gap that is recognised now (remove it),
// and on a line of either file that names no row of the catalogue.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kb_check/kb_check.h"
#include "pipeline/pipeline.h"
#include "base/strings.h"
#include "record/record.h"

namespace ff::app {
namespace {

// The fraction of rows recognised by their expected entry; never lower it (issue 22 asks
// for 0.99). The README quotes the figure the test prints.
constexpr double kMinRecognised = 0.99;

struct Row {
  std::string framework;
  std::string severity;
  std::string tmpl;
};

std::vector<std::vector<std::string>> read_tsv(const std::string& path, bool header) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (header) {
      header = false;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    for (std::string_view s : split(line, '\t')) f.emplace_back(s);
    out.push_back(std::move(f));
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool ends_with_any(const std::string& s, std::initializer_list<const char*> tails) {
  for (const char* t : tails) {
    std::string_view tv(t);
    if (s.size() >= tv.size() && s.compare(s.size() - tv.size(), tv.size(), tv) == 0) return true;
  }
  return false;
}
bool starts_with_any(const std::string& s, std::initializer_list<const char*> heads) {
  for (const char* h : heads)
    if (s.rfind(h, 0) == 0) return true;
  return false;
}

// A value of the kind a placeholder holds, judged from the text before and after it.
std::string slot_value(const std::string& before_raw, const std::string& after_raw) {
  const std::string before = lower(before_raw.substr(before_raw.size() > 40 ? before_raw.size() - 40 : 0));
  const std::string after = lower(after_raw.substr(0, 40));
  if (ends_with_any(before, {"call to "})) return "connect";
  if (ends_with_any(before, {"timed out after "}) && starts_with_any(after, {" while"})) return "600000ms";
  if (ends_with_any(before, {"caught "})) return "RuntimeError";
  if (ends_with_any(before, {"due to signal "})) return "Terminated";
  if (ends_with_any(before, {"*** "})) return "STEP 4242.0";
  if (ends_with_any(before, {"srun: error: "})) return "gpu-node-07";
  if (ends_with_any(before, {": task"})) return " 3";
  if (ends_with_any(before, {"state_dict for "})) return "GPT2LMHeadModel";
  if (ends_with_any(before, {"in state_dict: "})) return "\"lm_head.weight\"";
  if (ends_with_any(before, {"size mismatch for "})) return "lm_head.weight";
  if (ends_with_any(before, {"with shape ", "current model is "})) return "torch.Size([50257, 768])";
  if (starts_with_any(after, {" gib", " mib", "gib", " gb"})) return "1.50";
  if (starts_with_any(after, {"kb,", "kb "}) || ends_with_any(before, {"total-vm:", "rss:", "pgtables:"})) return "1048576";
  if (ends_with_any(before, {"allocate "})) return "2.00 GiB";
  if (ends_with_any(before, {"capacity of ", "capacty of "})) return "79.15 GiB";
  if (starts_with_any(after, {" total capacity", " already allocated", " free", " cached", " reserved", " is free",
                              " memory in use", " is allocated", " is reserved"}) ||
      ends_with_any(before, {"this process has ", "process has ", "memory ", "pytorch, and "}))
    return "12.25 GiB";
  if (ends_with_any(before, {"pci:"})) return "0000:3b:00";
  if (ends_with_any(before, {"0x"})) return "7f3a2c000000";
  if (ends_with_any(before, {"comm ", "comm=", "handle=", "cq=", "@ "})) return "0x55d1c2a3b4e0";
  if (ends_with_any(before, {"pid ", "pid=", "pid: ", "pid(s) ", "by pid ", "process ", "killed process "})) return "12345";
  if (ends_with_any(before, {"exit code ", "exitcode: ", "exitcode  : ", "return code = ", "retcode ", "exited with exit code "}))
    return "1";
  if (ends_with_any(before, {"signal: "})) return "Killed";
  if (ends_with_any(before, {"signal "})) return "9";
  if (ends_with_any(before, {"version ", "version=", "version: ", "torch>=", "pytorch >= "})) return "2.18.5";
  if (ends_with_any(before, {"rank ", "rank=", "[rank ", "rank: ", "localrank ", "local_rank="})) return "3";
  if (ends_with_any(before, {"gpu ", "gpu", "device ", "device=", "gpu: ", "cuda:"})) return "0";
  if (ends_with_any(before, {"job ", "step ", "allocation "})) return "4242";
  if (ends_with_any(before, {" on "}) && starts_with_any(after, {" cancelled", " failed"})) return "gpu-node-07";
  if (ends_with_any(before, {" at "}) && starts_with_any(after, {" ***", " due"})) return "2026-11-30T10:20:42";
  if (ends_with_any(before, {"error in: "})) return "../torch/csrc/distributed/c10d/NCCLUtils.hpp";
  if (ends_with_any(before, {"checkpoint ", "directory ", "dir ", "at ", "to ", "file not found: ", "under load directory '"}))
    return "/data/ckpt/global_step1000";
  if (starts_with_any(after, {" seconds", "s ", "s of", " ms", "ms", " milliseconds"})) return "1800";
  if (ends_with_any(before, {"#", "iteration ", "batch ", "seqnum=", "numelin=", "numelout=", "timeout(ms)=", "opid=", "for ",
                             "after ", "task", "received ", "instead of ", "nranks ", "nroots ", "iroot ", "offset "}))
    return "7";
  if (ends_with_any(before, {"optype="})) return "ALLREDUCE";
  if (ends_with_any(before, {"calling `"})) return "cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)";
  if (ends_with_any(before, {"cuda error: "}) && starts_with_any(after, {" when calling"})) return "CUBLAS_STATUS_EXECUTION_FAILED";
  if (ends_with_any(before, {"search for `"})) return "cudaErrorIllegalAddress";
  if (ends_with_any(before, {"nvmlinit"})) return "_v2";
  if (ends_with_any(before, {"connect to ("})) return "10.0.0.1";
  if (ends_with_any(before, {"hca "})) return "mlx5_0";
  if (ends_with_any(before, {"on the "}) && starts_with_any(after, {" communicator"})) return "send";
  if (ends_with_any(before, {"'", "`", "\""}) || ends_with_any(before, {"key "})) return "model.layers.0.weight";
  // Most slots left are counts, ids, sizes in bytes or codes.
  return "7";
}

// The row's template with `\n` and `\t` turned into their characters and each {} filled,
// by `values` ('|'-separated, in order) where given, else by slot_value.
std::string render(const std::string& tmpl, const std::vector<std::string>& values) {
  std::string t;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '\\' && i + 1 < tmpl.size() && (tmpl[i + 1] == 'n' || tmpl[i + 1] == 't')) {
      t.push_back(tmpl[i + 1] == 'n' ? '\n' : '\t');
      ++i;
    } else {
      t.push_back(tmpl[i]);
    }
  }
  std::string out;
  size_t slot = 0, pos = 0;
  while (true) {
    size_t hole = t.find("{}", pos);
    if (hole == std::string::npos) {
      out.append(t, pos);
      break;
    }
    out.append(t, pos, hole - pos);
    std::string before = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
    out += slot < values.size() ? values[slot] : slot_value(before, t.substr(hole + 2));
    ++slot;
    pos = hole + 2;
  }
  return out;
}

// How the program that prints the row frames its line: the launcher's rank prefix for
// code that runs in a rank (every other row: torchrun's, its log tee's and srun's
// label in turn), NCCL's own prefix for NCCL, a kernel stamp for the kernel and driver.
std::string frame_line(const Row& row, size_t index, const std::string& line) {
  std::string l = line;
  if (row.framework == "NCCL" && l.rfind("NCCL WARN", 0) == 0) l = "gpu-node-07:4121:4188 [3] " + l;
  if (row.framework == "Linux kernel" || row.framework.rfind("NVIDIA driver", 0) == 0) return "[74785.660366] " + l;
  if (row.framework == "Slurm") return l;
  switch (index % 6) {
    case 1: return "[rank3]: " + l;
    case 3: return "[default3]:" + l;
    case 5: return "3: " + l;
    default: return l;
  }
}

struct Outcome {
  bool recognised = false;
  std::string winners;  // what won each line instead, for the message
};

Outcome recognise(const scan::Engine& engine, const std::string& text, const std::string& expected) {
  Outcome o;
  std::string clean;
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    record::clean_line(line, clean);
    record::Record rec;
    engine.prefixes().parse(clean, rec);
    LineWinner w = best_entry_for_line(engine, rec.message);
    if (w.entry_id == expected) {
      o.recognised = true;
      return o;
    }
    o.winners += (o.winners.empty() ? "" : ", ") + (w.entry_id.empty() ? std::string("(nothing)") : w.entry_id);
  }
  return o;
}

class Catalogue : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Options opt;
    opt.no_cache = true;
    auto r = load_everything(opt, true);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    loaded_ = new Loaded(std::move(*r));
  }
  static void TearDownTestSuite() {
    delete loaded_;
    loaded_ = nullptr;
  }
  static Loaded* loaded_;
};
Loaded* Catalogue::loaded_ = nullptr;

TEST_F(Catalogue, FatalAndErrorRowsAreRecognisedByTheirEntry) {
  const std::string tsv = std::string(FF_SHARED_DIR) + "/reference/messages.tsv";
  if (!std::filesystem::exists(tsv)) GTEST_SKIP() << tsv << " is absent";
  const std::string dir = std::string(FF_SOURCE_DIR) + "/tests/data/catalogue/";
  std::vector<Row> rows;
  for (const auto& f : read_tsv(tsv, true))
    if (f.size() >= 4 && (f[2] == "fatal" || f[2] == "error")) rows.push_back({f[0], f[2], f[3]});
  ASSERT_GT(rows.size(), 0u) << "no fatal or error rows in " << tsv;

  struct Expect {
    std::string entry;
    std::vector<std::string> values;
    std::string carrier;
  };
  std::map<std::string, Expect> expected;
  for (const auto& f : read_tsv(dir + "expected.tsv", false)) {
    ASSERT_GE(f.size(), 2u) << "expected.tsv: a line needs a template and an entry";
    Expect e{f[1], {}, f.size() > 3 ? f[3] : ""};
    if (f.size() > 2 && !f[2].empty())
      for (std::string_view v : split(f[2], '|')) e.values.emplace_back(v);
    EXPECT_TRUE(expected.emplace(f[0], e).second) << "expected.tsv lists a row twice: " << f[0];
    EXPECT_NE(loaded_->kb->find(f[1]), nullptr) << "expected.tsv names an entry that does not exist: " << f[1];
  }
  std::map<std::string, std::string> gaps;
  for (const auto& f : read_tsv(dir + "known-gaps.tsv", false)) {
    ASSERT_GE(f.size(), 2u) << "known-gaps.tsv: a line needs a template and a reason";
    EXPECT_FALSE(trim(f[1]).empty()) << "known-gaps.tsv: a gap needs a reason: " << f[0];
    gaps[f[0]] = f[1];
  }
  std::set<std::string> templates;
  for (const Row& r : rows) templates.insert(r.tmpl);
  for (const auto& [t, e] : expected) EXPECT_TRUE(templates.count(t)) << "expected.tsv names no catalogue row: " << t;
  for (const auto& [t, why] : gaps) EXPECT_TRUE(templates.count(t)) << "known-gaps.tsv names no catalogue row: " << t;

  size_t recognised = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    auto ex = expected.find(row.tmpl);
    const bool gap = gaps.count(row.tmpl) > 0;
    if (ex == expected.end()) {
      if (!gap) ADD_FAILURE() << "a catalogue row with no expected entry (tests/data/catalogue/expected.tsv) and no known gap: "
                              << row.framework << " | " << row.tmpl;
      continue;
    }
    std::string message = render(row.tmpl, ex->second.values);
    if (!ex->second.carrier.empty()) {
      std::string c = ex->second.carrier;
      size_t at = c.find("{}");
      message = at == std::string::npos ? c : c.substr(0, at) + message + c.substr(at + 2);
    }
    std::string text;
    for (std::string_view l : split(message, '\n')) text += frame_line(row, i, std::string(l)) + "\n";
    Outcome o = recognise(*loaded_->engine, text, ex->second.entry);
    if (o.recognised) {
      ++recognised;
      EXPECT_FALSE(gap) << "a known gap is recognised now; remove it from known-gaps.tsv: " << row.tmpl;
    } else if (!gap) {
      ADD_FAILURE() << "not recognised by " << ex->second.entry << " (won by " << o.winners << "):\n" << text;
    }
  }
  const double share = static_cast<double>(recognised) / static_cast<double>(rows.size());
  std::printf("catalogue rows recognised by their expected entry: %zu/%zu = %.3f (threshold %.2f; %zu known gaps)\n",
              recognised, rows.size(), share, kMinRecognised, gaps.size());
  EXPECT_GE(share, kMinRecognised);
}

TEST(CatalogueRender, SlotsGetValuesOfTheirKind) {
  EXPECT_EQ(render("CUDA out of memory. Tried to allocate {} (GPU {}; {} total capacity)", {}),
            "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 12.25 GiB total capacity)");
  EXPECT_EQ(render("[Rank {}] x", {}), "[Rank 3] x");
  EXPECT_EQ(render("a {} b {}", {"x"}), "a x b 7");
  EXPECT_EQ(render("one\\ntwo\\tthree", {}), "one\ntwo\tthree");
  EXPECT_EQ(render("DataLoader worker (pid {}) is killed by signal: {}. ", {}), "DataLoader worker (pid 12345) is killed by signal: Killed. ");
}

}  // namespace
}  // namespace ff::app
