#!/usr/bin/env python3
"""Side by side on the same two nodes and HCA, in the same run: RDMA write bandwidth of `clustermax bench
net --modes rdma` against perftest's ib_write_bw. Prints a markdown table (median, min and max of each,
the ratio of the medians, ours / ib_write_bw, against the target of 0.9) and writes it with --md FILE.

  python3 bench/rdma_compare.py --nodelist gpu01,gpu02 --device mlx5_0 [--runs 5] [--seconds 2] \
      [--bytes 8388608] [--gid-index 3] [--partition P] [--strict] [--md FILE]

What each side measures:
  ours         one `bench net --modes rdma --nodelist A,B --rdma-devices DEV` run through Slurm; the
               figure is the port's write_gbps (rank 0 on A posts RDMA writes of --bytes into B's
               memory, 128 in flight, for --seconds; bytes over first post to last completion).
  ib_write_bw  `ib_write_bw -d DEV -F --report_gbits -s BYTES -D SECONDS [-x GID]` as a server on B
               (srun -w B) and as a client on A (srun -w A, connecting to B's NodeAddr); the client's
               output is read by `clustermax bench net --import`, the figure is its BW average.
One warm-up pair is discarded (--warmup), then --runs pairs, the order alternating. Both need RDMA
hardware, Slurm, and perftest installed on the two nodes (Debian/Ubuntu: apt-get install -y perftest);
where there is none, the script says so and exits 1. There is no RDMA device on this project's CI
machines, so no figure from this script is committed yet.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "clustermax")
TARGET = 0.9


def run(argv, timeout):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def srun(a, node, argv):
    head = ["srun", "-N1", "-n1", "-w", node, "--overlap" if os.environ.get("SLURM_JOB_ID") else "--immediate=30"]
    if a.partition:
        head.append("--partition=" + a.partition)
    return head + argv


def node_addr(node):
    r = run(["scontrol", "show", "node", node], 30)
    for word in r.stdout.split():
        if word.startswith("NodeAddr="):
            return word.split("=", 1)[1]
    sys.exit(f"rdma_compare: scontrol knows no NodeAddr for {node}: {r.stderr.strip()}")


def ours(a):
    out = tempfile.mkdtemp(prefix="cmaxrdma-")
    try:
        r = run([a.binary, "bench", "net", "--modes", "rdma", "--nodelist", a.nodelist, "--rdma-devices", a.device,
                 "--rdma-seconds", str(a.seconds), "--rdma-bytes", str(a.bytes), "--json", "--exit-zero", "-q",
                 "--out", out, "--force"] + (["--partition", a.partition] if a.partition else []), a.seconds * 20 + 300)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if r.returncode != 0:
        sys.exit(f"rdma_compare: clustermax bench net exited {r.returncode}\n{r.stderr}")
    sec = json.loads(r.stdout).get("rdma") or {}
    for pair in sec.get("pairs") or []:
        for p in pair.get("ports") or []:
            if p.get("device") == a.device and "write_gbps" in p:
                return p["write_gbps"]
    sys.exit(f"rdma_compare: no write figure for {a.device}: {sec.get('why') or sec.get('errors')}")


def perftest(a, server_addr):
    base = ["ib_write_bw", "-d", a.device, "-F", "--report_gbits", "-s", str(a.bytes), "-D", str(a.seconds)]
    if a.gid_index is not None:
        base += ["-x", str(a.gid_index)]
    a_node, b_node = a.nodelist.split(",")
    srv = subprocess.Popen(srun(a, b_node, base), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2)  # the server's listen; ib_write_bw's client retries its connect briefly too
        c = run(srun(a, a_node, base + [server_addr]), a.seconds * 10 + 120)
        if c.returncode != 0:
            sys.exit(f"rdma_compare: ib_write_bw client exited {c.returncode}\n{c.stdout}\n{c.stderr}")
        srv.wait(timeout=60)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    # perftest's table read by our own importer (bench/net_interop), as a user's saved file would be.
    with tempfile.NamedTemporaryFile("w", suffix="-ib_write_bw.txt", delete=False) as f:
        f.write(c.stdout)
        name = f.name
    out = tempfile.mkdtemp(prefix="cmaxrdma-")
    try:
        r = run([a.binary, "bench", "net", "--import", name, "--json", "--exit-zero", "-q", "--out", out, "--force"], 60)
    finally:
        os.unlink(name)
        shutil.rmtree(out, ignore_errors=True)
    imp = (json.loads(r.stdout).get("imported") or [{}])[0]
    rows = (imp.get("result") or {}).get("rows") or []
    if not rows or "average_gbps" not in rows[-1]:
        sys.exit(f"rdma_compare: ib_write_bw printed no bandwidth row: {imp.get('error')}\n{c.stdout}")
    return rows[-1]["average_gbps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=BIN)
    ap.add_argument("--nodelist", required=True, help="the two nodes: A (writes) and B (is written to)")
    ap.add_argument("--device", required=True, help="the HCA on both nodes, e.g. mlx5_0")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--bytes", type=int, default=8388608, help="message size (ib_write_bw -s, ours --rdma-bytes)")
    ap.add_argument("--gid-index", type=int, help="RoCE: ib_write_bw -x (ours picks the RoCE v2 IPv4 GID itself)")
    ap.add_argument("--partition")
    ap.add_argument("--strict", action="store_true", help=f"exit 1 when the ratio of medians is below {TARGET}")
    ap.add_argument("--md", help="also write the table to this file")
    a = ap.parse_args()
    if len(a.nodelist.split(",")) != 2:
        ap.error("--nodelist takes exactly two nodes")
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if not os.path.exists(a.binary):
        sys.exit(f"rdma_compare: {a.binary} not found; build it first")
    if shutil.which("srun") is None:
        sys.exit("rdma_compare: srun not found: this compares two nodes of a Slurm cluster")
    server_addr = node_addr(a.nodelist.split(",")[1])
    mine, theirs = [], []
    for rep in range(-a.warmup, a.runs):
        order = ("ours", "perftest") if rep % 2 == 0 else ("perftest", "ours")
        got = {t: (ours(a) if t == "ours" else perftest(a, server_addr)) for t in order}
        print(f"  {'warm-up' if rep < 0 else f'run {rep + 1}'}: ours {got['ours']:.2f} Gb/s, "
              f"ib_write_bw {got['perftest']:.2f} Gb/s ({' then '.join(order)})", file=sys.stderr)
        if rep >= 0:
            mine.append(got["ours"])
            theirs.append(got["perftest"])
    om, im = statistics.median(mine), statistics.median(theirs)
    ratio = om / im if im > 0 else float("inf")
    ok = ratio >= TARGET
    table = (f"Pair {a.nodelist}, {a.device}, {a.bytes} B writes for {a.seconds} s; {a.warmup} warm-up pair(s) "
             f"discarded, then {a.runs} pairs, order alternating; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
             "| measurement | median | min | max | runs |\n|---|---:|---:|---:|---:|\n"
             f"| clustermax rdma write_gbps | {om:.2f} | {min(mine):.2f} | {max(mine):.2f} | {len(mine)} |\n"
             f"| ib_write_bw BW average (Gb/s) | {im:.2f} | {min(theirs):.2f} | {max(theirs):.2f} | {len(theirs)} |\n\n"
             f"Ratio of medians, ours / ib_write_bw: **{ratio:.3f}** (target >= {TARGET}: {'met' if ok else 'NOT met'}).\n")
    print(table)
    if a.md:
        with open(a.md, "w") as f:
            f.write("# RDMA write bandwidth against ib_write_bw\n\nGenerated by `python3 bench/rdma_compare.py`.\n\n" + table)
    return 0 if ok or not a.strict else 1


if __name__ == "__main__":
    sys.exit(main())
