#!/usr/bin/env python3
"""Side by side on the same pair of nodes, in the same run: the TCP throughput of `clustermax bench net
--modes pairwise` against iperf3 with the equivalent job. Prints a markdown table (median, min and max
of each, the ratio of the medians, ours / iperf3, against the target of 0.9) and writes it with --md FILE.

  SLURM_CONF=build/slurm-ci/slurm.conf python3 bench/net_compare.py [--nodelist n1,n2] [--runs 5] \
      [--streams 8] [--seconds 3] [--address ADDR] [--strict] [--md FILE]

What each side measures:
  ours    one pairwise run between the two nodes through Slurm, --streams P --seconds S; the figure is
          the pair's a_to_b_gbps (receiver-side bytes over receiver-side time, first node to second).
          Its latency_p50_us is printed as well (iperf3 has no counterpart; no ratio).
  iperf3  `iperf3 -s -1 -B ADDR -p PORT` (a free port), then `iperf3 -c ADDR -p PORT -P P -t S -J`;
          the figure is the receiver's sum, end.sum_received.bits_per_second / 1e9.
ADDR is the IPv4 address in our result's transport field (the address the ranks used, so both tools
send over the same address), or --address. One warm-up pair is discarded (--warmup), then --runs
pairs, the order alternating (ours first, then iperf3 first), so that neither tool always runs
second. iperf3 runs on the machine running this script; it is not placed on the nodes by Slurm.

Caveat: on one machine (the CI Slurm cluster: n1..n3 are slurmd processes on one host) both tools
go over the kernel's loopback path, whatever the address; the figures are memory-copy and
CPU-scheduling speed, not a NIC's, and both sides of each tool share the same CPUs. Note also that
iperf3 before 3.16 runs all its streams on one thread per side.

Installs nothing: iperf3 must be on PATH (Debian: `apt-get install -y iperf3`).
"""
import argparse, json, os, re, shutil, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "clustermax")
TARGET = 0.9


def ensure_tools(binary):
    if shutil.which("iperf3") is None:
        sys.exit("net_compare: iperf3 not found on PATH; install it first (Debian/Ubuntu: apt-get install -y iperf3)")
    if not os.path.exists(binary):
        sys.exit(f"net_compare: {binary} not found; build it first (cmake -S . -B build -G Ninja && ninja -C build clustermax)")


def iperf3_version():
    r = subprocess.run(["iperf3", "--version"], capture_output=True, text=True)
    return (r.stdout.splitlines() or ["iperf3 (version unknown)"])[0].strip()


