#include "template/template.h"

#include <gtest/gtest.h>

namespace ff::template_ {
namespace {

TEST(Mask, VariablePartsBecomePlaceholders) {
  EXPECT_EQ(mask("train: epoch 0 step 12/60 | loss 0.9257 | lr 9.990e-04 | 42.7 ms/step"),
            "train: epoch <N> step <N>/<N> | loss <N> | lr <N> | <N> ms/step");
  EXPECT_EQ(mask("RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:34229"),
            "RuntimeError: [./gloo/transport/tcp/pair.cc:<N>] Connection closed by peer [<N>]:<N>");
  EXPECT_EQ(mask("comm 0x55d0c8a3e000 rank 3 nranks 16"), "comm <HEX> rank <N> nranks <N>");
  EXPECT_EQ(mask("File \"/usr/lib/python3/x.py\", line 3"), "File <STR>, line <N>");
  EXPECT_EQ(mask("open /data/shard-0001.bin failed"), "open <PATH> failed");
}

TEST(Fingerprint, SameFailureOtherRankTimeAndSizeIsTheSame) {
  std::string a = fingerprint(
      "pytorch.cuda.out-of-memory",
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB");
  std::string b = fingerprint(
      "pytorch.cuda.out-of-memory",
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.15 GiB");
  std::string c = fingerprint("pytorch.cuda.illegal-memory-access",
                              "RuntimeError: CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(a.size(), 16u);
  EXPECT_NE(a, c);
  EXPECT_EQ(a, b);  // rank, size and unit do not matter
  EXPECT_EQ(fingerprint("x", "loss is nan at step 45"), fingerprint("x", "loss is nan at step 1200"));
}

TEST(Miner, SameLineOnManyRanksIsOneTemplate) {
  TemplateMiner m;
  for (int r = 0; r < 1024; ++r) {
    m.add("[Rank " + std::to_string(r) + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" +
              std::to_string(4821 + r % 3) + ", OpType=ALLREDUCE)",
          {0, uint64_t(r + 1)});
  }
  ASSERT_EQ(m.templates().size(), 1u);
  EXPECT_EQ(m.templates()[0].count, 1024u);
  EXPECT_EQ(m.templates()[0].first.line, 1u);
}

TEST(Miner, DrainMergesLinesThatDifferInAWord) {
  TemplateMiner m;
  m.add("Loading shard for model alpha done", {0, 1});
  m.add("Loading shard for model beta done", {0, 2});
  m.add("Completely different line here now", {0, 3});
  ASSERT_EQ(m.templates().size(), 2u);
  EXPECT_EQ(m.templates()[0].text, "Loading shard for model <*> done");
  EXPECT_EQ(m.templates()[0].count, 2u);
}

TEST(Miner, BoundedMemory) {
  TemplateMiner::Options o;
  o.max_templates = 10;
  TemplateMiner m(o);
  for (int i = 0; i < 100; ++i)
    m.add("unique" + std::string(1, char('a' + i % 26)) + std::string(1, char('a' + i / 26)) + " x", {0, uint64_t(i)});
  EXPECT_LE(m.templates().size(), 10u);
  EXPECT_GT(m.overflow(), 0u);
}

}  // namespace
}  // namespace ff::template_
