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
#   scripts/device-check.sh OUTDIR [STEP...]
#                                       on the GPU machine: the steps named (default: all of them),
#                                       results under OUTDIR. Steps: build (the helper here; else
#                                       the carried one), audit, gpu (bench gpu and PyTorch on the
#                                       same shapes), nccl, train (bench train --local), burnin
#                                       (clustermax burnin --local --gpu), load (a model's files
#                                       into GPU memory: the helper's load item, cold and warm).
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
    { grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' || true; } |
    while read -r lib; do cp -L "$lib" "$carry/lib/"; done  # none when the binary links them statically
  command -v patchelf >/dev/null || apt-get install -y patchelf >/dev/null
  patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$carry/clustermax"
  cp -r /usr/include/nlohmann "$carry/include/"
  mkdir -p .git/info && { grep -qx "/$carry/" .git/info/exclude 2>/dev/null || echo "/$carry/" >> .git/info/exclude; }
  du -sh "$carry"
  exit 0
fi

out=${1:?usage: scripts/device-check.sh OUTDIR [STEP...] | --prepare}
shift
steps=" ${*:-build audit gpu nccl train burnin load} "
want() { [[ "$steps" == *" $1 "* ]]; }
mkdir -p "$out"
cm="$PWD/$carry/clustermax"
log="$out/device-log.txt"
step() { echo "== $* ($(date +%T))" | tee -a "$log"; }

step "machine"
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi boost-slider -l; echo "boost-slider rc=$?"; nvcc --version | tail -2;
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; "$cm" --version; } >>"$log" 2>&1

helper="$PWD/$carry/clustermax-gpu"
if want build; then
step "build clustermax-gpu here (sm_90a)"
if cmake -S src/gpubench -B /tmp/cm-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
     -DJSON_INCLUDE_DIR="$PWD/$carry/include" >>"$log" 2>&1 && cmake --build /tmp/cm-gpu >>"$log" 2>&1; then
  helper=/tmp/cm-gpu/clustermax-gpu
  echo "built $helper" | tee -a "$log"
else
  echo "build failed (see log); using the carried helper" | tee -a "$log"
fi
fi
# The carried helper finds cuBLAS in the machine's CUDA; built here only when that fails.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! "$helper" info >/dev/null 2>>"$log" && ! want build; then
  echo "the carried helper does not start here; building it" | tee -a "$log"
  cmake -S src/gpubench -B /tmp/cm-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DJSON_INCLUDE_DIR="$PWD/$carry/include" >>"$log" 2>&1 && cmake --build /tmp/cm-gpu >>"$log" 2>&1 &&
    helper=/tmp/cm-gpu/clustermax-gpu
fi
"$helper" info | tee -a "$log"

if want audit; then
step "node audit, evidence bundle recorded"
timeout 120 "$cm" audit --vm --record "$out/bundle.json" --out /tmp/cm-audit --json >"$out/audit-report.json" 2>>"$log"
echo "audit rc=$?" | tee -a "$log"
timeout 60 "$cm" audit --vm --replay "$out/bundle.json" --out /tmp/cm-replay -v >>"$log" 2>&1
echo "replay rc=$?" | tee -a "$log"
fi

if want gpu; then
step "bench gpu, every suite, quick mode"
timeout 400 "$cm" bench gpu --helper "$helper" --out /tmp/cm-bench --warmup 10 --exit-zero >"$out/gpu-table.txt" 2>>"$log"
echo "bench rc=$?" | tee -a "$log"
cp /tmp/cm-bench/bench/gpu.json "$out/gpu.json" 2>>"$log"
cat "$out/gpu-table.txt"

step "PyTorch on the same shapes"
PYTHONUNBUFFERED=1 timeout 200 python3 scripts/torch_reference.py "$out/gpu.json" --json "$out/torch.json" 2>>"$log" | tee "$out/compare.txt"
echo "torch rc=$?" | tee -a "$log"
fi
if want nccl; then
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
fi
if want train; then
step "bench train --local: the built-in transformer (builtin-350m, bf16), one rank per GPU, no Slurm"
# bench train's own launcher (the ranks side by side, torchrun's variables), log reader and
# summary; MFU against the GPU model's dense bf16 peak (data/gpu-peaks.json).
timeout 420 "$cm" bench train --local --recipe builtin-350m --steps 30 --warmup 5 --deterministic \
  --out /tmp/cm-train --exit-zero >"$out/train-table.txt" 2>>"$log"
