#!/bin/sh
# install-cni.sh: installs the rdmak8s CNI binary into the node's CNI bin directory, and the
# node configuration of the CNI (docs/cni.md, "Node configuration") into /etc/cni/rdmak8s.
#
#   install-cni.sh [install]   copy, verify, then (RDMAK8S_CNI_KEEP_RUNNING=true) stay up
#   install-cni.sh check       verify the installed binary with the installed node configuration
#                              (the DaemonSet's readiness probe)
#
# The copy is atomic for the runtimes that exec the binary at any moment: write a temporary name
# in the destination directory, fsync it, check that it answers CNI VERSION, rename(2) it over
# the old one, fsync the directory, and check the installed binary again. A runtime thus sees the
# old binary or the new one, never a half-written file, and a binary that does not run never
# replaces one that does. Leftover temporaries of an interrupted run are removed on start.
#
# The node configuration (host paths, log file: the node's, never a NAD's) is written the same
# way: a temporary in its directory, mode 0644, fsync, checked by the installed binary (which
# reads it for CNI VERSION and refuses an unknown key, a wrong type or a relative path), renamed
# over node.json, directory fsync'ed. A configuration the binary refuses never replaces one it
# accepts.
#
# Environment (defaults are the DaemonSet's paths; tests point them at a temp dir):
#   RDMAK8S_CNI_SRC             binary to install            (/opt/rdmak8s/bin/rdmak8s)
#   RDMAK8S_CNI_BIN_DIR         destination directory        (/host/opt/cni/bin)
#   RDMAK8S_CNI_NAME            installed name = netconf type (rdmak8s)
#   RDMAK8S_CNI_SPEC_VERSION    CNI spec version the binary must list in supportedVersions (1.0.0)
#   RDMAK8S_CNI_KEEP_RUNNING    true: after installing, wait for SIGTERM (so image upgrades roll)
#   RDMAK8S_CNI_NODE_CONFIG_DIR where node.json goes, the node's /etc/cni/rdmak8s
#                                                             (/host/etc/cni/rdmak8s)
#   RDMAK8S_CNI_NODE_CONFIG_JSON the node configuration ({}: the binary's built-in defaults)
set -eu

src=${RDMAK8S_CNI_SRC:-/opt/rdmak8s/bin/rdmak8s}
bin_dir=${RDMAK8S_CNI_BIN_DIR:-/host/opt/cni/bin}
name=${RDMAK8S_CNI_NAME:-rdmak8s}
spec_version=${RDMAK8S_CNI_SPEC_VERSION:-1.0.0}
keep_running=${RDMAK8S_CNI_KEEP_RUNNING:-true}
node_config_dir=${RDMAK8S_CNI_NODE_CONFIG_DIR:-/host/etc/cni/rdmak8s}
node_config_json=${RDMAK8S_CNI_NODE_CONFIG_JSON:-"{}"}
dest="$bin_dir/$name"
tmp_prefix="$bin_dir/.$name.tmp."
node_config="$node_config_dir/node.json"
config_tmp_prefix="$node_config_dir/.node.json.tmp."

log() { echo "install-cni: $*" >&2; }
die() { log "$*"; exit 1; }

# version_check BINARY [NODE_CONFIG]: runs BINARY as a runtime does for CNI VERSION (CNI
# SPEC.md, "VERSION"), reading NODE_CONFIG (default: the installed one) as its node configuration,
# and checks that the answer lists $spec_version in supportedVersions. The binary's stderr goes
# to ours, so its own error reaches the container log.
version_check() {
  if ! out=$(printf '{"cniVersion":"%s"}' "$spec_version" |
             CNI_COMMAND=VERSION RDMAK8S_CNI_NODE_CONFIG="${2:-$node_config}" "$1"); then
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

install_node_config() {
  mkdir -p "$node_config_dir" || die "install $node_config: cannot create $node_config_dir"
  rm -f "$config_tmp_prefix"*
  tmp="$config_tmp_prefix$$"
  trap 'rm -f "$tmp"' EXIT
  # noclobber: the temporary is created, never an existing file (or link) opened.
  (set -C; printf '%s\n' "$node_config_json" > "$tmp") || die "write $tmp failed"
  chmod 0644 "$tmp" || die "chmod $tmp failed"
  if [ -f "$node_config" ] && cmp -s "$tmp" "$node_config"; then
    rm -f "$tmp"
    trap - EXIT
    log "$node_config is already this node configuration"
    return 0
  fi
  sync "$tmp" || die "fsync $tmp failed"
  version_check "$dest" "$tmp" ||
    die "install $node_config: $dest refused the new node configuration; $node_config left as it was"
  mv -f "$tmp" "$node_config" || die "rename $tmp to $node_config failed"
  trap - EXIT
  sync "$node_config_dir" || die "fsync $node_config_dir failed"
  log "installed the node configuration $node_config: $node_config_json"
}

case ${1:-install} in
  check)
    version_check "$dest" >/dev/null 2>&1 || { version_check "$dest"; exit 1; }
    ;;
  install)
    install_binary
    install_node_config
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
