#!/usr/bin/env python3
"""Generates a realistic, deterministic log of a multi-rank training job with one planted
failure and its collateral, for tests and benchmarks.

  bench/genlog.py --ranks 64 --steps 200 --failure oom --seed 7 > job.log
  bench/genlog.py --ranks 1024 --failure hang --stamp s --skew 4 --out-dir logs/   # per-node files
  bench/genlog.py --ranks 64 --size 1G --failure oom > big.log                    # pad with steps

Lines look like what torchrun + Python logging + NCCL + PyTorch print: `[rankN]:` prefixes,
`2026-11-30 10:20:42,398` timestamps (or whole seconds with --stamp s), step lines with
loss / lr / grad norm / loss scale / throughput, NCCL INFO chatter, warnings, a harmless
caught traceback, then the failure: the failing rank's error, the other ranks' watchdog
timeouts in random order a timeout later, torchrun's SIGTERMs and its failure summary.
The answer is printed to stderr as JSON: {"rank": F, "node": "...", "failure": "..."}.
Deterministic for a given --seed.
"""
import argparse, json, os, random, sys, datetime

FAILURES = {
    "oom": [
        "Traceback (most recent call last):",
        '  File "train.py", line 211, in <module>',
        "    main()",
        '  File "train.py", line 187, in main',
        "    loss.backward()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {gpu} has a total capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. Of the allocated memory 74.10 GiB is allocated by PyTorch, and 2.51 GiB is reserved by PyTorch but unallocated.",
    ],
    "segv": [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f3b2c7fe700 (most recent call first):",
        '  File "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", line 197 in backward',
    ],
    "xid": None,   # printed by the kernel on the node, see below
    "hang": None,  # the failing rank prints nothing: it never enters the collective
}


