#!/usr/bin/env bash
# Fails when a binary meant to start on any Linux with glibc >= FLOOR needs more than that:
# a GLIBC symbol version newer than FLOOR, a libstdc++/libgcc symbol version (they are linked
# statically), or a shared library other than glibc's own. With --own-malloc, the binary carries its
# allocator (jemalloc) and must export malloc, free, calloc, realloc and friends, so that glibc and
# dlopen'd libraries allocate and free through the same one (a pointer from glibc's malloc freed by
# jemalloc, or the reverse, corrupts the heap).
# Usage: scripts/check-portable.sh [--floor 2.34] [--own-malloc] BINARY...
set -euo pipefail
floor=2.34
own_malloc=0
while [ $# -gt 0 ]; do
  case "$1" in
    --floor) floor=$2; shift 2 ;;
    --own-malloc) own_malloc=1; shift ;;
    *) break ;;
  esac
done
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
  if [ $own_malloc -eq 1 ]; then
    # Defined (not UND) in the dynamic symbol table: column 7 is the section index.
    defined=$(readelf --dyn-syms -W "$bin" | awk '$7 != "UND" {sub(/@.*/, "", $8); print $8}' | sort -u)
    for f in malloc free calloc realloc posix_memalign aligned_alloc memalign malloc_usable_size; do
      if ! grep -qx "$f" <<<"$defined"; then
        echo "$name: carries its own malloc but does not export $f (glibc would allocate with its own)" >&2
        status=1
      fi
    done
  fi
  if [ $status -eq 0 ]; then
    echo "$name: portable: glibc >= ${glibc:-any}, needs $(tr '\n' ' ' <<<"$needed")"
  fi
done
exit $status
