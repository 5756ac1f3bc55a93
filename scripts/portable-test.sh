#!/usr/bin/env bash
# The shipped binary starts where nothing is installed: inside a minimal Debian 12 root
# (scripts/minroot.sh) with libstdc++ removed and no -dev package, it prints its version, runs a
# full `audit --standalone --yes`, names the package to install for libcurl, and its .deb installs
# there with dpkg and works (man page, completion). Exit 77 (ctest: skipped) when the build is not
# the portable one, or without root or the cached root.
# Usage: scripts/portable-test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/clustermax
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
"$bin" --version | grep ', portable)' >/dev/null || skip "not the portable build ($("$bin" --version))"
[ "$(id -u)" -eq 0 ] || skip "chroot needs root"
cache=$(bash "$src/scripts/minroot.sh" path) || skip "no minimal root: run scripts/minroot.sh install"
command -v unshare >/dev/null || skip "no unshare (util-linux)"

work=$(mktemp -d /tmp/clustermax-minroot.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
cp -a "$cache" "$root"
# Nothing of ours may come from the root: no C++ runtime at all, no -dev package.
rm -f "$root"/usr/lib/x86_64-linux-gnu/libstdc++.so.6* "$root"/usr/lib/*/libstdc++.so.6*
if chroot "$root" dpkg-query -W -f='${Package}\n' | grep -E -- '-dev$|^libcurl|^(gcc|g\+\+|cpp)(-[0-9]+)?$' ; then fail "the minimal root has development packages"; fi

# In a private mount namespace: /proc, /sys and /dev of this machine, as on a node.
in_root() {
  unshare --mount --fork --propagation private sh -c '
    root=$1; shift
    mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" && mount --rbind /dev "$root/dev" || exit 99
    exec chroot "$root" "$@"' sh "$root" "$@"
}

cp "$bin" "$root/usr/local/bin/clustermax"
version=$(in_root /usr/local/bin/clustermax --version) || fail "--version in the minimal root: $version"
echo "minimal root: $version"
[[ $version == "clustermax "*"(commit "*", portable)" ]] || fail "unexpected --version: $version"

set +e
in_root env HOME=/root /usr/local/bin/clustermax audit --standalone --yes >"$work/audit.out" 2>"$work/audit.err"
rc=$?
set -e
if [ $rc -ne 0 ] && [ $rc -ne 2 ]; then
  cat "$work/audit.err" >&2
  fail "audit --standalone --yes exited $rc in the minimal root"
fi
grep -q "error while loading shared libraries" "$work/audit.err" && fail "a shared library is missing"
report=$(ls -d "$root"/root/.clustermax/runs/*/report.json | head -1)
[ -s "$report" ] || fail "no report.json in the run directory"
checks=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$report")
[ "$checks" -gt 20 ] || fail "the report has only $checks results"
echo "minimal root: audit exit $rc, $checks results in $(basename "$(dirname "$report")")"

set +e
msg=$(in_root /usr/local/bin/clustermax minimums update https://example.invalid/minimum-versions.json 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail "minimums update without libcurl exited $rc: $msg"
grep -q "libcurl is not installed on this node" <<<"$msg" || fail "no clear libcurl message: $msg"
grep -q "install the libcurl4 package" <<<"$msg" || fail "the message does not name the package: $msg"
echo "minimal root: without libcurl: $msg"
# The stand-ins for glibc functions newer than 2.34 (src/util/glibc_compat.cc): with them forced,
# a thrown and caught exception still unwinds (an unwinder without them would abort: 134).
set +e
msg=$(in_root env CLUSTERMAX_GLIBC_FALLBACK=1 /usr/local/bin/clustermax minimums update /no/such/table.json 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "no such file" <<<"$msg" || fail "with the glibc stand-ins forced, an error exited $rc: $msg"
echo "minimal root: glibc stand-ins forced: exceptions unwind ($msg)"

# A Kubernetes fan-out pod's view (collect --host-root): the node's files under the root, and its
# commands run inside it. A dpkg-query that exists only in the root answers for the node here.
mkdir -p "$root/usr/local/sbin"
printf '#!/bin/sh\necho "linux-image-6.1.0-99-hostroot 6.1.99-1 ii "\n' >"$root/usr/local/sbin/dpkg-query"
chmod 755 "$root/usr/local/sbin/dpkg-query"
CLUSTERMAX_NODE_NAME=node-in-root "$bin" collect --role=compute --target=k8s --host-root "$root" \
  --out "$work/hostroot.json" >"$work/hostroot.log" 2>&1 || { cat "$work/hostroot.log" >&2; fail "collect --host-root"; }
grep -q 'linux-image-6.1.0-99-hostroot' "$work/hostroot.json" || fail "collect --host-root did not run the root's own dpkg-query"
grep -q '"hostname": *"node-in-root"' "$work/hostroot.json" || fail "collect --host-root did not name the node CLUSTERMAX_NODE_NAME"
rm -f "$root/usr/local/sbin/dpkg-query"
echo "minimal root: collect --host-root ran the root's own commands inside it"

# The package: built with CPack, installed with dpkg in the root, working from /usr/bin.
(cd "$build" && cpack -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack"; }
deb=$(ls "$work"/packages/clustermax_*.deb | head -1)
[ -f "$deb" ] || fail "no clustermax .deb"
cp "$deb" "$root/tmp/"
in_root dpkg -i "/tmp/$(basename "$deb")" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i"; }
in_root /usr/bin/clustermax --version | grep "portable" >/dev/null || fail "the installed binary does not start"
for f in /usr/share/man/man1/clustermax.1.gz /usr/share/bash-completion/completions/clustermax \
         /usr/share/zsh/vendor-completions/_clustermax /usr/share/doc/clustermax/examples \
         /usr/libexec/clustermax/health-check.sh; do
  [ -e "$root$f" ] || fail "the package did not install $f"
done
zcat "$root/usr/share/man/man1/clustermax.1.gz" | grep '^\.SS "clustermax audit"' >/dev/null || fail "the man page lacks the audit command"
in_root dpkg -r clustermax >/dev/null 2>&1 || fail "dpkg -r"
[ ! -e "$root/usr/bin/clustermax" ] || fail "dpkg -r left the binary"
echo "minimal root: $(basename "$deb") ($(stat -c %s "$deb") bytes) installed, ran and removed"
for g in "$work"/packages/clustermax-gpu_*.deb; do [ -f "$g" ] && echo "also built: $(basename "$g") ($(stat -c %s "$g") bytes)"; done
echo "PASS"
