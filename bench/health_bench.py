#!/usr/bin/env python3
"""Benchmark of `clustermax health` (a script that prints a table; never a timed unit test).

Runs the health check N times against NHC's budget under Slurm (LBNL NHC: HealthCheckInterval 300 s,
NHC's own timeout 30 s per run; ../shared/reference/performance.md): median wall time and median
peak RSS (GNU time, audit_bench.measure), for
  1. this machine (journalctl/dmesg or --kernel-log, sysfs, NVML if present, mounts), and
  2. a node tree under --sysroot with a 50,000-line kernel log holding 200 Xid lines and 8
     InfiniBand rails (the parse and judge cost on a busy log), state kept between runs.
With --nvml DIR (tests' fake libnvidia-ml, 8 H100s) the first case also loads NVML.

Usage: bench/health_bench.py [--binary build/clustermax] [--runs 20] [--nvml build/tests/fake_nvml]
"""
import argparse, os, shutil, statistics, sys, tempfile

from audit_bench import run  # one timing harness: wall clock and peak RSS (GNU time)

NHC_TIMEOUT_S = 30.0      # NHC's default TIMEOUT per run (nhc(8)); Slurm runs it every HealthCheckInterval=300 s
SLURM_INTERVAL_S = 300.0


def tree(root):
    os.makedirs(f"{root}/var/log")
    with open(f"{root}/var/log/kern.log", "w") as f:
        for i in range(50_000):
            if i % 250 == 0:
                f.write(f"2026-12-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}+0000 n1 kernel: "
                        f"NVRM: Xid (PCI:0000:19:00): 13, pid={i}, name=python, Graphics Exception\n")
            else:
                f.write(f"2026-12-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}+0000 n1 kernel: "
                        f"eth0: some driver message number {i}\n")
    for d in range(8):
        p = f"{root}/sys/class/infiniband/mlx5_{d}"
        os.makedirs(f"{p}/ports/1/counters")
        os.makedirs(f"{p}/device")
        for name, val in [("fw_ver", "28.39.1002"), ("device/vendor", "0x15b3"), ("device/device", "0x1021"),
                          ("ports/1/state", "4: ACTIVE"), ("ports/1/phys_state", "5: LinkUp"),
                          ("ports/1/rate", "400 Gb/sec (4X NDR)"), ("ports/1/link_layer", "InfiniBand")]:
            open(f"{p}/{name}", "w").write(val + "\n")
        for c in ["link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
                  "local_link_integrity_errors", "excessive_buffer_overrun_errors"]:
            open(f"{p}/ports/1/counters/{c}", "w").write("0\n")
    os.makedirs(f"{root}/proc/self")
    open(f"{root}/proc/self/mountinfo", "w").write("22 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n")


def series(argv, runs, env=None):
    walls, rss, codes = [], [], set()
    for _ in range(runs):
        w, r, code = run(argv, env)
        if code not in (0, 2):
            sys.exit(f"{' '.join(argv)} exited {code}")
        walls.append(w)
        rss.append(r)
        codes.add(code)
    return walls, rss, codes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/clustermax")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--nvml", default="", help="directory of a libnvidia-ml.so.1 to load (the tests' fake)")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    tmp = tempfile.mkdtemp(prefix="cm-health-bench-")
    try:
        env = dict(os.environ)
        if a.nvml:
            env["LD_LIBRARY_PATH"] = os.path.abspath(a.nvml)
            env["FAKE_NVML_HEALTHY"] = "1"  # the fake's planted faults off: a healthy node
        rows = []
        w, r, codes = series([binary, "health", "--state", f"{tmp}/local.json", "--node", "bench"], a.runs, env)
        rows.append((f"this machine{' + fake NVML (8 GPUs)' if a.nvml else ''}", w, r, codes))
        tree(f"{tmp}/node")
        w, r, codes = series([binary, "health", "--sysroot", f"{tmp}/node", "--kernel-log", "/var/log/kern.log",
                              "--state", f"{tmp}/tree.json", "--node", "bench"], a.runs)
        rows.append(("node tree: 50,000-line kernel log, 200 Xids, 8 IB rails", w, r, codes))
        print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print("| what | runs | median wall | max wall | median peak RSS | exit | share of NHC's 30 s timeout |")
        print("|---|---|---|---|---|---|---|")
        for name, w, r, codes in rows:
            mw = statistics.median(w)
            print(f"| {name} | {len(w)} | {mw * 1000:.0f} ms | {max(w) * 1000:.0f} ms | {statistics.median(r):.1f} MiB | "
                  f"{','.join(map(str, sorted(codes)))} | {mw / NHC_TIMEOUT_S * 100:.2f} % |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
