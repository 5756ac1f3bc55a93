#!/usr/bin/env python3
"""Times the shapes of a `clustermax bench gpu` result through PyTorch on the same GPU and prints
ours, PyTorch and the ratio side by side (scripts/device-check.sh runs it; it needs torch and a GPU).

Same protocol as ours: random inputs, a 256 MiB buffer zeroed before each timed call (L2 flushed),
CUDA events around the call, warm-ups dropped, median (mean for MAMF, as the MAMF finder).

usage: torch_reference.py RESULT.json [--json OUT.json] [--gpu 0]
"""
import argparse
import json
import math
import sys

import torch


def timed(fn, warmup, iters, flush):
    for _ in range(warmup):
        flush.zero_()
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def rand(shape, dtype):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1).to(dtype)


def dense_fn(prec, m, n, k):
    """A (m x k) times W^T (W is n x k): the layout ours uses."""
    if prec in ("bf16", "fp16"):
        dt = torch.bfloat16 if prec == "bf16" else torch.float16
        a, w = rand((m, k), dt), rand((n, k), dt)
        return lambda: torch.matmul(a, w.t())
    if prec in ("tf32", "fp32"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        a, w = rand((m, k), torch.float32), rand((n, k), torch.float32)
        return lambda: torch.matmul(a, w.t())
    if prec == "fp8":
        a, w = rand((m, k), torch.float8_e4m3fn), rand((n, k), torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        return lambda: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return None


def grouped_paths(prec, ms, n, k):
    """The PyTorch ways to run one grouped MoE GEMM; the caller keeps the fastest."""
    dt = torch.bfloat16
    rows = sum(ms)
    paths = {}
    if prec != "bf16" or rows == 0:
        return paths
    a = rand((rows, k), dt)
    w = rand((len(ms), n, k), dt)
    out = torch.empty((rows, n), device="cuda", dtype=dt)
    offs = torch.tensor([sum(ms[: i + 1]) for i in range(len(ms))], device="cuda", dtype=torch.int32)
    if hasattr(torch, "_grouped_mm"):
        wt = w.transpose(-2, -1)
        try:
            torch._grouped_mm(a, wt, offs=offs)
            paths["torch._grouped_mm"] = lambda: torch._grouped_mm(a, wt, offs=offs)
        except Exception as e:  # noqa: BLE001 - a path the build lacks is simply not offered
            print(f"  _grouped_mm unavailable: {e}", file=sys.stderr)
    bounds = []
    r = 0
    for g, m in enumerate(ms):
        if m:
            bounds.append((g, r, r + m))
        r += m

    def loop():
        for g, lo, hi in bounds:
            torch.mm(a[lo:hi], w[g].t(), out=out[lo:hi])

    paths["per-expert torch.mm"] = loop
    # The same loop replayed as one CUDA graph (no launch overhead per expert).
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            loop()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            loop()
        paths["per-expert torch.mm, CUDA graph"] = graph.replay
    except Exception as e:  # noqa: BLE001
        print(f"  CUDA graph capture failed: {e}", file=sys.stderr)
    return paths


def ours_value(row, key):
    for g in row.get("gpus", []):
        if g.get("status") == "ok" and key in g:
            return g[key]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--json")
    ap.add_argument("--gpu", type=int, default=0)
    args = ap.parse_args()
    res = json.load(open(args.result))
    torch.cuda.set_device(args.gpu)
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    rows = []

    def add(metric, ours, theirs, unit, target=None, note=""):
        ratio = ours / theirs if ours and theirs else None
        rows.append({"metric": metric, "ours": ours, "torch": theirs, "unit": unit, "ratio": ratio, "target": target, "note": note})
        r = f"{ratio:.3f}" if ratio else "-"
        print(f"{metric:<52} {ours if ours is not None else '-':>10} {theirs if theirs is not None else '-':>10} {unit:<7} {r:>6}  {target or ''} {note}", flush=True)

    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}", flush=True)
    print(f"{'metric':<52} {'ours':>10} {'torch':>10} {'unit':<7} {'ratio':>6}  target", flush=True)
    suites = res.get("suites", {})
    # Dense GEMM: the same shapes, median TFLOPS.
    for row in suites.get("gemm", {}).get("items", []):
        fn = dense_fn(row["dtype"], row["m"], row["n"], row["k"]) if "na" not in row else None
        if fn is None:
            continue
        t = median(timed(fn, 10, 30, flush))
        theirs = round(row["flops"] / (t / 1e3) / 1e12, 1)
        target = ">= 0.98 x torch" if row["dtype"] == "bf16" else None
        add(row["id"], ours_value(row, "tflops"), theirs, "TFLOPS", target)
    # MAMF: torch on our best-mean shape with the MAMF protocol (50 + 100, mean).
    for prec, per in suites.get("mamf", {}).get("summary", {}).items():
        for g in per:
            sh = g["best_mean"]["shape"]
            fn = dense_fn(prec, sh["m"], sh["n"], sh["k"])
            if fn is None:
                continue
            ts = timed(fn, 50, 100, flush)
            mean = sum(ts) / len(ts)
            theirs = round(2 * sh["m"] * sh["n"] * sh["k"] / (mean / 1e3) / 1e12, 1)
            target = ">= 780 TFLOPS" if prec == "bf16" else ">= 1400 TFLOPS" if prec == "fp8" else None
            add(f"mamf.{prec} best mean at {sh['m']}x{sh['n']}x{sh['k']} (GPU {g['gpu']})", g["best_mean"]["tflops"], theirs, "TFLOPS", target)
    # Grouped GEMM: the best PyTorch path per item.
    ratios = []
    for row in suites.get("grouped-gemm", {}).get("items", []):
        if "na" in row or row["dtype"] != "bf16":
            continue
        paths = grouped_paths(row["dtype"], row["m"], row["n"], row["k"])
        best, best_name = None, ""
        for name, fn in paths.items():
            try:
                t = median(timed(fn, 3, 10, flush))
            except Exception as e:  # noqa: BLE001
                print(f"  {name} failed on {row['id']}: {e}", file=sys.stderr)
                continue
            tf = row["flops"] / (t / 1e3) / 1e12
            if best is None or tf > best:
                best, best_name = tf, name
        ours = ours_value(row, "tflops")
        if best and ours:
            ratios.append(ours / best)
        add(row["id"], ours, round(best, 2) if best else None, "TFLOPS", ">= 0.95 x best torch", best_name)
        torch.cuda.empty_cache()
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"grouped-gemm bf16: geometric mean ratio {gm:.3f} over {len(ratios)} shapes, min {min(ratios):.3f}, max {max(ratios):.3f}", flush=True)
        rows.append({"metric": "grouped-gemm.bf16.geomean", "ratio": gm, "min": min(ratios), "max": max(ratios), "count": len(ratios)})
    # Copy bandwidth: 1 GiB of float32, bytes read plus written.
    for row in suites.get("membw", {}).get("items", []):
        if row["op"] not in ("copy", "memcpy"):
            continue
        n = row["bytes"] // 4
        a = rand((n,), torch.float32)
        b = torch.empty_like(a)
        t = median(timed(lambda: b.copy_(a), 2, 20, flush))
        theirs = round(2 * n * 4 / (t / 1e3) / 1e9, 1)
        add(row["id"], ours_value(row, "gbps"), theirs, "GB/s", ">= 4000 GB/s")
        del a, b
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
