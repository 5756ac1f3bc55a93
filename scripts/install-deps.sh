#!/usr/bin/env bash
# Installs everything clustermax needs to build and test, from Debian's packages only.
# Safe to run repeatedly; skips apt when every package is already present.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libpugixml-dev rapidjson-dev
  # the replay memo's answer digests (XXH3-128, header-only use); jemalloc, linked into the shipped binary
  libxxhash-dev libjemalloc-dev
  # the fan-out's bundles travel deflated (zlib)
  zlib1g-dev
  libgtest-dev libgmock-dev
  # benchmarks: io_uring for storage, libcurl's header for S3 (the library is loaded at run time), inih for ~/.aws/credentials;
  # GNU time measures the bench scripts' commands (peak RSS of the command, not of the Python starting it)
  liburing-dev libcurl4-openssl-dev libinih-dev time
  # bench net: verbs' and PMIx's headers (both libraries are loaded at run time, never linked)
  libibverbs-dev libpmix-dev
  # rating: the attested assessment file (YAML); the results store (SQLite)
  libyaml-cpp-dev libsqlite3-dev libsqlitecpp-dev
  # dashboard: Boost.Beast (header-only) parses requests for serve; a real headless Chromium and curl in the tests
  libboost-dev chromium fonts-dejavu-core curl
  # bench train runs its built-in transformer on Debian's PyTorch (CPU, gloo) in the tests; bench
  # lifecycle times `import torch` with it and installs a wheel into a fresh venv (python3-venv)
  python3-torch python3-venv
  # tests: real tools whose output the parsers read
  pciutils kmod sudo procps util-linux
  # tests: the shells the completion scripts are for; man-db renders the man page
  bash-completion zsh man-db groff-base
  # exports: promtool checks the Prometheus text, a real Prometheus scrapes serve's /metrics,
  # node_exporter's textfile collector reads --textfile
  prometheus prometheus-node-exporter
)
# Kubernetes: the k8s.* collectors run kubectl; the tests drive it against a recorded API server.
# Any kubectl on PATH will do (cloud images ship one); otherwise Debian's client.
command -v kubectl >/dev/null 2>&1 || pkgs+=(kubernetes-client)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