def parse_size(s):
    if s is None:
        return None
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--ranks-per-node", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--size", help="pad with steps until about this many bytes (e.g. 1G)")
    ap.add_argument("--failure", choices=sorted(FAILURES), default="oom")
    ap.add_argument("--fail-rank", type=int, help="default: chosen by the seed")
    ap.add_argument("--stamp", choices=["ms", "s"], default="ms", help="timestamp precision")
    ap.add_argument("--skew", type=float, default=0.0, help="max clock skew in seconds of some nodes")
    ap.add_argument("--style", choices=["rank", "srun"], default="rank", help="[rankN]: or srun --label N:")
    ap.add_argument("--out-dir", help="write one file per node instead of one stream to stdout")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    nodes = (a.ranks + a.ranks_per_node - 1) // a.ranks_per_node
    node_name = lambda r: "node-%03d" % (r // a.ranks_per_node)
    fail = a.fail_rank if a.fail_rank is not None else rng.randrange(a.ranks)
    skew = {n: (rng.uniform(-a.skew, a.skew) if a.skew and rng.random() < 0.5 else 0.0) for n in range(nodes)}
    t0 = datetime.datetime(2026, 11, 30, 10, 0, 0)
    target = parse_size(a.size)
    outs = {}
    written = [0]

    def out_for(rank):
        if not a.out_dir:
            return sys.stdout
        name = node_name(rank) if rank >= 0 else "launcher"
        if name not in outs:
            os.makedirs(a.out_dir, exist_ok=True)
            outs[name] = open(os.path.join(a.out_dir, name + ".log"), "w")
        return outs[name]

    def stamp(t, rank):
        if rank >= 0:
            t = t + datetime.timedelta(seconds=skew[rank // a.ranks_per_node])
        s = t.strftime("%Y-%m-%d %H:%M:%S")
        return s + ",%03d" % (t.microsecond // 1000) if a.stamp == "ms" else s

    def prefix(rank):
        return ("[rank%d]:" % rank) if a.style == "rank" else ("%d: " % rank)

    buf = []

    def emit(rank, text, t=None, level="INFO", logger="train"):
        if t is not None:
            line = "%s%s %s [rank%d] %s: %s\n" % (prefix(rank), stamp(t, rank), level, rank, logger, text)
        else:
            line = "%s%s\n" % (prefix(rank), text)
        buf.append((rank, line))
        written[0] += len(line)

    def flush():
        for rank, line in buf:
            out_for(rank).write(line)
        buf.clear()

    def launcher(text):
        buf.append((-1, text + "\n"))
        written[0] += len(text) + 1

    # Start-up.
    for r in range(a.ranks):
        t = t0 + datetime.timedelta(milliseconds=rng.randrange(0, 900))
        emit(r, "initializing process group: backend=nccl rank=%d world_size=%d" % (r, a.ranks), t)
        pid = 10000 + r
        buf.append((r, "%s%s:%d:%d [%d] NCCL INFO Bootstrap : Using eth0:10.0.%d.%d<0>\n" % (
            prefix(r), node_name(r), pid, pid, r % a.ranks_per_node, r // a.ranks_per_node, r % 250)))
        buf.append((r, "%s%s:%d:%d [%d] NCCL INFO comm 0x55d0c8a3e%03x rank %d nranks %d cudaDev %d busId %x000 - Init COMPLETE\n" % (
            prefix(r), node_name(r), pid, pid + 7, r % a.ranks_per_node, r % 4096, r, a.ranks, r % a.ranks_per_node, 0x10 + r % a.ranks_per_node)))
    flush()
    step = 0
    t = t0 + datetime.timedelta(seconds=5)
    step_ms = 850.0
    scale = 65536.0
    total_steps = a.steps
    while True:
        step += 1
        t += datetime.timedelta(milliseconds=step_ms)
        order = list(range(a.ranks))
        rng.shuffle(order)
        for r in order:
            jitter = datetime.timedelta(milliseconds=rng.randrange(0, 40))
            loss = 2.5 * (0.995 ** step) + rng.uniform(-0.05, 0.05)
            emit(r, "step %d | loss %.4f | lr %.3e | grad_norm %.3f | loss_scale %.0f | %.1f ms/step | %.0f tokens/s" % (
                step, loss, 3e-4 * min(1.0, step / 100.0), rng.uniform(0.4, 1.2), scale, step_ms + rng.uniform(-20, 20),
                rng.uniform(15000, 16000)), t + jitter)
        if step % 97 == 0:
            emit(rng.randrange(a.ranks), "Grad overflow on iteration %d, reducing loss scale" % step, t, "WARNING")
        if step == 3:
            r = rng.randrange(a.ranks)
            emit(r, "torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 8 worker processes in total.", None)
        flush()
        if target is None and step >= total_steps:
            break
        if target is not None and written[0] >= target:
            break
    # The failure.
    t_fail = t + datetime.timedelta(milliseconds=400)
    seq = step * 3 + 11
    f = fail
    gpu = f % a.ranks_per_node
    if a.failure in ("oom", "segv"):
        for i, text in enumerate(FAILURES[a.failure]):
            emit(f, text.format(gpu=gpu), None)
    elif a.failure == "xid":
        launcher("[%d.%06d] NVRM: Xid (PCI:0000:%02x:00): 79, pid=%d, GPU has fallen off the bus." % (
            86400 + step, 123456, 0x10 + gpu, 10000 + f))
    flush()
    # Everyone else times out in the collective the failing rank never finished.
    timeout_ms = 600000
    victims = [r for r in range(a.ranks) if r != f]
    rng.shuffle(victims)
    for r in victims:
        tr = t_fail + datetime.timedelta(milliseconds=timeout_ms + rng.randrange(0, 3000))
        g = r % a.ranks_per_node
        buf.append((r, "%s[E%s %d ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=%d) ran for %d milliseconds before timing out.\n" % (
            prefix(r), tr.strftime("%m%d %H:%M:%S.%f"), 20000 + r, r, seq, timeout_ms, timeout_ms + rng.randrange(1, 90))))
        buf.append((r, "%s[E%s %d ProcessGroupNCCL.cpp:1664] [PG 0 Rank %d] failure detected by watchdog at work sequence id: %d PG status: last enqueued work: %d, last completed work: %d\n" % (
            prefix(r), tr.strftime("%m%d %H:%M:%S.%f"), 20000 + r, r, seq, seq, seq - 1)))
        if rng.random() < 0.3:
            buf.append((r, "%s[E%s %d ProcessGroupNCCL.cpp:630] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n" % (
                prefix(r), tr.strftime("%m%d %H:%M:%S.%f"), 20000 + r)))
        del g
    flush()
    for r in victims[: min(len(victims), 16)]:
        launcher("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process %d closing signal SIGTERM" % (10000 + r))
    launcher("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: %d (pid: %d) of binary: /usr/bin/python3" % (
        f % a.ranks_per_node, 10000 + f))
    flush()
    json.dump({"rank": f, "node": node_name(f), "failure": a.failure, "steps": step}, sys.stderr)
    sys.stderr.write("\n")
    for o in outs.values():
        o.close()


if __name__ == "__main__":
    main()
