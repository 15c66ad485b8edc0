// The redaction rules of kb/formats/secrets.yaml: every kind on a real line, the examples
// the data file carries, consistent pseudonyms, and ordinary log lines left alone.
#include "redact/redact.h"

#include <gtest/gtest.h>

#include "pipeline/redaction.h"

namespace ff::redact {
namespace {

Redactor make() {
  auto rules = app::redaction_rules();
  EXPECT_TRUE(rules.ok()) << rules.error().to_string();
  auto r = Redactor::create(*rules);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return std::move(*r);
}

// The data file's examples: the part between « and » is replaced (the rest of the line may
// hold more that is, e.g. the host after a URL's password).
TEST(Redact, EveryExampleOfTheDataFileIsRedacted) {
  auto rules = app::redaction_rules();
  ASSERT_TRUE(rules.ok()) << rules.error().to_string();
  size_t checked = 0;
  for (const Rule& rule : rules->rules) {
    ASSERT_FALSE(rule.examples.empty()) << rule.kind << " has no example";
    for (const std::string& ex : rule.examples) {
      const std::string open = "\xC2\xAB", close = "\xC2\xBB";
      size_t a = ex.find(open), b = ex.find(close);
      ASSERT_TRUE(a != std::string::npos && b != std::string::npos && a < b) << ex;
      std::string before = ex.substr(0, a), secret = ex.substr(a + 2, b - a - 2), after = ex.substr(b + 2);
      Redactor r = make();
      std::string out = r.apply(before + secret + after);
      EXPECT_EQ(out.find(secret), std::string::npos) << rule.kind << ": " << out;
      bool counted = false;
      for (const auto& k : r.summary()) counted |= k.kind == rule.kind;
      EXPECT_TRUE(counted) << rule.kind << " not counted for " << ex;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20u);
}

TEST(Redact, TokensBecomePlaceholdersOfTheirKind) {
  Redactor r = make();
  EXPECT_EQ(r.apply("huggingface_hub.errors.HfHubHTTPError: 401 Client Error (token hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567)"),
            "huggingface_hub.errors.HfHubHTTPError: 401 Client Error (token [REDACTED:hf-token])");
  EXPECT_EQ(r.apply("wandb: WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567"),
            "wandb: WANDB_API_KEY=[REDACTED:wandb-key]");
  EXPECT_EQ(r.apply("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"), "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key-id]");
  EXPECT_EQ(r.apply("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            "aws_secret_access_key=[REDACTED:aws-secret-access-key]");
  EXPECT_EQ(r.apply("git clone https://x:ghp_1234567890abcdefghijklmnopqrstuvwxyz@github.com/org/repo"),
            "git clone https://user-1:[REDACTED:url-password]@github.com/org/repo");
  EXPECT_EQ(r.apply("token ghs_1234567890abcdefghijklmnopqrstuvwxyz expired"), "token [REDACTED:github-token] expired");
  EXPECT_EQ(r.apply("Incorrect API key provided: sk-abcdefghijklmnopqrstuvwx1234"),
            "Incorrect API key provided: [REDACTED:openai-key]");
  EXPECT_EQ(r.apply("slack: posting with xoxp-1234567890-abcdefghij failed"), "slack: posting with [REDACTED:slack-token] failed");
  EXPECT_EQ(r.apply("Authorization: Bearer eyJhbGciOi.J9eyJz.dWIiOjF9"), "Authorization: Bearer [REDACTED:bearer-token]");
  EXPECT_EQ(r.apply("requests: header authorization=bearer abc123def456ghi"), "requests: header authorization=bearer [REDACTED:bearer-token]");
  EXPECT_EQ(r.apply("db: password=hunter2!x user=ml"), "db: password=[REDACTED:secret] user=ml");
  EXPECT_EQ(r.apply("Namespace(token='abcd1234efgh', lr=0.1)"), "Namespace(token='[REDACTED:secret]', lr=0.1)");
  // Applying twice changes nothing, and counts nothing more.
  uint64_t total = r.total();
  EXPECT_EQ(r.apply("db: password=[REDACTED:secret] user=ml"), "db: password=[REDACTED:secret] user=ml");
  EXPECT_EQ(r.total(), total);
}

TEST(Redact, IdentitiesBecomeConsistentPseudonyms) {
  Redactor r = make();
  r.add_host("smc-gpu-03");
  r.add_host("node5");
  std::string a = r.apply("smc-gpu-03:29881:30401 [0] NCCL INFO NET/Socket : Using [0]ib0:10.128.0.7<0>");
  std::string b = r.apply("[E] node5:240:240 [6] NCCL WARN connect to 10.128.0.7 from smc-gpu-03 failed");
  std::string h1 = r.pseudonym_of("host", "smc-gpu-03"), h2 = r.pseudonym_of("host", "node5");
  std::string ip = r.pseudonym_of("ipv4", "10.128.0.7");
  ASSERT_FALSE(h1.empty());
  ASSERT_FALSE(ip.empty());
  EXPECT_NE(h1, h2);
  EXPECT_EQ(a, h1 + ":29881:30401 [0] NCCL INFO NET/Socket : Using [0]ib0:" + ip + "<0>");
  EXPECT_EQ(b, "[E] " + h2 + ":240:240 [6] NCCL WARN connect to " + ip + " from " + h1 + " failed");
  EXPECT_EQ(h1, "node-01");
  EXPECT_EQ(ip, "192.0.2.1");
  // FQDNs, e-mail addresses, IPv6, home folders.
  EXPECT_EQ(r.apply("(gpu-node-17.cluster.example.com, 29500)"), "(node-03, 29500)");
  EXPECT_EQ(r.apply("GPU-NODE-17.cluster.example.com"), "node-03");
  EXPECT_EQ(r.apply("submitted by alice.smith@example.com"), "submitted by user-1@example.invalid");
  EXPECT_EQ(r.apply("Using eth0:fe80::42:acff:fe11:2%eth0<0>"), "Using eth0:2001:db8::1<0>");
  EXPECT_EQ(r.apply("File \"/home/alice/proj/train.py\", line 3"), "File \"/home/user-1/proj/train.py\", line 3");
  EXPECT_EQ(r.apply("cd /Users/bob && ls /home/alice"), "cd /Users/user-2 && ls /home/user-1");
  EXPECT_EQ(r.apply("worker ip-172-31-5-17.ec2.internal up"), "worker node-04 up");
  // Generic accounts, /root, loopback and public sites stay.
  for (const char* same : {"File \"/home/ubuntu/train.py\"", "/root/.cache/huggingface", "MASTER_ADDR=127.0.0.1",
                           "https://download.pytorch.org/whl/cu121", "see https://github.com/pytorch/pytorch/issues/1",
                           "master=localhost:58285", "[::1]:29500"}) {
    EXPECT_EQ(r.apply(same), same);
  }
  // A known host inside a longer word is that word, not the host.
  EXPECT_EQ(r.apply("node5x and xnode5 and node5-b"), "node5x and xnode5 and node5-b");
  auto summary = r.summary();
  ASSERT_FALSE(summary.empty());
  bool hosts = false;
  for (const auto& k : summary)
    if (k.kind == "host") {
      hosts = true;
      EXPECT_EQ(k.distinct, 4u);
    }
  EXPECT_TRUE(hosts);
}

// Lines every training log prints: nothing in them is a secret or an identity.
TEST(Redact, OrdinaryLogLinesAreLeftAlone) {
  Redactor r = make();
  r.add_host("gpu17");
  const char* lines[] = {
      "torch 2.1.0+cu121, transformers 4.36.2, deepspeed 0.12.6, NCCL version 2.18.1+cuda12.1",
      "nvidia-cublas-cu12==12.1.3 driver 535.104.05",
      "{'loss': 1.2345, 'grad_norm': 0.87, 'learning_rate': 4.9e-05, 'epoch': 0.12}",
      "step 1200/5000 | loss 2.3456 | lr 3.0e-4 | 43.3 ms/step | 9.5it/s",
      "RuntimeError: CUDA error: an illegal memory access was encountered at 0x7f8a3c000000",
      "[rank3]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, Timeout(ms)=600000) ran for 600042 milliseconds",
      "1234:5678 [3] NCCL INFO Channel 00/02 :    0   1   2   3",
      "NCCL INFO comm 0x55d4c8 rank 3 nranks 8 cudaDev 3 busId 1b000 - Init COMPLETE",
      "2024-03-01 12:34:56,789 - INFO - torch.distributed.elastic.multiprocessing.api: Sending process 1234 closing signal SIGTERM",
      "2025-04-08T08:39:46.114109Z INFO c10::cuda::CUDACachingAllocator std::vector<at::Tensor> c10::Error",
      "  File \"/usr/lib/python3.10/site-packages/torch/nn/modules/module.py\", line 1501, in _call_impl",
      "torchvision.io.read_image failed; see model.safetensors and config.json, transport/net.cc:1302 -> 6",
      "tokens: 2048, max_new_tokens=128, pad_token_id=0, tokenizer: LlamaTokenizerFast, bos token: 1",
      "MAC 00:1b:44:11:3a:b7 at 12:00:01, a[::2], 10:23:13,624",
      "Total params: 6.7B; 1.2.3.4.5 is a version; wandb: Syncing run dainty-sun-12 to https://wandb.ai/team/proj",
      "@torch.no_grad() def step(self): disk-usage 93%; task-abcdefghijklmnopqrstuv",
  };
  for (const char* line : lines) EXPECT_EQ(r.apply(line), line);
  EXPECT_EQ(r.total(), 0u);
}

TEST(Redact, PseudonymPatterns) {
  EXPECT_EQ(format_pseudonym("node-{n:02}", 7), "node-07");
  EXPECT_EQ(format_pseudonym("node-{n:02}", 123), "node-123");
  EXPECT_EQ(format_pseudonym("192.0.2.{n}", 3), "192.0.2.3");
}

TEST(Redact, ABadRegexIsAnError) {
  Rules rules;
  rules.rules.push_back({"x", "(", Replace::kPlaceholder, "", "", "", "", 0, false, {}});
  auto r = Redactor::create(rules);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'x'"), std::string::npos);
}

}  // namespace
}  // namespace ff::redact
