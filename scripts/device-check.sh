#!/usr/bin/env bash
# The GPU checks in one script, for a machine with an NVIDIA GPU (the `device` tool of this
# project, or any GPU node). It builds clustermax-gpu there, runs every `bench gpu` suite in quick
# mode with the correctness checks, times the same shapes through PyTorch, records an evidence
# bundle of the machine with the node audit, runs bench net's NCCL path (the helper's nccl
# command, one rank per GPU, data checked), and prints the tables.
#
#   scripts/device-check.sh --prepare   on the build machine: fills .devcarry/ with the stripped
#                                       clustermax binary, the shared libraries it needs, the
#                                       nlohmann headers and a prebuilt helper (fallback)
#   scripts/device-check.sh OUTDIR      on the GPU machine: everything, results under OUTDIR
#
# Needs on the GPU machine: the NVIDIA driver, nvcc and cmake (else the carried helper is used),
# python3 with torch for the comparison. Budget: about 6 minutes on one H200.
set -uo pipefail
cd "$(dirname "$0")/.."
carry=.devcarry

if [ "${1:-}" = "--prepare" ]; then
  set -e
  export CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc}
  cmake -S . -B build -G Ninja >/dev/null
  ninja -C build clustermax clustermax-gpu
  rm -rf "$carry" && mkdir -p "$carry/lib" "$carry/include"
  strip -o "$carry/clustermax" build/clustermax
  cp build/clustermax-gpu "$carry/clustermax-gpu"
  # Every shared library outside glibc and the C++ runtime (the GPU machine's are as new or
  # newer), found through the binary's own RUNPATH so that the programs it starts (nvidia-smi,
  # the helper) keep their own libraries.
  ldd build/clustermax | awk '/=> \//{print $3}' |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$carry/lib/"; done
  command -v patchelf >/dev/null || apt-get install -y patchelf >/dev/null
  patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$carry/clustermax"
  cp -r /usr/include/nlohmann "$carry/include/"
  grep -qx "/$carry/" .git/info/exclude 2>/dev/null || echo "/$carry/" >> .git/info/exclude
  du -sh "$carry"
  exit 0
fi

out=${1:?usage: scripts/device-check.sh OUTDIR | --prepare}
mkdir -p "$out"
cm="$PWD/$carry/clustermax"
log="$out/device-log.txt"
step() { echo "== $* ($(date +%T))" | tee -a "$log"; }

step "machine"
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi boost-slider -l; echo "boost-slider rc=$?"; nvcc --version | tail -2;
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; "$cm" --version; } >>"$log" 2>&1

step "build clustermax-gpu here (sm_90a)"
helper="$PWD/$carry/clustermax-gpu"
if cmake -S src/gpubench -B /tmp/cm-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
     -DJSON_INCLUDE_DIR="$PWD/$carry/include" >>"$log" 2>&1 && cmake --build /tmp/cm-gpu >>"$log" 2>&1; then
  helper=/tmp/cm-gpu/clustermax-gpu
  echo "built $helper" | tee -a "$log"
else
  echo "build failed (see log); using the carried helper" | tee -a "$log"
fi
"$helper" info | tee -a "$log"

step "node audit, evidence bundle recorded"
timeout 120 "$cm" audit --vm --record "$out/bundle.json" --out /tmp/cm-audit --json >"$out/audit-report.json" 2>>"$log"
echo "audit rc=$?" | tee -a "$log"
timeout 60 "$cm" audit --vm --replay "$out/bundle.json" --out /tmp/cm-replay -v >>"$log" 2>&1
echo "replay rc=$?" | tee -a "$log"

step "bench gpu, every suite, quick mode"
timeout 400 "$cm" bench gpu --helper "$helper" --out /tmp/cm-bench --warmup 10 --exit-zero >"$out/gpu-table.txt" 2>>"$log"
echo "bench rc=$?" | tee -a "$log"
cp /tmp/cm-bench/bench/gpu.json "$out/gpu.json" 2>>"$log"
cat "$out/gpu-table.txt"

