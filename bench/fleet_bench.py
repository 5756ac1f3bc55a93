#!/usr/bin/env python3
"""Fleet audit benchmarks (prints a table; never a timed unit test).

1. `clustermax audit --slurm` on the 3-node CI Slurm cluster (scripts/slurm-ci.sh, fake NVML on the
   nodes), N runs: median wall time and peak RSS of the login-node process.
2. Judging many nodes: the last run's login bundle plus N copies of its node bundles (varied
   hostnames; 1 % of them on another driver, so drift is computed and reported) in one
   `clustermax audit --replay`: wall time and peak RSS, median of --replay-runs. `--bundles` takes a
   list (1000,10000) to show how time and memory grow with the node count.

3. With --live: the live fleet path at those node counts without a cluster of that size: `sinfo`
   and `srun` on PATH are stand-ins that list the nodes and write every node's bundle as the framed
   lines `collect` prints (other Slurm commands fail at once), so `clustermax audit --slurm` reads,
   saves, replays and judges N streamed bundles: wall time, CPU and peak RSS of the login process.
   --interleave writes one line of every node in turn (the most a fan-out can be made to hold).

Usage: bench/fleet_bench.py [--binary build/clustermax] [--runs 10] [--bundles 1000,10000]
       bench/fleet_bench.py --from DIR --bundles 1000,10000   # judge only, from bundles kept with --keep
Needs root (the cluster's munge and mknod'ed fake GPUs); brings the cluster up and down itself.
With --from DIR (a directory a --keep run wrote: login.json and the node bundles) no cluster is
started: step 2 alone runs on those bundles, so runs are comparable while the machine changes (a
bundle records the node's state: thousands of TCP connections make /proc/net/tcp alone 800 KB).
"""
import argparse, base64, glob, json, os, random, re, shutil, statistics, subprocess, sys, tempfile, time, zlib

from audit_bench import measure, run  # wall time and peak RSS of one command (same measurement for every bench)


def run_cpu(argv, env=None):
    """Like audit_bench.run, plus the CPU seconds (user + system) the command used: on a shared
    machine wall time follows the load, CPU time much less."""
    return measure(argv, env)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# What differs between the nodes of one image (--vary): their names, counters and clocks, the
# processes and connections they hold, their kernel logs and GPU telemetry. Everything else
# (libraries, configuration, packages, devices) is the image's and the same on every node.
VARYING_FILES = ("/proc/sys/kernel/hostname", "/etc/hostname", "/proc/uptime", "/proc/meminfo", "/proc/loadavg", "/proc/stat",
                 "/proc/net/tcp", "/proc/net/tcp6", "/proc/cpuinfo", "/proc/self/status", "/proc/self/mountinfo")
VARYING_COMMANDS = ("dmesg", "journalctl", "quota")


