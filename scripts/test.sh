#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is needed, builds, and runs every
# test twice: a normal build, then a build with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/s3rver.sh install   # the real S3-compatible server the S3 tests start (npm)
bash scripts/export-consumers.sh install  # a JUnit XML parser and a JSON Schema validator with the SARIF schema (npm)
bash scripts/slurm-ci.sh install # Debian's Slurm and munge: the fleet tests start a 3-node cluster
bash scripts/minroot.sh install  # a minimal Debian root (debootstrap) for the portable-binary test
jobs=$(nproc)
# The CUDA helper (clustermax-gpu) is compiled wherever the CUDA toolkit is installed.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi

build_and_test() {
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  ninja -C "$dir" -j "$jobs"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 300)
}

echo "== release build and tests"
build_and_test build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLUSTERMAX_TESTS=ON
echo "== ASan+UBSan build and tests"
# The CUDA helper is built once, above: no test runs it (there is no GPU), and nvcc's host code
# is not what the sanitizers are for.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build_and_test build-asan -DCMAKE_BUILD_TYPE=Debug -DCLUSTERMAX_SANITIZE=ON -DCLUSTERMAX_TESTS=ON -DCLUSTERMAX_GPU=OFF
echo "== libFuzzer targets: short runs and regression inputs"; bash scripts/fuzz.sh ci