def ours_net(a):
    """One pairwise run: (a_to_b_gbps, b_to_a_gbps, latency_p50_us, transport)."""
    out = tempfile.mkdtemp(prefix="cmaxnet-")
    try:
        r = subprocess.run([a.binary, "bench", "net", "--backend", "tcp", "--modes", "pairwise", "--nodelist", a.nodelist,
                            "--streams", str(a.streams), "--seconds", str(a.seconds),
                            "--json", "--exit-zero", "-q", "--out", out, "--force"],
                           capture_output=True, text=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if r.returncode != 0:
        sys.exit(f"net_compare: clustermax bench net exited {r.returncode}\n{r.stderr}")
    res = json.loads(r.stdout)
    pairs = (res.get("pairwise") or {}).get("pairs") or []
    if not pairs or not pairs[0].get("a_to_b_gbps"):
        sys.exit(f"net_compare: no pairwise result (unreachable: {res.get('unreachable')}, verdict: {res.get('verdict')})")
    p = pairs[0]
    return p["a_to_b_gbps"], p.get("b_to_a_gbps"), p.get("latency_p50_us"), p.get("transport", "")


def address_of(transport):
    m = re.search(r"\b(\d{1,3}(?:\.\d{1,3}){3})\b", transport)
    return m.group(1) if m else None


def free_port(addr):
    s = socket.socket()
    s.bind((addr, 0))
    p = s.getsockname()[1]
    s.close()
    return p


def listening(port):
    """True once a socket listens on `port` (LISTEN = state 0A in /proc/net/tcp{,6})."""
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(f) as fh:
                next(fh)
                for line in fh:
                    cols = line.split()
                    if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def iperf3_net(a, addr):
    """One iperf3 run on addr: the receiver's sum in Gb/s."""
    port = free_port(addr)
    srv = subprocess.Popen(["iperf3", "-s", "-1", "-B", addr, "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not listening(port):
            if srv.poll() is not None:
                sys.exit(f"net_compare: iperf3 server on {addr}:{port} exited {srv.returncode}\n{srv.stderr.read()}")
            if time.monotonic() > deadline:
                sys.exit(f"net_compare: iperf3 server on {addr}:{port} not listening after 10 s")
            time.sleep(0.02)
        r = subprocess.run(["iperf3", "-c", addr, "-p", str(port), "-P", str(a.streams), "-t", str(a.seconds), "-J"],
                           capture_output=True, text=True, timeout=a.seconds + 60)
        try:
            j = json.loads(r.stdout)
        except ValueError:
            sys.exit(f"net_compare: iperf3 client exited {r.returncode} without JSON\n{r.stderr}")
        if r.returncode != 0 or "error" in j:
            sys.exit(f"net_compare: iperf3 client exited {r.returncode}: {j.get('error', r.stderr)}")
        srv.wait(timeout=10)
        return j["end"]["sum_received"]["bits_per_second"] / 1e9
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def stats(xs):
    return statistics.median(xs), min(xs), max(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=BIN)
    ap.add_argument("--nodelist", default="n1,n2", help="the two nodes of the pair (default n1,n2)")
    ap.add_argument("--runs", type=int, default=5, help="measured pairs (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="discarded pairs before them (default 1)")
    ap.add_argument("--streams", type=int, default=8, help="parallel TCP streams, ours --streams / iperf3 -P (default 8)")
    ap.add_argument("--seconds", type=int, default=3, help="seconds per direction, ours --seconds / iperf3 -t (default 3)")
    ap.add_argument("--address", help="address for iperf3 (default: the IPv4 address in our result's transport field)")
    ap.add_argument("--strict", action="store_true", help=f"exit 1 when the ratio of medians is below {TARGET}")
    ap.add_argument("--md", help="also write the table to this file")
    a = ap.parse_args()
    if len(a.nodelist.split(",")) != 2:
        ap.error("--nodelist takes exactly two nodes")
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    ensure_tools(a.binary)

    addr, transport = a.address, None
    ours, ours_back, lat, ref = [], [], [], []
    print(f"{a.warmup} warm-up pair(s), then {a.runs} pairs; {a.streams} streams, {a.seconds} s", file=sys.stderr)
    for rep in range(-a.warmup, a.runs):
        order = ("ours", "iperf3") if rep % 2 == 0 else ("iperf3", "ours")
        if addr is None:
            order = ("ours", "iperf3")  # the address comes from our first result
        got = {}
        for tool in order:
            if tool == "ours":
                got["ours"] = ours_net(a)
                transport = got["ours"][3]
                if addr is None:
                    addr = address_of(transport)
                    if addr is None:
                        sys.exit(f"net_compare: no IPv4 address in transport {transport!r}; pass --address")
            else:
                got["iperf3"] = iperf3_net(a, addr)
        o = got["ours"]
        print(f"  {'warm-up' if rep < 0 else f'run {rep + 1}'}: ours {o[0]:.2f} Gb/s (b->a {o[1]}), "
              f"iperf3 {got['iperf3']:.2f} Gb/s ({' then '.join(order)})", file=sys.stderr)
        if rep >= 0:
            ours.append(o[0])
            ours_back.append(o[1])
            ref.append(got["iperf3"])
            if o[2] is not None:
                lat.append(o[2])

    om, omin, omax = stats(ours)
    im, imin, imax = stats(ref)
    ratio = om / im if im > 0 else float("inf")
    pairs = [x / y for x, y in zip(ours, ref) if y > 0]
    ok = ratio >= TARGET
    host_addr = address_of(transport or "") or ""
    head = (f"Machine: {os.uname().nodename}, {os.cpu_count()} CPUs, kernel {os.uname().release}; "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
            f"Pair {a.nodelist}, {a.streams} streams, {a.seconds} s; {a.warmup} warm-up pair(s) discarded, then "
            f"{a.runs} pairs, order alternating. Our transport: {transport}. iperf3 on {addr}"
            f"{'' if addr == host_addr else ' (--address; differs from ours)'}: {iperf3_version()}.\n\n")
    table = ("| measurement | median | min | max | runs |\n"
             "|---|---:|---:|---:|---:|\n"
             f"| clustermax pairwise a_to_b (Gb/s) | {om:.2f} | {omin:.2f} | {omax:.2f} | {len(ours)} |\n"
             f"| iperf3 -P {a.streams} -t {a.seconds}, receiver sum (Gb/s) | {im:.2f} | {imin:.2f} | {imax:.2f} | {len(ref)} |\n")
    back = [x for x in ours_back if x is not None]
    if back:
        bm, bmin, bmax = stats(back)
        table += f"| clustermax pairwise b_to_a (Gb/s, no iperf3 counterpart) | {bm:.2f} | {bmin:.2f} | {bmax:.2f} | {len(back)} |\n"
    if lat:
        lm, lmin, lmax = stats(lat)
        table += f"| clustermax latency p50 (us, no iperf3 counterpart) | {lm:.2f} | {lmin:.2f} | {lmax:.2f} | {len(lat)} |\n"
    table += (f"\nRatio of medians, ours / iperf3: **{ratio:.3f}** (target >= {TARGET}: {'met' if ok else 'NOT met'}); "
              f"per-pair ratios {min(pairs):.2f}-{max(pairs):.2f}.\n")
    print(head + table)
    if a.md:
        with open(a.md, "w") as f:
            f.write("# Pairwise TCP throughput against iperf3\n\nGenerated by `python3 bench/net_compare.py --md "
                    + a.md + "`.\n\n" + head + table)
    if a.strict and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
