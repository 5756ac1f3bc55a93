#!/usr/bin/env python3
"""Dashboard benchmarks (prints a table; never a timed unit test).

1. A store of 100 providers with 10 runs each (a rating and an audit per run, ingested in one
   `clustermax db ingest`), then `clustermax serve`: server time of the leaderboard page (GET /),
   median and p90 of 50 requests, and of one run page.
2. The static page (`clustermax report --html`) of a 64-node fleet audit with the H200 benchmark
   result: its size (target under 2 MB) and the time to write it.

Usage: bench/dashboard_bench.py [--binary build/clustermax] [--providers 100] [--runs 10]
"""
import argparse, copy, json, os, statistics, subprocess, sys, tempfile, time, urllib.request

from audit_bench import run  # wall time and peak RSS of one command (same measurement for every bench)
from storage_compare import free_port  # a loopback port nothing listens on

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = ["PLATINUM", "GOLD", "SILVER", "BRONZE", "PARTICIPATION_RIBBON", "UNDERPERFORMING"]


def fleet_report(nodes):
    r = json.load(open(os.path.join(ROOT, "tests", "golden", "debian12-container-cpu.json")))
    names = [f"gpu-node-{i:03d}" for i in range(nodes)]
    r["nodes"] = names
    r["fleet"] = {"nodes_expected": nodes, "nodes_returned": nodes, "unreachable": [],
                  "matrix": [{"check": x["id"], "scope": "node", "verdicts": {n: x["status"] for n in names}} for x in r["results"]]}
    for x in r["results"]:
        x["nodes"] = [dict(node=n, status=x["status"], reason=x["reason"], message=x["message"], observed=x["observed"],
                           expected=x["expected"], details=[], severity=x["severity"]) for n in names]
        x["nodes_total"] = nodes
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/clustermax")
    ap.add_argument("--providers", type=int, default=100)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    tmp = tempfile.mkdtemp(prefix="cm-dash-")
    base = json.load(open(os.path.join(ROOT, "tests", "golden", "debian12-container-cpu.json")))
    rating = {"kind": "clustermax.rating", "schema_version": 1, "edition": "3.0", "categories": [], "inputs": [], "gates": {},
              "decided_by": "bench", "tier_rule": "", "next_tier": None, "unknown_criteria": [], "catalog": {"version": 1}}
    paths = []
    for p in range(a.providers):
        for r in range(a.runs):
            d = os.path.join(tmp, f"p{p}r{r}")
            os.makedirs(d)
            rep = copy.deepcopy(base)
            rep["collected_at"] = f"2026-11-{1 + r:02d}T00:00:00Z"
            rep["results"][p % len(rep["results"])]["status"] = "FAIL"  # every run differs
            rep["results"][r % len(rep["results"])]["message"] = f"run {r}"
            json.dump(rep, open(os.path.join(d, "report.json"), "w"))
            rt = dict(rating, provider=f"provider-{p:03d}", cluster="c1", tier=TIERS[(p + r) % len(TIERS)],
                      categories=[{"id": "security", "score": ((p * 7 + r) % 100) / 100}])
            rf = os.path.join(tmp, f"rating-p{p}r{r}.json")
            json.dump(rt, open(rf, "w"))
            paths += [d, rf]
    db = os.path.join(tmp, "r.db")
    t0 = time.time()
    out = subprocess.run([binary, "db", "--db", db, "ingest", "--provider", "bench"] + paths, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr)
    ingest_s = time.time() - t0
    port = free_port()
    server = subprocess.Popen([binary, "serve", "--db", db, "--listen", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/api/leaderboard").read()
            break
        except OSError:
            time.sleep(0.1)
    def timed(path, n):
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            body = urllib.request.urlopen(url + path).read()
            ts.append((time.perf_counter() - t) * 1000)
        ts.sort()
        return statistics.median(ts), ts[int(0.9 * len(ts)) - 1], len(body)
    board = timed("/", 50)
    run_page = timed("/run/1", 20)
    server.terminate()
    server.wait()
    # The static page of a 64-node fleet audit with the H200 GPU result.
    d = os.path.join(tmp, "fleet64")
    os.makedirs(os.path.join(d, "bench"))
    json.dump(fleet_report(64), open(os.path.join(d, "report.json"), "w"))
    with open(os.path.join(d, "bench", "gpu.json"), "w") as f:
        f.write(open(os.path.join(ROOT, "tests", "fixtures", "gpu", "h200-bench-gpu-2026-11-30.json")).read())
    page = os.path.join(tmp, "fleet64.html")
    wall, rss, code = run([binary, "report", "--html", page, d])
    size = os.path.getsize(page)
    print(f"{'measurement':<58} {'value':>12}  target")
    print(f"{'ingest ' + str(len(paths)) + ' inputs (one process)':<58} {ingest_s:>10.2f} s")
    print(f"{'GET / leaderboard, ' + str(a.providers) + ' providers x ' + str(a.runs) + ' runs, median':<58} {board[0]:>9.1f} ms  < 200 ms")
    print(f"{'GET / p90':<58} {board[1]:>9.1f} ms")
    print(f"{'GET / page size':<58} {board[2] / 1024:>9.1f} KiB")
    print(f"{'GET /run/1, median':<58} {run_page[0]:>9.1f} ms")
    print(f"{'static page, 64-node fleet audit + GPU result: size':<58} {size / 1e6:>9.2f} MB  < 2 MB")
    print(f"{'static page: wall time, peak RSS':<58} {wall:>8.2f} s {rss:>5.0f} MiB")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
