#!/usr/bin/env python3
"""Fleet audit benchmarks (prints a table; never a timed unit test).

1. `clustermax audit --slurm` on the 3-node CI Slurm cluster (scripts/slurm-ci.sh, fake NVML on the
   nodes), N runs: median wall time and peak RSS of the login-node process.
2. Judging 1,000 nodes: the last run's login bundle plus 1,000 copies of its node bundles (varied
   hostnames; 1 % of them on another driver, so drift is computed and reported) in one
   `clustermax audit --replay`: wall time and peak RSS, median of 3.

Usage: bench/fleet_bench.py [--binary build/clustermax] [--runs 10] [--bundles 1000]
Needs root (the cluster's munge and mknod'ed fake GPUs); brings the cluster up and down itself.
"""
import argparse, glob, json, os, random, shutil, statistics, subprocess, sys, tempfile

from audit_bench import run  # wall time and peak RSS of one command (same measurement for every bench)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/clustermax")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bundles", type=int, default=1000)
    ap.add_argument("--keep", help="copy the generated bundles (login.json, gpuNNNN.json) into this directory for profiling")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    fake_nvml = os.path.join(os.path.dirname(binary), "tests", "fake_nvml")
    tmp = tempfile.mkdtemp(prefix="cm-fleet-")
    cluster = os.path.join(tmp, "slurm")
    script = os.path.join(ROOT, "scripts", "slurm-ci.sh")
    subprocess.run(["bash", script, "install"], check=True)
    subprocess.run(["bash", script, "up", cluster, "3"], check=True)
    env = {**os.environ, "SLURM_CONF": os.path.join(cluster, "slurm.conf"), "LD_LIBRARY_PATH": fake_nvml}
    try:
        walls, rss = [], []
        for i in range(a.runs):
            w, r, code = run([binary, "audit", "--slurm", "--yes", "--exit-zero", "--out", os.path.join(tmp, f"run{i}")], env)
            if code != 0:
                sys.exit(f"fleet audit run {i} exited {code}")
            walls.append(w)
            rss.append(r)
        evidence = os.path.join(tmp, f"run{a.runs - 1}", "evidence")
        bundles = {os.path.basename(p)[:-5]: json.load(open(p)) for p in glob.glob(os.path.join(evidence, "*.json"))}
        login = [b for b in bundles.values() if b["manifest"].get("role") == "login"][0]
        nodes = [b for b in bundles.values() if b["manifest"].get("role") == "compute"]
        if len(nodes) != 3:
            sys.exit(f"expected 3 node bundles, got {len(nodes)}")
        rnd = random.Random(11)
        paths = [os.path.join(tmp, "login.json")]
        json.dump(login, open(paths[0], "w"))
        for i in range(a.bundles):
            b = json.loads(json.dumps(nodes[i % 3]))
            b["manifest"]["hostname"] = f"gpu{i:04d}"
            if rnd.random() < 0.01:
                b["nvml"]["data"]["driver_version"] = "570.86.10"
            p = os.path.join(tmp, f"gpu{i:04d}.json")
            json.dump(b, open(p, "w"))
            paths.append(p)
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            for p in paths:
                shutil.copy(p, a.keep)
        jw, jr = [], []
        for _ in range(3):
            w, r, code = run([binary, "audit", "--replay", *paths, "--json", "--exit-zero"], env)
            if code != 0:
                sys.exit(f"replay exited {code}")
            jw.append(w)
            jr.append(r)
        size = sum(os.path.getsize(p) for p in paths[1:]) / len(paths[1:]) / 1024
        print(f"| what | median wall | median peak RSS | target |")
        print(f"|---|---|---|---|")
        print(f"| fleet audit, 3-node Slurm cluster, {a.runs} runs | {statistics.median(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f}) "
              f"| {statistics.median(rss):.1f} MiB (login process) | < 3 s |")
        print(f"| judge {a.bundles} node bundles + login (replay, fleet), 3 runs | {statistics.median(jw):.2f} s "
              f"({1000 * statistics.median(jw) / a.bundles:.1f} ms per node) | {statistics.median(jr):.0f} MiB | < 5 s, < 1 GiB |")
        print(f"\nnode bundle size: {size:.0f} KiB on average")
    finally:
        subprocess.run(["bash", script, "down", cluster])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
