#!/usr/bin/env bash
# Fetches trixie's kustomize (5.x) and kubectl (1.32) as Debian packages, for rendering and
# checking manifests/ with the tools users have today (Debian 12's kubectl 1.20 is too old for the
# tree's syntax: manifests/README.md). A private apt configuration for trixie (apt-get download +
# dpkg-deb -x; the machine's own apt sources and dpkg database are never touched), unpacked into
#   $CACHE/<package>_<version>/     one tree per package version, never changed once complete
#   $CACHE/bin/kustomize, kubectl   symlinks to the versions in use
# Prints nothing when the tools are already there (no network then); says what it fetches on
# stderr otherwise. Exit 0 when $CACHE/bin holds both working tools, 1 otherwise.
#
# Usage: scripts/fetch-trixie-tools.sh [--refresh] [--print]
#   --refresh  ask trixie for its current versions even when tools are cached (a point release)
#   --print    print "KUSTOMIZE=<path>" and "KUBECTL=<path>" on stdout
# Environment: RDMAK8S_TOOLS_CACHE (default /var/cache/rdmak8s/trixie-tools, or
# ~/.cache/rdmak8s/trixie-tools when that is not writable), DEBIAN_MIRROR (override the mirror
# read from the machine's apt configuration).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/debian-apt.sh
. "$HERE/lib/debian-apt.sh"

REFRESH=0
PRINT=0
for a in "$@"; do
  case $a in
    --refresh) REFRESH=1 ;;
    --print) PRINT=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "fetch-trixie-tools: unknown argument: $a" >&2; exit 2 ;;
  esac
done

log() { echo "fetch-trixie-tools: $*" >&2; }
die() { echo "fetch-trixie-tools: error: $*" >&2; exit 1; }

default_cache() {
  local system=/var/cache/rdmak8s/trixie-tools
  if mkdir -p "$system" 2>/dev/null && [[ -w $system ]]; then echo "$system"
  else echo "${XDG_CACHE_HOME:-$HOME/.cache}/rdmak8s/trixie-tools"; fi
}
CACHE=${RDMAK8S_TOOLS_CACHE:-$(default_cache)}
mkdir -p "$CACHE/bin"
CACHE=$(cd "$CACHE" && pwd)

# package:binary:expected upstream version (what the manifest checks are written against; a
# trixie point release keeps these series).
TOOLS=("kustomize:kustomize:5." "kubectl:kubectl:1.32.")

# True when bin/<binary> resolves into a complete package tree and runs.
tool_ok() {
  local bin=$CACHE/bin/$1 target
  target=$(readlink -f "$bin" 2>/dev/null) || return 1
  [[ -x $target && -f ${target%/usr/bin/*}/.done ]] || return 1
  # kubectl's plain `version` would ask an API server; kustomize has no --client.
  "$bin" version --client >/dev/null 2>&1 || "$bin" version >/dev/null 2>&1
}

print_paths() {
  [[ $PRINT == 1 ]] || return 0
  echo "KUSTOMIZE=$CACHE/bin/kustomize"
  echo "KUBECTL=$CACHE/bin/kubectl"
}

all_tools_ok() {
  local t bin
  for t in "${TOOLS[@]}"; do
    IFS=: read -r _ bin _ <<<"$t"
    tool_ok "$bin" || return 1
  done
}
if [[ $REFRESH == 0 ]] && all_tools_ok; then
  print_paths
  exit 0
fi
# One fetcher at a time (parallel test runs of several checkouts share the cache); whoever waited
# finds the tools there.
exec 9>"$CACHE/.lock"
flock 9
if [[ $REFRESH == 0 ]] && all_tools_ok; then
  print_paths
  exit 0
fi

for t in apt-get apt-cache dpkg-deb python3; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found (a Debian machine with apt is needed)"
done
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || \
  die "/usr/share/keyrings/debian-archive-keyring.gpg missing (package debian-archive-keyring)"
MIRROR=$(debian_mirror) || die "cannot determine the Debian mirror (set DEBIAN_MIRROR)"
APT_ROOT=$CACHE/apt
private_apt "$APT_ROOT" "$MIRROR" trixie

# The lists are only read here, when something is missing or a refresh was asked for.
if [[ $REFRESH == 1 ]] || ! private_apt_lists_fresh "$APT_ROOT" 86400; then
  log "apt-get update (private configuration: trixie, $MIRROR)"
  private_apt_update "$APT_ROOT" "$CACHE/apt-update.log" fetch-trixie-tools || exit 1
fi

for t in "${TOOLS[@]}"; do
  IFS=: read -r pkg bin series <<<"$t"
  ver=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
  [[ -n $ver ]] || die "package $pkg not found in trixie"
  upstream=${ver#*:}
  [[ $upstream == "$series"* ]] || die "trixie's $pkg is $ver, not the ${series}x the manifest checks expect"
  dir=$CACHE/${pkg}_$ver
  if [[ ! -f $dir/.done ]]; then
    log "fetching $pkg $ver"
    rm -rf "$dir" "$dir.tmp" && mkdir -p "$dir.tmp/debs"
    (cd "$dir.tmp/debs" && apt-get download -q "$pkg=$ver" >../download.log 2>&1) ||
      die "download $pkg=$ver: $(tail -3 "$dir.tmp/download.log")"
    dpkg-deb -x "$dir.tmp/debs/"*.deb "$dir.tmp" || die "unpack $pkg=$ver"
    rm -rf "$dir.tmp/debs" "$dir.tmp/download.log"
    [[ -x $dir.tmp/usr/bin/$bin ]] || die "$pkg=$ver has no /usr/bin/$bin"
    touch "$dir.tmp/.done"
    mv "$dir.tmp" "$dir"
  fi
  ln -sfn "../${pkg}_$ver/usr/bin/$bin" "$CACHE/bin/$bin.tmp"
  mv -T "$CACHE/bin/$bin.tmp" "$CACHE/bin/$bin"
  tool_ok "$bin" || die "$CACHE/bin/$bin ($pkg $ver) does not run"
  # Versions no longer linked are dead weight (a point release replaced them).
  for old in "$CACHE/${pkg}"_*; do
    [[ -d $old && $old != "$dir" ]] && rm -rf "$old"
  done
done
print_paths
