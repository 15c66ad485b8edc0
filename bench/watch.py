#!/usr/bin/env python3
"""bench/watch.py — issue 20's measurement: does `firstfault watch` keep up with a 64-rank
log written at 50 MB/s, in bounded memory?

A writer appends a bench/genlog.py log (64 ranks, made once under
${XDG_CACHE_HOME:-~/.cache}/firstfault-bench, never in the repository) to a file at the
rate asked, in 1 MiB writes, while `firstfault watch --metrics` follows it. Twice a second
the writer reads watch's firstfault_bytes_read_total from its /metrics endpoint: the lag
is what was written but not yet read. At the end it reports the largest lag (MB and
seconds of writing), how long watch took to read the last byte after the writer stopped,
watch's own rate when the writer does not wait (--rate 0), and watch's peak RSS (VmHWM).

  bench/watch.py                      # 512 MiB at 50 MB/s, then as fast as it goes
  bench/watch.py --size 1G --rate 100
  FIRSTFAULT=path/to/firstfault bench/watch.py

Target (issue 20): at 50 MB/s the lag stays under a second of writing, the last byte is
read within a second of the end, and peak RSS stays under 200 MiB whatever the size.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def size_arg(s):
    m = re.fullmatch(r"(\d+)([KMG]?)", s)
    if not m:
        raise argparse.ArgumentTypeError("a size such as 512M")
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def bytes_read(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return None
    m = re.search(r"^firstfault_bytes_read_total (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def one_run(binary, log, rate, work):
    target = os.path.join(work, "train.log")
    open(target, "wb").close()
    port = free_port()
    env = dict(os.environ, FIRSTFAULT_NO_HISTORY="1")
    watch = subprocess.Popen([binary, "watch", "--metrics", f"127.0.0.1:{port}", "--format", "jsonl", work],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    while bytes_read(port) is None:
        if watch.poll() is not None:
            sys.exit("bench: watch ended before serving its metrics")
        time.sleep(0.05)
    written, max_lag, samples = 0, 0.0, []
    block = 1 << 20
    t0 = time.perf_counter()
    next_sample = t0 + 0.5
    with open(log, "rb") as src, open(target, "ab", buffering=0) as out:
        while True:
            chunk = src.read(block)
            if not chunk:
                break
            out.write(chunk)
            written += len(chunk)
            now = time.perf_counter()
            if rate > 0:
                ahead = written / (rate * 1e6) - (now - t0)
                if ahead > 0:
                    time.sleep(ahead)
            if now >= next_sample:
                got = bytes_read(port)
                if got is not None:
                    max_lag = max(max_lag, written - got)
                    samples.append((now - t0, written, got))
                next_sample = now + 0.5
    t_end = time.perf_counter()
    while True:
        got = bytes_read(port)
        if got is not None and got >= written:
            break
        if time.perf_counter() - t_end > 120:
            break
        time.sleep(0.01)
    catch_up = time.perf_counter() - t_end
    rss = hwm_kib(watch.pid)
    watch.send_signal(signal.SIGINT)
    try:
        watch.wait(60)
    except subprocess.TimeoutExpired:
        watch.kill()
    wall = t_end - t0
    return {
        "written_mb": written / 1e6,
        "write_s": wall,
        "write_rate": written / 1e6 / wall,
        "max_lag_mb": max_lag / 1e6,
        "catch_up_s": catch_up,
        "watch_rate": written / 1e6 / (wall + catch_up),
        "rss_mib": rss / 1024,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=size_arg, default=512 << 20)
    ap.add_argument("--rate", type=float, default=50, help="MB/s for the paced run (0: only the unpaced one)")
    ap.add_argument("--ranks", type=int, default=64)
    args = ap.parse_args()
    binary = os.environ.get("FIRSTFAULT", os.path.join(ROOT, "build", "firstfault"))
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "firstfault-bench")
    os.makedirs(cache, exist_ok=True)
    log = os.path.join(cache, f"watch-{args.ranks}r-{args.size}.log")
    if not os.path.exists(log):
        print(f"bench: making {log}", file=sys.stderr)
        with open(log + ".tmp", "wb") as out:
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "genlog.py"), "--ranks", str(args.ranks),
                            "--size", str(args.size), "--failure", "oom", "--seed", "7"],
                           stdout=out, stderr=subprocess.DEVNULL, check=True)
        os.rename(log + ".tmp", log)
    runs = [args.rate, 0] if args.rate > 0 else [0]
    print(f"{'rate asked':>10} {'written':>9} {'write MB/s':>10} {'max lag':>9} {'lag s':>6} {'catch-up':>9} "
          f"{'watch MB/s':>10} {'peak RSS':>9}")
    for rate in runs:
        with tempfile.TemporaryDirectory(prefix="ff-bench-watch-") as work:
            r = one_run(binary, log, rate, work)
        asked = f"{rate:g} MB/s" if rate > 0 else "unpaced"
        lag_s = r["max_lag_mb"] / r["write_rate"] if r["write_rate"] > 0 else 0
        print(f"{asked:>10} {r['written_mb']:>7.0f}MB {r['write_rate']:>10.1f} {r['max_lag_mb']:>7.1f}MB {lag_s:>6.2f} "
              f"{r['catch_up_s']:>8.2f}s {r['watch_rate']:>10.1f} {r['rss_mib']:>6.0f}MiB")


if __name__ == "__main__":
    main()
