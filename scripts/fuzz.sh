#!/usr/bin/env bash
# The libFuzzer suite (fuzz/README.md): builds the fuzz configuration (clang, -DCLUSTERMAX_FUZZ=ON:
# every library with -fsanitize=fuzzer-no-link,address,undefined, each target with libFuzzer) into
# build-fuzz, then
#
#   scripts/fuzz.sh ci                      the ctest short runs: every target fuzzes for
#                                           CLUSTERMAX_FUZZ_SECONDS (15 s) from the fixtures, and
#                                           every file in fuzz/regressions/<target>/ is replayed
#   scripts/fuzz.sh long [SECONDS] [TARGET] a long run (default 600 s) of one target or of all of
#                                           them in turn, with a persistent corpus under
#                                           build-fuzz/fuzz/long/<target>/corpus; prints each
#                                           target's executions and coverage (libFuzzer's last
#                                           "#N DONE cov: ... ft: ..." line) and any crash file
#   scripts/fuzz.sh list                    the target names
#   scripts/fuzz.sh deps                    only installs clang and libFuzzer (scripts/test.sh's
#                                           sanitizer stage builds this configuration with the tests)
#
# Installs clang and libclang-rt-14-dev (Debian) when missing. Crashes land in
# build-fuzz/fuzz/{work,long}/<target>/artifacts/; keep each one under fuzz/regressions/<target>/
# once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-ci}
targets=(parsers dcgmi smi_xml slurm_text versions minimums assessment bundle collect report web export k8s net_interop infer_stream train_log reliability)
if [ "$mode" = list ]; then printf '%s\n' "${targets[@]}"; exit 0; fi

need=()
command -v clang++ >/dev/null || need+=(clang)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
if ((${#need[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
[ "$mode" = deps ] && exit 0

jobs=$(nproc)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLUSTERMAX_FUZZ=ON \
  -DCLUSTERMAX_TESTS=OFF -DCLUSTERMAX_GPU=OFF "${launcher[@]}" >/dev/null
ninja -C build-fuzz -j "$jobs" fuzz_targets

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
case "$mode" in
  ci)
    (cd build-fuzz && ctest --output-on-failure -j "$jobs")
    ;;
  long)
    seconds=${2:-600}
    [ $# -ge 3 ] && targets=("$3")
    status=0
    for t in "${targets[@]}"; do
      dir=build-fuzz/fuzz/long/$t
      mkdir -p "$dir/corpus" "$dir/artifacts"
      # The same seeds as the ctest run (fuzz/corpus/<t> and the fixture directories).
      mapfile -t seeds < <(grep . "build-fuzz/fuzz/seeds/$t.txt")
      echo "== $t: ${seconds} s"
      rc=0
      "build-fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/" "$dir/corpus" "${seeds[@]}" >"$dir/log" 2>&1 || rc=$?
      grep -E '^#[0-9]+ +DONE' "$dir/log" | tail -1 || true
      grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec' "$dir/log" || true
      if [ $rc -ne 0 ]; then
        status=1
        echo "   FAILED (exit $rc): $(grep -E '^SUMMARY|Test unit written' "$dir/log" | tr '\n' ' ')"
        echo "   log: $dir/log"
      fi
    done
    exit $status
    ;;
  *)
    echo "usage: scripts/fuzz.sh [ci | long [SECONDS] [TARGET] | list | deps]" >&2
    exit 64
    ;;
esac
