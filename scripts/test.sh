#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is needed, builds twice and runs
# every test once, within about an hour on 2 cores:
#   1. the release build (gcc, portable, the CUDA helper where nvcc is): the shipped binary against
#      the real Slurm cluster (slurm_fleet) and in a minimal Debian root (portable_minroot);
#   2. one clang build with AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage
#      instrumentation (-DCLUSTERMAX_FUZZ=ON, -O1): every unit test, then every fuzz target's short
#      run and its regression inputs.
# Each stage line carries the time since the start, so a CI log shows where the hour goes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/s3rver.sh install   # the real S3-compatible server the S3 tests start (npm)
bash scripts/export-consumers.sh install  # a JUnit XML parser and a JSON Schema validator with the SARIF schema (npm)
bash scripts/slurm-ci.sh install # Debian's Slurm and munge: the fleet tests start a 3-node cluster
bash scripts/minroot.sh install  # a minimal Debian root (debootstrap) for the portable-binary test
bash scripts/fuzz.sh deps       # clang and libFuzzer for the sanitizer build
jobs=$(nproc)
# The CUDA helper (clustermax-gpu) is compiled wherever the CUDA toolkit is installed.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
stage() { echo "== $* [$(date -u +%H:%M:%S), $((SECONDS / 60)) min $((SECONDS % 60)) s in]"; }

stage "release build: the shipped binaries, the real Slurm cluster, the minimal root"
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLUSTERMAX_TESTS=ON -DCLUSTERMAX_UNIT_TESTS=OFF \
  "${launcher[@]}" >/dev/null
ninja -C build-release -j "$jobs"
stage "release tests"
(cd build-release && ctest --output-on-failure -j "$jobs" --timeout 600)

stage "ASan+UBSan+libFuzzer build (clang -O1)"
# The CUDA helper is built once, above: no test runs it (there is no GPU), and nvcc's host code
# is not what the sanitizers are for.
CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" \
  -DCLUSTERMAX_FUZZ=ON -DCLUSTERMAX_TESTS=ON -DCLUSTERMAX_GPU=OFF "${launcher[@]}" >/dev/null
ninja -C build-san -j "$jobs"
stage "ASan+UBSan unit tests, fuzz targets' short runs and regression inputs"
# slurm_fleet ran above with the shipped binary; the portable test needs the portable build.
(cd build-san && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j "$jobs" --timeout 300 -E '^(slurm_fleet|portable_minroot)$')
stage "done"
