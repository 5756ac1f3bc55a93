#!/usr/bin/env bash
# Fails when a binary meant to start on any Linux with glibc >= FLOOR needs more than that:
# a GLIBC symbol version newer than FLOOR, a libstdc++/libgcc symbol version (they are linked
# statically), or a shared library other than glibc's own.
# Usage: scripts/check-portable.sh [--floor 2.34] BINARY...
set -euo pipefail
floor=2.34
if [ "${1:-}" = "--floor" ]; then floor=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: $0 [--floor X.Y] BINARY..." >&2; exit 64; }
# glibc's libraries (libpthread, libdl and librt are inside libc.so.6 since 2.34).
allowed='^(libc\.so\.6|libm\.so\.6|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
status=0
for bin in "$@"; do
  name=$(basename "$bin")
  needed=$(readelf -dW "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  bad_libs=$(grep -Ev "$allowed" <<<"$needed" || true)
  versions=$(readelf --dyn-syms -W "$bin" | grep -o '@[A-Z_]*[0-9.]*' | sort -u || true)
  glibc=$(grep -o 'GLIBC_[0-9.]*' <<<"$versions" | sed 's/GLIBC_//' | sort -V | tail -1)
  others=$(grep -Ev '@GLIBC_' <<<"$versions" | grep -E '@(GLIBCXX|CXXABI|GCC)_' || true)
  if [ -n "$bad_libs" ]; then
    echo "$name: needs shared libraries other than glibc's: $(tr '\n' ' ' <<<"$bad_libs")" >&2
    status=1
  fi
  if [ -n "$others" ]; then
    echo "$name: needs libstdc++/libgcc symbols (they should be static): $(tr '\n' ' ' <<<"$others" | cut -c1-300)" >&2
    status=1
  fi
  if [ -n "$glibc" ] && [ "$(printf '%s\n%s\n' "$glibc" "$floor" | sort -V | tail -1)" != "$floor" ]; then
    newer=$(readelf --dyn-syms -W "$bin" | awk '{print $8}' | grep '@GLIBC_' | while read -r s; do
      v=${s##*@GLIBC_}; [ "$(printf '%s\n%s\n' "$v" "$floor" | sort -V | tail -1)" != "$floor" ] && echo "$s"; done | sort -u | tr '\n' ' ' || true)
    echo "$name: needs GLIBC_$glibc, newer than the floor $floor: $newer" >&2
    status=1
  fi
  if [ $status -eq 0 ]; then
    echo "$name: portable: glibc >= ${glibc:-any}, needs $(tr '\n' ' ' <<<"$needed")"
  fi
done
exit $status
