#!/usr/bin/env bash
# Fetches a real container runtime for the e2e guest (issue 25, step 1): trixie's containerd 1.7
# (Debian 12's own containerd is 1.6, without the CRI CDI support the scenarios need) and Debian
# 12's runc (trixie's runc needs libc6 >= 2.38; the guest runs Debian 12's libc 2.36, which
# trixie's containerd accepts: it needs only libc6 >= 2.34). Both as Debian packages, with a
# private apt configuration for trixie (scripts/lib/debian-apt.sh; the machine's own apt sources
# and dpkg database are never touched), unpacked with dpkg-deb -x into
#   $CACHE/<package>_<version>/     one tree per package version, never changed once complete
#   $CACHE/bin/{containerd,containerd-shim-runc-v2,ctr,runc}   symlinks to the versions in use
#   $CACHE/bin/api.proto   the CRI API (runtime.v1) of trixie's golang-github-kubernetes-cri-api-dev
#                          (no crictl is packaged: the e2e's CRI client is compiled from it)
# Prints nothing when they are already there (no network then). Exit 0 when $CACHE/bin holds
# working binaries, 1 otherwise. Not wired into e2e/build-image.sh yet.
#
# Measured (containerd 1.7.24~ds1-6+deb13u1, `containerd config default`): the CRI plugin's
# enable_cdi defaults to false, cdi_spec_dirs to ["/etc/cdi", "/var/run/cdi"], the CNI bin_dir is
# Debian's /usr/lib/cni (upstream: /opt/cni/bin), conf_dir /etc/cni/net.d, sandbox_image
# registry.k8s.io/pause:3.8. Neither Debian 12 nor trixie packages crictl (cri-tools).
#
# Usage: scripts/fetch-trixie-containerd.sh [--print]
#   --print    print "CONTAINERD_BIN=<dir>" on stdout (api.proto is there too)
# Environment: RDMAK8S_CONTAINERD_CACHE (default /var/cache/rdmak8s/trixie-containerd, or
# ~/.cache/rdmak8s/trixie-containerd when that is not writable), DEBIAN_MIRROR.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/debian-apt.sh
. "$HERE/lib/debian-apt.sh"

PRINT=0
for a in "$@"; do
  case $a in
    --print) PRINT=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "fetch-trixie-containerd: unknown argument: $a" >&2; exit 2 ;;
  esac
done

log() { echo "fetch-trixie-containerd: $*" >&2; }
die() { echo "fetch-trixie-containerd: error: $*" >&2; exit 1; }

default_cache() {
  local system=/var/cache/rdmak8s/trixie-containerd
  if mkdir -p "$system" 2>/dev/null && [[ -w $system ]]; then echo "$system"
  else echo "${XDG_CACHE_HOME:-$HOME/.cache}/rdmak8s/trixie-containerd"; fi
}
CACHE=${RDMAK8S_CONTAINERD_CACHE:-$(default_cache)}
mkdir -p "$CACHE/bin"
CACHE=$(cd "$CACHE" && pwd)

BINS=(containerd containerd-shim-runc-v2 ctr runc)

all_ok() {
  local b target
  for b in "${BINS[@]}"; do
    target=$(readlink -f "$CACHE/bin/$b" 2>/dev/null) || return 1
    [[ -x $target && -f ${target%/usr/*}/.done ]] || return 1
  done
  [[ -f $(readlink -f "$CACHE/bin/api.proto") ]] || return 1
  "$CACHE/bin/containerd" --version 2>/dev/null | grep -q ' 1\.7\.' || return 1
  "$CACHE/bin/runc" --version >/dev/null 2>&1
}
print_paths() { [[ $PRINT == 0 ]] || echo "CONTAINERD_BIN=$CACHE/bin"; }

if all_ok; then print_paths; exit 0; fi
exec 9>"$CACHE/.lock"
flock 9
if all_ok; then print_paths; exit 0; fi

for t in apt-get apt-cache dpkg-deb python3; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found (a Debian machine with apt is needed)"
done
MIRROR=$(debian_mirror) || die "cannot determine the Debian mirror (set DEBIAN_MIRROR)"

# fetch SUITE PACKAGE SERIES: unpacks PACKAGE's candidate in SUITE into $CACHE/PACKAGE_VERSION,
# checking that its upstream version starts with SERIES; prints the tree.
fetch() {
  local suite=$1 pkg=$2 series=$3 root=$CACHE/apt-$1 ver dir
  private_apt "$root" "$MIRROR" "$suite"
  if ! private_apt_lists_fresh "$root" 86400; then
    log "apt-get update (private configuration: $suite, $MIRROR)"
    private_apt_update "$root" "$CACHE/apt-update-$suite.log" fetch-trixie-containerd >&2 || exit 1
  fi
  ver=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
  [[ -n $ver ]] || die "package $pkg not found in $suite"
  [[ ${ver#*:} == "$series"* ]] || die "$suite's $pkg is $ver, not the ${series}x the e2e expects"
  dir=$CACHE/${pkg}_$ver
  if [[ ! -f $dir/.done ]]; then
    log "fetching $pkg $ver ($suite)"
    rm -rf "$dir" "$dir.tmp" && mkdir -p "$dir.tmp/debs"
    (cd "$dir.tmp/debs" && apt-get download -q "$pkg=$ver" >../download.log 2>&1) ||
      die "download $pkg=$ver: $(tail -3 "$dir.tmp/download.log")"
    dpkg-deb -x "$dir.tmp/debs/"*.deb "$dir.tmp" || die "unpack $pkg=$ver"
    rm -rf "$dir.tmp/debs" "$dir.tmp/download.log"
    touch "$dir.tmp/.done"
    mv "$dir.tmp" "$dir"
  fi
  echo "$dir"
}

link() {  # link TREE BINARY
  [[ -x $1/usr/bin/$2 || -x $1/usr/sbin/$2 ]] || die "$1 has no /usr/bin/$2 or /usr/sbin/$2"
  local rel=usr/bin/$2
  [[ -x $1/$rel ]] || rel=usr/sbin/$2
  ln -sfn "../${1##*/}/$rel" "$CACHE/bin/$2.tmp"
  mv -T "$CACHE/bin/$2.tmp" "$CACHE/bin/$2"
}

ctr_tree=$(fetch trixie containerd 1.7.)
runc_tree=$(fetch bookworm runc 1.1.)
for b in containerd containerd-shim-runc-v2 ctr; do link "$ctr_tree" "$b"; done
link "$runc_tree" runc
api_tree=$(fetch trixie golang-github-kubernetes-cri-api-dev 0.)
api_rel=usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto
[[ -f $api_tree/$api_rel ]] || die "$api_tree has no $api_rel"
ln -sfn "../${api_tree##*/}/$api_rel" "$CACHE/bin/api.proto.tmp"
mv -T "$CACHE/bin/api.proto.tmp" "$CACHE/bin/api.proto"
all_ok || die "$CACHE/bin: containerd 1.7 or runc does not run on this machine"
print_paths
