#!/usr/bin/env python3
"""Side by side on the same node: the `import torch` timings of `clustermax bench lifecycle` against
what a user would run, `time python3 -c "import torch"` (here: the wall time of the same command
around subprocess.run, repeated), and srun's launch time against `time srun -N1 true`. Prints a
markdown table (median, min, max of each, the ratio of the medians, ours / theirs) and writes it with
--md FILE.

  SLURM_CONF=build/slurm-ci/slurm.conf python3 bench/lifecycle_compare.py [--python /usr/bin/python3]
      [--package torch] [--runs 5] [--md FILE]

What each side measures:
  ours    one `bench lifecycle --no-jobs --nodes 1 --repeat R --warm-runs R` run through Slurm; the
          figures are the node's import warm_samples (warm: the package's files in the page cache)
          and the 1-node launch samples (srun start to exit, a task of our binary).
  theirs  `python3 -c "import PACKAGE"` run R times on the machine running this script, after one
          discarded run (warm, as ours), and `srun -N1 -n1 true` R times (Slurm allocates each, as
          ours does with --no-jobs).
The cold figure has no counterpart here (ours drops the package's pages first; a user's first
`time` after a reboot is the only equivalent) and is printed without a ratio.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "clustermax")


def timed(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def row(name, ours, theirs):
    o, t = statistics.median(ours), statistics.median(theirs) if theirs else None
    ratio = f"{o / t:.2f}" if t else "-"
    th = f"{t:.3f} ({min(theirs):.3f}-{max(theirs):.3f})" if theirs else "-"
    return f"| {name} | {o:.3f} ({min(ours):.3f}-{max(ours):.3f}) | {th} | {ratio} |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--package", default="torch")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--md")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([BIN, "bench", "lifecycle", "--no-jobs", "--nodes", "1", "--repeat", str(a.runs),
                            "--warm-runs", str(a.runs), "--python", a.python, "--package", a.package,
                            "--json", "--exit-zero", "-q", "--out", out], capture_output=True, text=True, check=True)
        r = json.loads(p.stdout)
    node = next(iter(r["nodes"].values()))
    imp = node["imports"][0]
    launch = r["launch"][0]["samples"]
    timed([a.python, "-c", f"import {a.package}"])  # warm-up, discarded
    theirs_import = [timed([a.python, "-c", f"import {a.package}"]) for _ in range(a.runs)]
    theirs_srun = [timed(["srun", "-N1", "-n1", "true"]) for _ in range(a.runs)]
    lines = ["| seconds, median (min-max) | clustermax | time ... | ours / theirs |", "|---|---|---|---|",
             row(f"import {a.package}, warm", imp["warm_samples"], theirs_import),
             row(f"import {a.package}, cold (page cache dropped)", [imp["cold_s"]], []),
             row("srun on 1 node (allocation + launch + exit)", launch, theirs_srun)]
    text = "\n".join(lines)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
