#!/bin/sh
# install-cni.sh: installs the rdmak8s CNI binary into the node's CNI bin directory.
#
#   install-cni.sh [install]   copy, verify, then (RDMAK8S_CNI_KEEP_RUNNING=true) stay up
#   install-cni.sh check       verify the installed binary (the DaemonSet's readiness probe)
#
# The copy is atomic for the runtimes that exec the binary at any moment: write a temporary name
# in the destination directory, fsync it, check that it answers CNI VERSION, rename(2) it over
# the old one, fsync the directory, and check the installed binary again. A runtime thus sees the
# old binary or the new one, never a half-written file, and a binary that does not run never
# replaces one that does. Leftover temporaries of an interrupted run are removed on start.
#
# Environment (defaults are the DaemonSet's paths; tests point them at a temp dir):
#   RDMAK8S_CNI_SRC             binary to install            (/opt/rdmak8s/bin/rdmak8s)
#   RDMAK8S_CNI_BIN_DIR         destination directory        (/host/opt/cni/bin)
#   RDMAK8S_CNI_NAME            installed name = netconf type (rdmak8s)
#   RDMAK8S_CNI_SPEC_VERSION    CNI spec version the binary must list in supportedVersions (1.0.0)
#   RDMAK8S_CNI_KEEP_RUNNING    true: after installing, wait for SIGTERM (so image upgrades roll)
set -eu

src=${RDMAK8S_CNI_SRC:-/opt/rdmak8s/bin/rdmak8s}
bin_dir=${RDMAK8S_CNI_BIN_DIR:-/host/opt/cni/bin}
name=${RDMAK8S_CNI_NAME:-rdmak8s}
spec_version=${RDMAK8S_CNI_SPEC_VERSION:-1.0.0}
keep_running=${RDMAK8S_CNI_KEEP_RUNNING:-true}
dest="$bin_dir/$name"
tmp_prefix="$bin_dir/.$name.tmp."

log() { echo "install-cni: $*" >&2; }
die() { log "$*"; exit 1; }

# version_check BINARY: runs BINARY as a runtime does for CNI VERSION (CNI SPEC.md, "VERSION")
# and checks that the answer lists $spec_version in supportedVersions. The binary's stderr goes
# to ours, so its own error reaches the container log.
version_check() {
  if ! out=$(printf '{"cniVersion":"%s"}' "$spec_version" | CNI_COMMAND=VERSION "$1"); then
    log "run $1 with CNI_COMMAND=VERSION: exited non-zero; stdout: $out"
    return 1
  fi
  case $out in
    *'"supportedVersions"'*) ;;
    *) log "run $1 with CNI_COMMAND=VERSION: no supportedVersions in its answer: $out"; return 1 ;;
  esac
  supported=${out#*\"supportedVersions\"}
  supported=${supported%%]*}
  case $supported in
    *"\"$spec_version\""*) ;;
    *) log "run $1 with CNI_COMMAND=VERSION: spec version $spec_version not supported: $out"; return 1 ;;
  esac
  log "$1 answers CNI VERSION: $out"
}

install_binary() {
  [ -f "$src" ] || die "install $src: source binary not found"
  [ -d "$bin_dir" ] || die "install into $bin_dir: not a directory"
  rm -f "$tmp_prefix"*
  if [ -f "$dest" ] && cmp -s "$src" "$dest"; then
    log "$dest is already this binary"
  else
    tmp="$tmp_prefix$$"
    trap 'rm -f "$tmp"' EXIT
    cp "$src" "$tmp" || die "copy $src to $tmp failed"
    chmod 0755 "$tmp" || die "chmod $tmp failed"
    sync "$tmp" || die "fsync $tmp failed"
    version_check "$tmp" || die "install $dest: the new binary failed its VERSION check; $dest left as it was"
    mv -f "$tmp" "$dest" || die "rename $tmp to $dest failed"
    trap - EXIT
    sync "$bin_dir" || die "fsync $bin_dir failed"
    log "installed $src as $dest"
  fi
  version_check "$dest" || die "check $dest: the installed binary failed its VERSION check"
}

case ${1:-install} in
  check)
    version_check "$dest" >/dev/null 2>&1 || { version_check "$dest"; exit 1; }
    ;;
  install)
    install_binary
    if [ "$keep_running" = true ]; then
      # Stay up so that the DaemonSet's rolling update replaces this pod, and with it the binary,
      # one node at a time. Exit 0 on SIGTERM: the binary stays installed (pods still need DEL).
      # The sleeper gets no stdio of ours: should a signal land between its fork and `$!` being
      # read, the orphan cannot hold our stdout/stderr (a log pipe) open after we exit.
      sleeper=
      trap 'log "terminating; $dest stays installed"; [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null || true; exit 0' TERM INT
      log "waiting for termination"
      while :; do
        sleep 3600 </dev/null >/dev/null 2>&1 &
        sleeper=$!
        wait "$sleeper" || true
      done
    fi
    ;;
  *)
    die "usage: $0 [install|check]"
    ;;
esac
