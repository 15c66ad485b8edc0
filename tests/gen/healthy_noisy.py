#!/usr/bin/env python3
"""A healthy DeepSpeed run with benign noise, cut mid-training (issue 32, item 3).

RANKS ranks log a step line each step (no failure anywhere); DeepSpeed's ZeRO note
"You are using ZeRO with an untested optimizer, proceed with caution" at start-up (the
config allows the optimizer); RETRIES S3 reads that time out on one rank and are retried
(botocore's ReadTimeoutError with its traceback, then the step lines go on); a
loss-scale overflow now and then. The log stops at step STEPS of TOTAL: incomplete, not
healthy, never failed or degraded.

  healthy_noisy.py [--ranks 64] [--steps 3000] [--total 100000] [--retries 3]
                   [--retry-until N] [--seed 1] > run.log

--retry-until: the retries come at random steps before this one (default: the first 5%).
"""
import argparse
import datetime
import random
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--total", type=int, default=100000)
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--retry-until", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    until = a.retry_until or max(10, a.steps // 20)
    retry_steps = sorted(rng.sample(range(5, until), a.retries))
    t = datetime.datetime(2026, 11, 30, 10, 0, 0)
    out = sys.stdout.write

    def stamp(dt):
        return dt.strftime("%Y-%m-%d %H:%M:%S") + ",%03d" % (dt.microsecond // 1000)

    for r in range(a.ranks):
        out(f"[rank{r}]:[{stamp(t)}] [INFO] [comm.py:652:init_distributed] cdb=None\n")
    out(f"[rank0]:[{stamp(t)}] [WARNING] [engine.py:1260:_configure_zero_optimizer] "
        "**** You are using ZeRO with an untested optimizer, proceed with caution *****\n")
    scale = 65536.0
    for step in range(1, a.steps + 1):
        t += datetime.timedelta(milliseconds=900)
        if step in retry_steps:
            r = rng.randrange(a.ranks)
            shard = rng.randrange(10000)
            lines = [
                f"[{stamp(t)}] [WARNING] [data.py:88:read_shard] S3 read failed, retrying (1/5): shard-{shard:05d}.tar",
                "Traceback (most recent call last):",
                '  File "/opt/conda/lib/python3.10/site-packages/urllib3/connectionpool.py", line 537, in _make_request',
                "    response = conn.getresponse()",
                '  File "/opt/conda/lib/python3.10/site-packages/botocore/httpsession.py", line 499, in send',
                "    raise ReadTimeoutError(endpoint_url=request.url, error=e)",
                f'botocore.exceptions.ReadTimeoutError: Read timeout on endpoint URL: "https://train-data.s3.amazonaws.com/shard-{shard:05d}.tar"',
            ]
            for line in lines:
                out(f"[rank{r}]:{line}\n")
        if step % 211 == 0:
            scale /= 2
            out(f"[rank0]:[{stamp(t)}] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
                f"Attempted loss scale: {scale * 2:.0f}, reducing to {scale:.0f}\n")
        elif step % 211 == 50:
            scale *= 2
        for r in range(a.ranks):
            loss = 2.5 * (0.9995 ** step) + rng.uniform(-0.05, 0.05)
            out(f"[rank{r}]:{stamp(t + datetime.timedelta(milliseconds=rng.randrange(40)))} INFO [rank{r}] train: "
                f"step {step}/{a.total} | loss {loss:.4f} | lr 3.000e-04 | grad_norm {rng.uniform(0.4, 1.2):.3f} | "
                f"loss_scale {scale:.0f} | {850 + rng.uniform(-20, 20):.1f} ms/step\n")


if __name__ == "__main__":
    main()
