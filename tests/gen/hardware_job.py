#!/usr/bin/env python3
"""A multi-node DeepSpeed job in which one node's GPU falls off the bus (issue 32, item 2).

Writes into OUT_DIR a job of NODES x 8 ranks as pdsh's launcher prints it (one file,
"gpu-node-0007: " before each line) and the failing node's kernel log (a second file):
the node's syslog has `NVRM: Xid ... 79, ... GPU has fallen off the bus.`; the other
nodes then log NCCL's `NET/IB : Got completion from peer <the node> with status=12`
(no time on NCCL's lines), watchdog timeouts ten minutes later and the launcher killing
its workers. The answer (the node, the Xid's file) is printed as JSON on stdout.

  hardware_job.py OUT_DIR [--nodes 32] [--bad 42] [--syslog-year] [--peer ip|host]
                  [--xid-first] [--seed N]

--syslog-year: the kernel log in rsyslog's file format (an ISO time with the year),
else the classic "Nov 30 09:04:52" without one. --peer: NCCL names its peer by IP
(mapped to the node by NCCL's own "Bootstrap : Using ib0:IP" lines) or by host name.
--xid-first: the kernel log is the job's first file (a name that sorts first).
"""
import argparse
import json
import os
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--bad", type=int, default=42)
    ap.add_argument("--syslog-year", action="store_true")
    ap.add_argument("--peer", choices=["ip", "host"], default="ip")
    ap.add_argument("--xid-first", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    nodes = max(a.nodes, a.bad + 1)
    host = lambda n: f"gpu-node-{n:04d}"
    ip = lambda n: f"10.1.{n // 256}.{n % 256}"
    pid = lambda n, g: 20000 + n * 16 + g
    lines = []
    # Start-up: NCCL's bootstrap line per rank (says each node's address), rendezvous.
    for n in range(nodes):
        for g in range(8):
            p = pid(n, g)
            lines.append(f"{host(n)}: {host(n)}:{p}:{p} [{g}] NCCL INFO Bootstrap : Using ib0:{ip(n)}<0>")
    # Training: DeepSpeed's step lines on rank 0 of each node, 09:00:00 + 10 s a step.
    for step in range(1, 30):
        t = 9 * 3600 + step * 10
        hh, mm, ss = t // 3600, t // 60 % 60, t % 60
        for n in range(nodes):
            r = n * 8
            lines.append(f"{host(n)}: [2026-11-30 {hh:02d}:{mm:02d}:{ss:02d},{rng.randrange(1000):03d}] [INFO] "
                         f"[logging.py:128:log_dist] [Rank {r}] step={step}, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]")
    # 09:04:52 the bad node's GPU is gone (kernel log). The others' NICs see their peer go.
    peer = ip(a.bad) if a.peer == "ip" else host(a.bad)
    order = [n for n in range(nodes) if n != a.bad]
    rng.shuffle(order)
    for n in order:
        g = rng.randrange(8)
        p = pid(n, g)
        lines.append(f"{host(n)}: {host(n)}:{p}:{p + 40} [{g}] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
                     f"from peer {peer}<{51000 + g}> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
                     f"::ffff:{ip(n)} remoteGids::ffff:{ip(a.bad)}")
    for n in order:
        r = n * 8 + rng.randrange(8)
        lines.append(f"{host(n)}: [rank{r}]:[E1130 09:14:52.{rng.randrange(10**6):06d} ProcessGroupNCCL.cpp:616] "
                     f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4242, OpType=ALLREDUCE, "
                     f"NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600043 milliseconds before timing out.")
    for n in order:
        lines.append(f"{host(n)}: [2026-11-30 09:15:01,{rng.randrange(1000):03d}] [INFO] [launch.py:319:sigkill_handler] "
                     f"Killing subprocess {pid(n, 0)}")
        lines.append(f"{host(n)}: [2026-11-30 09:15:02,{rng.randrange(1000):03d}] [ERROR] [launch.py:325:sigkill_handler] "
                     f"['/usr/bin/python3', '-u', 'train.py', '--local_rank=0', '--deepspeed'] exits with return code = -6")
    job = os.path.join(a.out, "job.log")
    with open(job, "w") as f:
        f.write("\n".join(lines) + "\n")
    if a.syslog_year:
        stamp = lambda s: f"2026-11-30T09:{s}.{rng.randrange(10**6):06d}+00:00 {host(a.bad)}"
    else:
        stamp = lambda s: f"Nov 30 09:{s} {host(a.bad)}"
    kern = [
        f"{stamp('01:07')} kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
        f"{stamp('04:52')} kernel: NVRM: GPU at PCI:0000:b3:00: GPU-5f2d0c3e-8e1b-4c59-a2b1-0c4be1d7e6aa",
        f"{stamp('04:52')} kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=0, GPU has fallen off the bus.",
        f"{stamp('04:52')} kernel: NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus.",
    ]
    name = ("00-" if a.xid_first else "zz-") + host(a.bad) + ".syslog"
    with open(os.path.join(a.out, name), "w") as f:
        f.write("\n".join(kern) + "\n")
    print(json.dumps({"node": host(a.bad), "xid_file": name, "files": sorted(os.listdir(a.out))}))


if __name__ == "__main__":
    main()