echo "train rc=$?" | tee -a "$log"
cp /tmp/cm-train/bench/train.json "$out/train.json" 2>>"$log"
cat "$out/train-table.txt"
fi

if want burnin; then
step "clustermax burnin --local --gpu: 60 s of BF16 GEMM + triad on every GPU, NVML telemetry"
timeout 300 "$cm" burnin --local --gpu --helper "$helper" --duration 60 --out /tmp/cm-burnin --exit-zero \
  >"$out/burnin-table.txt" 2>>"$log"
echo "burnin rc=$?" | tee -a "$log"
cp /tmp/cm-burnin/bench/burnin.json "$out/burnin.json" 2>>"$log"
cat "$out/burnin-table.txt"
# The helper's own lines for one short run: the fixture the node side's tests replay.
timeout 120 "$helper" run --job-json '{"device":0,"warmup_s":0,"items":[{"kind":"burnin","id":"burnin","n":8192,"mem_mb":3072,"seed":1,"seconds":5}]}' \
  >"$out/burnin-helper-lines.jsonl" 2>>"$log"
echo "burnin helper rc=$?" | tee -a "$log"
fi

if want load; then
step "model load into GPU memory: the helper's load item over 4 files of 1 GiB (cold, then warm), dd for reference"
mdir=$(mktemp -d /var/tmp/cm-model.XXXXXX)
for k in 0 1 2 3; do head -c 1073741824 /dev/urandom >"$mdir/model-0000$k-of-00004.safetensors"; done
sync
df -hT "$mdir" | tee -a "$log"
job=$(printf '{"device":0,"warmup_s":0,"items":[{"kind":"load","id":"cold","path":"%s","threads":8,"drop_cache":true},{"kind":"load","id":"warm","path":"%s","threads":8}]}' "$mdir" "$mdir")
timeout 300 "$helper" run --job-json "$job" >"$out/load-helper-lines.jsonl" 2>>"$log"
echo "load rc=$?" | tee -a "$log"
# Reference: the same files read cold by one plain reader into a host buffer (the page cache
# dropped first, as the helper's cold item does): what storage gives before any copy to the GPU.
python3 - "$mdir" <<'PY' | tee -a "$log" | tee "$out/load-reference.txt"
import os, sys, time
d = sys.argv[1]; files = sorted(os.path.join(d, f) for f in os.listdir(d))
for f in files:
    fd = os.open(f, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
buf = bytearray(16 << 20); total = 0; t0 = time.perf_counter()
for f in files:
    with open(f, "rb", buffering=0) as fh:
        while (n := fh.readinto(buf)): total += n
dt = time.perf_counter() - t0
print(f"reference cold read, one reader: {total/1e9:.2f} GB in {dt:.3f} s = {total/dt/1e9:.2f} GB/s")
PY
python3 - "$out/load-helper-lines.jsonl" <<'PY' | tee "$out/load-table.txt"
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j.get("type") == "device": print("device:", j["device"]["name"])
    if j.get("type") == "result":
        if "error" in j: print(j["id"], "error:", j["error"]); continue
        print(f"{j['id']:<5} {j['bytes']/1e9:.2f} GB in {j['seconds']:.3f} s = {j['gbps']:.2f} GB/s, "
              f"{j['checked_pieces']} pieces checked on the GPU, {j['bad_pieces']} bad, wrapped {j['wrapped']}")
PY
# The same files through bench lifecycle's node side (what each Slurm task of
# `bench lifecycle --model-path DIR --model-to-gpu` runs): host cold/warm, then the GPU through the helper.
SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_LOCALID=0 timeout 300 "$cm" bench lifecycle --rank-job \
  "$(printf '{"kind":"node","model":{"path":"%s","threads":8,"to_gpu":true,"helper":"%s"}}' "$mdir" "$helper")" \
  >"$out/lifecycle-node.txt" 2>>"$log"
echo "lifecycle node rc=$?" | tee -a "$log"
python3 -c 'import json,sys; print(json.dumps(json.loads("".join(l.rstrip("\n").split(" ",4)[4] for l in open(sys.argv[1]) if l.count(" ")>=4)), indent=1))' \
  "$out/lifecycle-node.txt" 2>&1 | tee "$out/lifecycle-node.json" | head -60
rm -rf "$mdir"
fi
step "done"
