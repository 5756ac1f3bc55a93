#!/usr/bin/env bash
# A minimal Debian 12 root (debootstrap --variant=minbase: no compiler, no -dev package, no curl)
# for the portability test (scripts/portable-test.sh), cached in .cache/minroot-bookworm.
#   scripts/minroot.sh install   install debootstrap and make the root if it is not there (root only)
#   scripts/minroot.sh path      print the root's path when it is there (exit 1 when not)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD/.cache/minroot-bookworm
mirror=${CLUSTERMAX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
case ${1:-} in
  install)
    if [ -x "$root/bin/sh" ]; then exit 0; fi
    if [ "$(id -u)" -ne 0 ]; then
      echo "minroot: debootstrap needs root; the portability test will be skipped" >&2
      exit 0
    fi
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
    rm -rf "$root.tmp"
    mkdir -p "$(dirname "$root")"
    echo "minroot: debootstrap --variant=minbase bookworm from $mirror (a few minutes, once)" >&2
    debootstrap --variant=minbase bookworm "$root.tmp" "$mirror" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
    mv "$root.tmp" "$root"
    ;;
  path)
    [ -x "$root/bin/sh" ] && echo "$root"
    ;;
  *)
    echo "usage: $0 install|path" >&2
    exit 64
    ;;
esac
