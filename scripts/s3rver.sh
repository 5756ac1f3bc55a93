#!/usr/bin/env bash
# s3rver (npm) for the S3 tests and bench/: a real S3-compatible server on loopback.
#   scripts/s3rver.sh install              npm install s3rver@3.7.1 into .cache/s3rver (once)
#   scripts/s3rver.sh start DIR PORT       start it on 127.0.0.1:PORT with bucket ci-bucket; PID in DIR/s3rver.pid
#   scripts/s3rver.sh stop DIR             stop it by PID
# Node 20's OpenSSL 3 lacks DES, which s3rver uses for ListObjectsV2 continuation tokens: without
# --openssl-legacy-provider a truncated listing answers 500 InternalError.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.cache/s3rver"
bin="$dest/node_modules/.bin/s3rver"
case "${1:-}" in
  install)
    if [ -x "$bin" ]; then exit 0; fi
    if ! command -v npm >/dev/null; then
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
    fi
    mkdir -p "$dest"
    (cd "$dest" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --no-audit --no-fund --silent s3rver@3.7.1)
    ;;
  start)
    dir=$2 port=$3
    mkdir -p "$dir/data"
    NODE_OPTIONS=--openssl-legacy-provider "$bin" -d "$dir/data" -a 127.0.0.1 -p "$port" -s --configure-bucket ci-bucket \
      >"$dir/s3rver.log" 2>&1 &
    echo $! >"$dir/s3rver.pid"
    for _ in $(seq 100); do
      curl -s -o /dev/null "http://127.0.0.1:$port/" && exit 0
      sleep 0.1
    done
    echo "s3rver did not start; log: $dir/s3rver.log" >&2; exit 1
    ;;
  stop)
    dir=$2
    [ -f "$dir/s3rver.pid" ] && kill "$(cat "$dir/s3rver.pid")" 2>/dev/null || true
    rm -f "$dir/s3rver.pid"
    ;;
  *) echo "usage: $0 install | start DIR PORT | stop DIR" >&2; exit 1 ;;
esac