def vary(b, i):
    """Node i's own answers in a copy of a node bundle (numbers shifted, a log line added)."""
    bump = lambda text: re.sub(r"\d+", lambda m: str(int(m.group()) + i).zfill(len(m.group()))[-len(m.group()):], text, count=3)
    for path, f in b["files"].items():
        if f.get("status") != "ok" or "content" in f and f.get("content_encoding") == "hex":
            continue
        if path in ("/proc/sys/kernel/hostname", "/etc/hostname"):
            f["content"] = f"gpu{i:04d}\n"
        elif path in VARYING_FILES or "/counters/" in path or (path.startswith("/proc/") and path.endswith("/comm") and i % 3 == 0):
            f["content"] = bump(f.get("content", ""))
    for c in b["commands"]:
        if c["argv"] and os.path.basename(c["argv"][0]) in VARYING_COMMANDS and isinstance(c.get("stdout"), str):
            c["stdout"] += f"[Mon Nov 30 06:{i % 60:02d}:00 2026] node gpu{i:04d}: eth0 link up\n"
    def temps(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and any(w in k for w in ("temp", "power", "util", "clock", "sm")):
                    x[k] = v + i % 7
                else:
                    temps(v)
        elif isinstance(x, list):
            for v in x:
                temps(v)
    if isinstance(b.get("nvml"), dict):
        temps(b["nvml"].get("data"))


def write_fleet(tmp, login, nodes, count, varied=False):
    """login.json plus `count` node bundles gpuNNNN.json (copies of `nodes`; with `varied`, each with
    its own counters, logs and telemetry, as nodes of one image differ); returns their paths."""
    rnd = random.Random(11)
    paths = [os.path.join(tmp, "login.json")]
    with open(paths[0], "w") as f:
        json.dump(login, f)
    texts = [json.dumps(n) for n in nodes]
    for i in range(count):
        b = json.loads(texts[i % len(nodes)])
        b["manifest"]["hostname"] = f"gpu{i:04d}"
        if rnd.random() < 0.01:
            b["nvml"]["data"]["driver_version"] = "570.86.10"
        if varied:
            vary(b, i)
        p = os.path.join(tmp, f"gpu{i:04d}.json")
        with open(p, "w") as f:
            json.dump(b, f)
        paths.append(p)
    return paths


CHUNK = 800  # util::kFrameChunk


def write_live(tmp, paths, interleave):
    """Stand-in Slurm commands in tmp/bin: sinfo lists the nodes of `paths` (gpuNNNN.json), srun
    writes their framed bundles (labelled as srun --label does); every other Slurm command fails."""
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    names = [os.path.basename(p)[:-5] for p in paths]
    with open(os.path.join(tmp, "sinfo.txt"), "w") as f:
        for n in names:
            f.write(f"{n}|idle|gpu:h100:8|none\n")
    frames = os.path.join(tmp, "frames.txt")
    docs = []
    for i, (n, p) in enumerate(zip(names, paths)):
        b = json.load(open(p))
        b["manifest"]["role"] = "compute"
        # As `collect` sends it: "z1:" and the base64 of the JSON deflated (audit::BundleLines).
        text = "z1:" + base64.b64encode(zlib.compress(json.dumps(b, ensure_ascii=True, separators=(",", ":")).encode(), 6)).decode()
        count = max(1, (len(text) + CHUNK - 1) // CHUNK)
        docs.append([f"{i}: CLUSTERMAX-BUNDLE {n} {k} {count} {text[k * CHUNK:(k + 1) * CHUNK]}\n" for k in range(count)])
        if not interleave and len(docs) > 64:
            with open(frames, "a") as f:
                for d in docs:
                    f.writelines(d)
            docs = []
    with open(frames, "a") as f:
        if interleave:
            for k in range(max(len(d) for d in docs)):
                f.writelines(d[k] for d in docs if k < len(d))
        else:
            for d in docs:
                f.writelines(d)
    def script(name, body):
        with open(os.path.join(bindir, name), "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(os.path.join(bindir, name), 0o755)
    script("sinfo", f"exec cat {tmp}/sinfo.txt")
    # The fan-out's step runs `collect`; the login node's own questions to srun get short answers.
    script("srun", f'case "$*" in *" collect "*) exec cat {frames};; *--version*) echo "slurm 22.05.8";; *) exit 1;; esac')
    for cmd in ("scontrol", "sacct", "sacctmgr", "squeue", "sbatch", "salloc", "sprio", "sshare", "sdiag", "sreport"):
        script(cmd, "echo 'stand-in: no cluster' >&2; exit 1")
    return bindir, os.path.getsize(frames)


def live(binary, paths, runs, env, tmp, interleave):
    work = os.path.join(tmp, "live")
    os.makedirs(work)
    bindir, size = write_live(work, paths, interleave)
    lenv = {**env, "PATH": bindir + ":" + env.get("PATH", "/usr/bin:/bin")}
    lenv.pop("SLURM_JOB_ID", None)
    jw, jr, jc = [], [], []
    for i in range(runs):
        out = os.path.join(work, f"run{i}")
        w, r, c, code = run_cpu([binary, "audit", "--slurm", "--yes", "--json", "--exit-zero", "--out", out], lenv)
        if code != 0:
            sys.exit(f"live fleet audit exited {code}")
        report = json.load(open(os.path.join(out, "report.json")))
        if report["fleet"]["nodes_returned"] != len(paths):
            sys.exit(f"live fleet audit: {report['fleet']['nodes_returned']} of {len(paths)} nodes returned")
        shutil.rmtree(out)
        jw.append(w)
        jr.append(r)
        jc.append(c)
    shutil.rmtree(work, ignore_errors=True)
    return jw, jr, jc, size


def judge(binary, paths, runs, env):
    jw, jr, jc = [], [], []
    for _ in range(runs):
        w, r, c, code = run_cpu([binary, "audit", "--replay", *paths, "--json", "--exit-zero"], env)
        if code != 0:
            sys.exit(f"replay exited {code}")
        jw.append(w)
        jr.append(r)
        jc.append(c)
    return jw, jr, jc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/clustermax")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bundles", default="1000", help="node counts to judge, comma-separated (1000,10000)")
    ap.add_argument("--replay-runs", type=int, default=3)
    ap.add_argument("--keep", help="copy the generated bundles (login.json, gpuNNNN.json) into this directory for profiling")
    ap.add_argument("--from", dest="source", help="judge only: login.json and node bundles from this directory (a --keep run)")
    ap.add_argument("--live", action="store_true", help="also run the live fan-out path on stand-in sinfo/srun for each count")
    ap.add_argument("--interleave", action="store_true", help="--live: one line of every node in turn")
    ap.add_argument("--vary", action="store_true",
                    help="give every node bundle its own counters, logs and telemetry (nodes of one image), not exact copies")
    a = ap.parse_args()
    counts = [int(c) for c in a.bundles.split(",") if c]
    binary = os.path.abspath(a.binary)
    fake_nvml = os.path.join(os.path.dirname(binary), "tests", "fake_nvml")
    tmp = tempfile.mkdtemp(prefix="cm-fleet-")
    cluster = os.path.join(tmp, "slurm")
    script = os.path.join(ROOT, "scripts", "slurm-ci.sh")
    env = {**os.environ, "LD_LIBRARY_PATH": fake_nvml}
    rows = []
    try:
        if a.source:
            files = sorted(glob.glob(os.path.join(a.source, "*.json")))
        else:
            subprocess.run(["bash", script, "install"], check=True)
            subprocess.run(["bash", script, "up", cluster, "3"], check=True)
            env["SLURM_CONF"] = os.path.join(cluster, "slurm.conf")
            walls, rss = [], []
            for i in range(a.runs):
                w, r, code = run([binary, "audit", "--slurm", "--yes", "--exit-zero", "--out", os.path.join(tmp, f"run{i}")], env)
                if code != 0:
                    sys.exit(f"fleet audit run {i} exited {code}")
                walls.append(w)
                rss.append(r)
            rows.append(f"| fleet audit, 3-node Slurm cluster, {a.runs} runs | {statistics.median(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f}) "
                        f"| {statistics.median(rss):.1f} MiB (login process) | < 3 s |")
            files = glob.glob(os.path.join(tmp, f"run{a.runs - 1}", "evidence", "*.json"))
        bundles = [json.load(open(p)) for p in files]
        login = [b for b in bundles if b["manifest"].get("role") == "login"][0]
        nodes = sorted((b for b in bundles if b["manifest"].get("role") == "compute"), key=lambda b: b["manifest"]["hostname"])[:3]
        if len(nodes) != 3:
            sys.exit(f"expected 3 node bundles, got {len(nodes)}")
        for count in counts:
            fleet = os.path.join(tmp, f"fleet{count}")
            os.makedirs(fleet)
            paths = write_fleet(fleet, login, nodes, count, a.vary)
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                for p in paths:
                    shutil.copy(p, a.keep)
            jw, jr, jc = judge(binary, paths, a.replay_runs, env)
            size = sum(os.path.getsize(p) for p in paths[1:]) / len(paths[1:]) / 1024
            rows.append(f"| judge {count} node bundles{' (varied)' if a.vary else ''} + login (replay, fleet, `--json`), {a.replay_runs} runs | {statistics.median(jw):.2f} s "
                        f"(min {min(jw):.2f}, max {max(jw):.2f}; {1000 * statistics.median(jw) / count:.2f} ms per node; CPU {statistics.median(jc):.1f} s) "
                        f"| {statistics.median(jr):.0f} MiB | < 10 s, < 1 GiB |  (bundles of {size:.0f} KiB)")
            if a.live:
                lw, lr, lc, fsize = live(binary, paths[1:], a.replay_runs, env, tmp, a.interleave)
                rows.append(f"| live `audit --slurm`, {count} streamed node bundles{' (varied)' if a.vary else ''}"
                            f"{', interleaved line by line' if a.interleave else ''} ({fsize / 2**30:.2f} GiB of srun output), "
                            f"{a.replay_runs} runs | {statistics.median(lw):.2f} s (min {min(lw):.2f}, max {max(lw):.2f}; CPU {statistics.median(lc):.1f} s) "
                            f"| {statistics.median(lr):.0f} MiB | < 10 s, < 1 GiB |")
            shutil.rmtree(fleet, ignore_errors=True)
        print("| what | median wall | median peak RSS | target |")
        print("|---|---|---|---|")
        for r in rows:
            print(r)
    finally:
        if not a.source:
            subprocess.run(["bash", script, "down", cluster])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
