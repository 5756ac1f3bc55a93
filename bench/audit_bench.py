#!/usr/bin/env python3
"""Benchmarks of the audit (a script that prints a table; never a timed unit test).

1. The full local audit (`clustermax audit --standalone --yes`), run N times: median wall time and
   median peak RSS, with the public cmax CLI's figures on these machines for comparison.
2. Judging 1,000 recorded node bundles in one `clustermax audit --replay` (copies of the committed
   fixture with varied hostnames and values): wall time and peak RSS.

Usage: bench/audit_bench.py [--binary build/clustermax] [--runs 10] [--bundles 1000]
"""
import argparse, json, os, random, shutil, statistics, subprocess, sys, tempfile, time

CMAX_WALL_S = 8.5   # public cmax CLI, one idle node on these machines (the brief)
CMAX_RSS_MIB = 36.0


def measure(argv, env=None):
    """Runs argv once; returns (wall seconds, peak RSS MiB, CPU seconds user + system, exit code).
    The command is started by GNU time (/usr/bin/time), not by this Python process: a process's
    ru_maxrss keeps the high-water mark of the memory its exec replaced (Linux's exec_mmap), so a
    command forked from a Python holding hundreds of MiB of generated bundles reports that
    Python's size, not its own."""
    fd, out = tempfile.mkstemp(prefix="cm-time-")
    os.close(fd)
    timer = ["/usr/bin/time", "-f", "%M %U %S", "-o", out] if os.path.exists("/usr/bin/time") else []
    try:
        start = time.perf_counter()
        code = subprocess.run(timer + list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).returncode
        wall = time.perf_counter() - start
        if not timer:
            return wall, float("nan"), float("nan"), code
        fields = open(out).read().split()[-3:]  # "Command exited with non-zero status N" may come first
        return wall, int(fields[0]) / 1024.0, float(fields[1]) + float(fields[2]), code
    finally:
        os.unlink(out)


def run(argv, env=None):
    """Runs argv once; returns (wall seconds, peak RSS MiB, exit code)."""
    wall, rss, _, code = measure(argv, env)
    return wall, rss, code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/clustermax")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bundles", type=int, default=1000)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.path.abspath(a.binary)
    tmp = tempfile.mkdtemp(prefix="cm-bench-")
    try:
        walls, rss = [], []
        for i in range(a.runs):
            w, r, code = run([binary, "audit", "--standalone", "--yes", "--exit-zero", "--out", os.path.join(tmp, f"run{i}")])
            if code != 0:
                sys.exit(f"audit run {i} exited {code}")
            walls.append(w)
            rss.append(r)

        fixture = json.load(open(os.path.join(root, "tests/fixtures/bundles/debian12-container-cpu.json")))
        rnd = random.Random(7)
        paths = []
        for i in range(a.bundles):
            b = json.loads(json.dumps(fixture))
            b["manifest"]["hostname"] = f"node-{i:04d}"
            b["files"]["/proc/sys/kernel/perf_event_paranoid"]["content"] = f"{rnd.choice([-1, 0, 1, 2, 3, 4])}\n"
            b["files"]["/proc/sys/kernel/kptr_restrict"]["content"] = f"{rnd.choice([0, 0, 0, 1, 2])}\n"
            p = os.path.join(tmp, f"node-{i:04d}.json")
            with open(p, "w") as f:
                json.dump(b, f)
            paths.append(p)
        jw, jr = [], []
        for _ in range(3):
            w, r, code = run([binary, "audit", "--replay", *paths, "--json", "--exit-zero"])
            if code != 0:
                sys.exit(f"replay exited {code}")
            jw.append(w)
            jr.append(r)

        mw, mr = statistics.median(walls), statistics.median(rss)
        print(f"| what | median wall | median peak RSS | vs cmax CLI | target |")
        print(f"|---|---|---|---|---|")
        print(f"| local audit, {a.runs} runs | {mw:.3f} s (min {min(walls):.3f}, max {max(walls):.3f}) | {mr:.1f} MiB | "
              f"{CMAX_WALL_S / mw:.0f}x faster, {CMAX_RSS_MIB / mr:.1f}x less memory than 8.5 s / 36 MB | < 1 s, < 64 MiB |")
        print(f"| judge {a.bundles} bundles (replay), 3 runs | {statistics.median(jw):.3f} s | {statistics.median(jr):.1f} MiB | "
              f"{statistics.median(jw) / a.bundles * 1000:.2f} ms per node | < 5 s |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