step "PyTorch on the same shapes"
PYTHONUNBUFFERED=1 timeout 200 python3 scripts/torch_reference.py "$out/gpu.json" --json "$out/torch.json" 2>>"$log" | tee "$out/compare.txt"
echo "torch rc=$?" | tee -a "$log"
step "NCCL backend of bench net: the helper's nccl command, one rank per GPU of this machine"
# No Slurm here: the ranks are started side by side with their place given in the job. With one GPU
# the collectives run and are checked, but there is no bus to measure: busbw needs two ranks or more.
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
rdv=$(mktemp -d /tmp/cm-nccl.XXXXXX)
for r in $(seq 0 $((ngpu - 1))); do
  job=$(printf '{"rank":%d,"world":%d,"local_rank":%d,"rendezvous":"%s","collectives":["all_reduce","all_gather","reduce_scatter","alltoall","broadcast","reduce","sendrecv"],"sizes":[8,65536,16777216,1073741824],"iters":20,"warmup":5,"check":true}' "$r" "$ngpu" "$r" "$rdv")
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_DEBUG_FILE="$out/nccl-debug-$r.log" \
    timeout 300 "$helper" nccl --job-json "$job" >"$out/nccl-rank-$r.json" 2>>"$log" &
done
wait
echo "nccl ranks: $ngpu" | tee -a "$log"
python3 - "$out/nccl-rank-0.json" "$ngpu" <<'PY' | tee "$out/nccl-table.txt"
import json, sys
line = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
n = int(sys.argv[2])
if line.get("type") != "nccl-result":
    print("NCCL:", line.get("error", line)); sys.exit(0)
print(f"NCCL {line['nccl_version']} on {line['device']}, {n} rank(s)")
print(f"{'collective':<15} {'bytes':>12} {'oop us':>10} {'ip us':>10} {'wrong':>6}")
for t in line["collectives"]:
    for r in t["rows"]:
        o, i = r["out_of_place"], r["in_place"]
        print(f"{t['collective']:<15} {r['bytes']:>12} {o['time_us']:>10.1f} {i['time_us']:>10.1f} {str(o['wrong'])+'/'+str(i['wrong']):>6}")
if n < 2:
    print("one GPU: no bus bandwidth to measure (busbw needs two ranks); times and the data check only")
PY
grep -h "Bytes -> Algo" "$out"/nccl-debug-0.log 2>/dev/null | sed -n 1,5p | tee -a "$log"
step "bench train's built-in transformer on one GPU (builtin-350m's shape, bf16, 20 steps)"
# No Slurm here either: one rank started directly. The log lines are the ones bench train reads;
# the table's MFU is against the H200's dense bf16 peak (989.4 TFLOP/s, data/gpu-peaks.json).
RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 timeout 300 \
  python3 data/train/clustermax_train.py --layers 24 --dim 1024 --heads 16 --ffn 4096 --vocab 32768 \
  --seq 2048 --batch 8 --steps 20 --warmup-steps 5 --dtype bf16 >"$out/train.log" 2>>"$log"
echo "train rc=$?" | tee -a "$log"
python3 - "$out/train.log" <<'PY' | tee "$out/train-table.txt"
import json, statistics, sys
ev = [json.loads(l.split("CMAX-TRAIN ", 1)[1]) for l in open(sys.argv[1]) if "CMAX-TRAIN " in l]
steps = [e for e in ev if e["event"] == "step" and e["step"] > 5]
if not steps:
    print("train: no timed step", [e for e in ev if e["event"] == "error"]); sys.exit(0)
L, d, f, V, T = 24, 1024, 4096, 32768, 2048
flops = 6 * (L * (4 * d * d + 2 * d * f + 2 * d) + d + d * V) + 12 * L * d * T
tps = statistics.median(e["tokens"] / e["step_s"] for e in steps)
print(f"tokens/s {tps:,.0f}  TFLOP/s {tps * flops / 1e12:.1f}  MFU {tps * flops / 1e12 / 989.4:.3f}  "
      f"loss {steps[0]['loss']:.3f} -> {steps[-1]['loss']:.3f}")
PY
step "done"
