#!/usr/bin/env bash
# Builds the e2e VM from Debian packages only:
#   - the kernel: whatever trixie-backports' linux-image-amd64 points to (Debian 12's 6.1 rxe has
#     no network-namespace support), fetched with a private apt configuration (apt-get download +
#     dpkg -x; the machine's own apt sources are never touched);
#   - siw.ko, which Debian does not build: compiled out of tree from that kernel's linux-source
#     against its linux-headers, with that release's gcc and kbuild, in a debootstrapped trixie
#     chroot (headers unpacked outside a chroot carry absolute paths and do not work);
#   - an uncompressed newc initramfs in three layers that the kernel unpacks in order:
#       base.cpio    kernel modules + Debian 12 userspace (rdma-core, perftest, iproute2, busybox,
#                    containernetworking-plugins, UCX, Open MPI) and their shared libraries;
#       project.cpio the project's freshly built binaries (those present in --build-dir);
#       guest.cpio   e2e/guest (init, helpers, scenarios) and e2e/cni (the e2e-only CNI plugin);
#       runtime.cpio only with --with-containerd: trixie's containerd 1.7 (containerd, its runc
#                    shim, ctr) and Debian 12's runc, from scripts/fetch-trixie-containerd.sh
#                    (about 100 MB more to boot, so only for the scenarios that need them).
# Everything is cached under e2e/.cache (kernel and siw by kernel version, base layer by the hash of
# its inputs), so a second run takes about a second.
#
# Usage: e2e/build-image.sh [--build-dir DIR]... [--out DIR] [--with-containerd]
#        e2e/build-image.sh --base-only
#   Project binaries are taken from the first --build-dir holding each (default build/default).
#   Prints "E2E-IMAGE kernel=<path> initrd=<path> kver=<kver>" on success. --base-only stops once
#   the kernel, siw.ko and the base layer are cached (they need no project binary): make test
#   builds them in the background while it compiles, as they are mostly downloads.
#   Not concurrency-safe by itself: e2e/run.py, and make test, hold $CACHE/.run.lock around it.
# Environment: E2E_CACHE (cache dir), E2E_DEBIAN_MIRROR (override the mirror read from the
# machine's apt configuration), E2E_KERNEL (pin a kernel release, e.g. 7.3.4+deb13-amd64),
# E2E_APT_REFRESH=1 (refresh the package lists now rather than when older than 12 hours).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_ROOT=$(cd "$HERE/.." && pwd)
CACHE=${E2E_CACHE:-$HERE/.cache}
BUILD_DIRS=()
OUT=""
BASE_ONLY=0
WITH_CONTAINERD=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) BUILD_DIRS+=("$2"); shift 2 ;;
    --base-only) BASE_ONLY=1; shift ;;
    --with-containerd) WITH_CONTAINERD=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "build-image: unknown argument: $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$CACHE/out}
[[ ${#BUILD_DIRS[@]} -gt 0 ]] || BUILD_DIRS=("$SRC_ROOT/build/default")
mkdir -p "$CACHE" "$OUT"
CACHE=$(cd "$CACHE" && pwd)

log() { echo "build-image: $*" >&2; }
die() { echo "build-image: error: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found (run scripts/install-deps.sh)"; }
for t in apt-get dpkg dpkg-deb debootstrap cpio xz depmod modprobe python3 ldd sha256sum gcc; do need "$t"; done
[[ -x /bin/busybox ]] || die "/bin/busybox not found (package busybox-static)"
[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot, device nodes in the initramfs)"

# The Debian mirror is whatever the machine's apt configuration uses for the main archive.
# shellcheck source=../scripts/lib/debian-apt.sh
. "$SRC_ROOT/scripts/lib/debian-apt.sh"
MIRROR=$(DEBIAN_MIRROR=${E2E_DEBIAN_MIRROR:-${DEBIAN_MIRROR:-}} debian_mirror) || die "cannot determine the Debian mirror"

# ---------------------------------------------------------------------------------------------
# Private apt configuration for trixie-backports (kernel, headers version, linux-source).
APT_ROOT=$CACHE/apt
private_apt "$APT_ROOT" "$MIRROR" trixie-backports
if [[ ${E2E_APT_REFRESH:-0} == 1 ]] || ! private_apt_lists_fresh "$APT_ROOT" 43200; then
  log "apt-get update (private configuration: trixie-backports)"
  private_apt_update "$APT_ROOT" "$CACHE/apt-update.log" build-image || exit 1
fi

# Which kernel: trixie-backports' linux-image-amd64, unless pinned.
if [[ -n ${E2E_KERNEL:-} ]]; then
  KVER=$E2E_KERNEL
else
  KVER=$(apt-cache show --no-all-versions linux-image-amd64 2>/dev/null |
         sed -n 's/^Depends:.*linux-image-\([0-9][^ ,]*-amd64\).*/\1/p' | head -1)
  [[ -n $KVER ]] || die "linux-image-amd64 in trixie-backports names no kernel image"
fi
PKGVER=$(apt-cache show --no-all-versions "linux-binary-$KVER" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
[[ -n $PKGVER ]] || die "linux-binary-$KVER not found in trixie-backports"
UPSTREAM=${KVER%%+*}              # 7.3.4
SRC_SERIES=${UPSTREAM%.*}         # 7.3
log "kernel $KVER (package $PKGVER)"

# ---------------------------------------------------------------------------------------------
# Kernel image and modules.
KDIR=$CACHE/kernel/$KVER
if [[ ! -f $KDIR/.done ]]; then
  log "fetching kernel $KVER"
  rm -rf "$KDIR" && mkdir -p "$KDIR/debs" "$KDIR/root"
  (cd "$KDIR/debs" && apt-get download -q "linux-binary-$KVER=$PKGVER" "linux-modules-$KVER=$PKGVER" \
     "linux-base-$KVER=$PKGVER" >"$KDIR/download.log" 2>&1) || die "download kernel: $(tail -3 "$KDIR/download.log")"
  for d in "$KDIR"/debs/*.deb; do dpkg-deb -x "$d" "$KDIR/root"; done
  rm -rf "$KDIR/debs"
  touch "$KDIR/.done"
fi
MODDIR=$KDIR/root/usr/lib/modules/$KVER
[[ -f $MODDIR/vmlinuz ]] || VMLINUZ_ALT=$(ls "$KDIR"/root/boot/vmlinuz-* 2>/dev/null | head -1)
VMLINUZ=$MODDIR/vmlinuz
[[ -f $VMLINUZ ]] || VMLINUZ=${VMLINUZ_ALT:-}
[[ -n $VMLINUZ && -f $VMLINUZ ]] || die "no vmlinuz in the kernel packages of $KVER"

# ---------------------------------------------------------------------------------------------
# siw.ko, built in a trixie chroot against this kernel's headers.
CHROOT=$CACHE/chroot-trixie
SIW=$CACHE/siw/$KVER/siw.ko
if [[ ! -f $SIW ]]; then
  if [[ ! -f $CHROOT/.done ]]; then
    log "debootstrap trixie (once; about a minute and a half)"
    rm -rf "$CHROOT" "$CHROOT.tmp"
    debootstrap --variant=minbase --include=make,xz-utils,kmod,ca-certificates trixie "$CHROOT.tmp" \
      "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || die "debootstrap trixie failed: $(tail -3 "$CACHE/debootstrap.log")"
    mv "$CHROOT.tmp" "$CHROOT"
    touch "$CHROOT/.done"
  fi
  # Runs a command in the chroot with /proc mounted (objtool reads it) in a private mount
  # namespace, so that nothing stays mounted when the command ends, however it ends.
  in_chroot() {
    unshare -m --propagation private sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
      "$CHROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
  }
  log "installing linux-headers-$KVER in the chroot"
  echo "deb $MIRROR trixie-backports main" > "$CHROOT/etc/apt/sources.list.d/backports.list"
  in_chroot sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends binutils linux-headers-$KVER=$PKGVER" \
    >"$CACHE/siw-headers.log" 2>&1 || die "install linux-headers-$KVER in the chroot: $(tail -5 "$CACHE/siw-headers.log")"
  log "fetching linux-source-$SRC_SERIES and extracting drivers/infiniband/sw/siw"
  SRCTMP=$CACHE/src-tmp
  rm -rf "$SRCTMP" && mkdir -p "$SRCTMP"
  (cd "$SRCTMP" && apt-get download -q "linux-source-$SRC_SERIES=$PKGVER" >download.log 2>&1) ||
    die "download linux-source-$SRC_SERIES=$PKGVER: $(tail -3 "$SRCTMP/download.log")"
  dpkg-deb --fsys-tarfile "$SRCTMP"/linux-source-*.deb |
    tar -x -C "$SRCTMP" --wildcards "./usr/src/linux-source-$SRC_SERIES.tar.xz"
  tar -xJf "$SRCTMP/usr/src/linux-source-$SRC_SERIES.tar.xz" -C "$SRCTMP" \
    "linux-source-$SRC_SERIES/drivers/infiniband/sw/siw" || die "linux-source-$SRC_SERIES has no drivers/infiniband/sw/siw"
  rm -rf "$CHROOT/build/siw" && mkdir -p "$CHROOT/build"
  cp -a "$SRCTMP/linux-source-$SRC_SERIES/drivers/infiniband/sw/siw" "$CHROOT/build/siw"
  rm -rf "$SRCTMP"
  log "compiling siw.ko against linux-headers-$KVER"
  in_chroot make -C "/usr/src/linux-headers-$KVER" M=/build/siw CONFIG_RDMA_SIW=m modules \
    >"$CACHE/siw-build.log" 2>&1 || die "siw build failed: $(tail -15 "$CACHE/siw-build.log")"
  mkdir -p "$(dirname "$SIW")"
  cp "$CHROOT/build/siw/siw.ko" "$SIW.tmp" && mv "$SIW.tmp" "$SIW"
fi

# Module dependency data for this kernel including siw (depmod once per kernel).
if [[ ! -f $KDIR/.depmod ]] || ! cmp -s "$SIW" "$MODDIR/updates/siw.ko"; then
  log "depmod $KVER (with siw)"
  mkdir -p "$MODDIR/updates"
  cp "$SIW" "$MODDIR/updates/siw.ko"
  depmod -b "$KDIR/root/usr" "$KVER" || die "depmod $KVER failed"
  touch "$KDIR/.depmod"
fi

# The modules the guest loads, in dependency order.
# virtio_pci + virtio_net: the two-node e2e's link between the VMs (builtin ones resolve to no insmod).
WANTED_MODULES=(configfs bridge veth macvlan virtio_pci virtio_net ib_core ib_uverbs ib_umad rdma_ucm rdma_rxe siw)
MODULE_PATHS=()
for m in "${WANTED_MODULES[@]}"; do
  deps=$(modprobe -d "$KDIR/root/usr" -S "$KVER" --show-depends "$m" 2>&1) ||
    die "module $m: $deps"
  while read -r verb path _; do
    [[ $verb == insmod ]] || continue
    [[ " ${MODULE_PATHS[*]} " == *" $path "* ]] || MODULE_PATHS+=("$path")
  done <<<"$deps"
done

# ---------------------------------------------------------------------------------------------
# Userspace from this machine's Debian 12 packages (installed by scripts/install-deps.sh).
USER_PACKAGES=(libgcc-s1 coreutils jq busybox-static iproute2 rdma-core ibverbs-providers libibverbs1 librdmacm1
               ibverbs-utils rdmacm-utils perftest containernetworking-plugins strace curl)
USER_FILES=(
  /bin/ip /usr/bin/rdma /sbin/bridge /usr/bin/jq
  /usr/bin/strace  # cni-bench: syscalls per CNI command, counted where the kernel is real
  /usr/bin/curl    # dra scenarios: what the (fake) API server holds, read as any client reads it
  /usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/ibv_rc_pingpong
  /usr/bin/rping /usr/bin/ucmatose
  /usr/bin/ib_write_bw /usr/bin/ib_send_lat /usr/bin/ib_send_bw /usr/bin/ib_write_lat /usr/bin/ib_read_bw
  /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
  /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so
  /usr/lib/cni/host-local /usr/lib/cni/static /usr/lib/cni/loopback
  # dlopen()ed, so ldd does not name it: glibc's pthread_exit needs it (rping's threads).
  /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
)
USER_CONFIG=(/etc/libibverbs.d/rxe.driver /etc/libibverbs.d/siw.driver)
# The real clients of the two-node scenarios: UCX 1.13 (ucx_perftest) and Open MPI 4.1 (orterun,
# orted) with the components both dlopen() (ldd does not see them) and Open MPI's help texts and
# default parameters (it refuses to start without them).
USER_PACKAGES+=(ucx-utils libucx0 openmpi-bin libopenmpi3 libpmix2)
USER_FILES+=(/usr/bin/ucx_perftest /usr/bin/ucx_info /usr/bin/orterun /usr/bin/orted
             /usr/lib/x86_64-linux-gnu/libmpi.so.40)
CLIENT_PLUGIN_DIRS=(/usr/lib/x86_64-linux-gnu/ucx /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
                    /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix)
CLIENT_DATA=(/usr/share/openmpi /etc/openmpi /usr/lib/x86_64-linux-gnu/pmix2/share)
versions=""
for p in "${USER_PACKAGES[@]}"; do
  v=$(dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null) || die "package $p is not installed (run scripts/install-deps.sh)"
  [[ $v == "install ok installed "* ]] || die "package $p is not installed (run scripts/install-deps.sh)"
  versions+="$p=${v##* } "
done
for f in "${USER_FILES[@]}" "${USER_CONFIG[@]}"; do [[ -e $f ]] || die "$f missing (run scripts/install-deps.sh)"; done

BASE_KEY=$( { echo "$KVER $PKGVER $versions"; sha256sum "$SIW" "$0" | cut -d' ' -f1; printf '%s\n' "${MODULE_PATHS[@]}"; } |
            sha256sum | cut -c1-16)
BASE=$CACHE/base-$BASE_KEY.cpio

# Copies an ELF file (and, recursively through ldd, its shared libraries) into ROOT under usr/.
copy_file() {  # copy_file ROOT SRC [DEST]
  local root=$1 src=$2 dest=${3:-$2}
  case $dest in /bin/*|/sbin/*|/lib/*|/lib64/*) dest=/usr$dest ;; esac
  [[ -e $root$dest ]] && return 0
  mkdir -p "$(dirname "$root$dest")"
  cp -L "$src" "$root$dest"
}
copy_elf_with_libs() {  # copy_elf_with_libs ROOT SRC [DEST]
  local root=$1 src=$2
  copy_file "$@"
  local lib
  while read -r lib; do
    [[ -n $lib ]] && copy_file "$root" "$lib"
  done < <(ldd "$src" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^\s*\(\/[^ ]*\) (0x.*/\1/p')
}

if [[ ! -f $BASE ]]; then
  log "assembling the base initramfs layer"
  STAGE=$CACHE/stage-base
  rm -rf "$STAGE" && mkdir -p "$STAGE"
  (cd "$STAGE" && mkdir -p usr/bin usr/sbin usr/lib usr/lib64 dev proc sys run tmp etc root var \
     mnt opt/cni/bin opt/rdmak8s/bin e2e && ln -s usr/bin bin && ln -s usr/sbin sbin && ln -s usr/lib lib &&
     ln -s usr/lib64 lib64 && ln -s ../run var/run && chmod 1777 tmp)
  # busybox first, then its applets for every name no real binary takes.
  cp /bin/busybox "$STAGE/usr/bin/busybox"
  for f in "${USER_FILES[@]}"; do
    case $f in
      /usr/lib/cni/*) copy_elf_with_libs "$STAGE" "$f" "/opt/cni/bin/$(basename "$f")" ;;
      *) copy_elf_with_libs "$STAGE" "$f" ;;
    esac
  done
  for f in "${USER_CONFIG[@]}"; do mkdir -p "$STAGE$(dirname "$f")"; cp -L "$f" "$STAGE$f"; done
  for d in "${CLIENT_PLUGIN_DIRS[@]}"; do
    [[ -d $d ]] || die "$d missing (run scripts/install-deps.sh)"
    for f in "$d"/*.so*; do copy_elf_with_libs "$STAGE" "$f"; done
  done
  for d in "${CLIENT_DATA[@]}"; do
    [[ -d $d ]] || die "$d missing (run scripts/install-deps.sh)"
    mkdir -p "$STAGE$(dirname "$d")" && cp -rL "$d" "$STAGE$(dirname "$d")/"
  done
  ln -s orterun "$STAGE/usr/bin/mpirun"
  for a in $(/bin/busybox --list); do
    [[ -e $STAGE/usr/bin/$a || -e $STAGE/usr/sbin/$a ]] || ln -s busybox "$STAGE/usr/bin/$a"
  done
  # iproute2's ip netns, rdma and friends need nothing else; name service for root only.
  echo 'root:x:0:0:root:/root:/bin/sh' > "$STAGE/etc/passwd"
  echo 'root:x:0:' > "$STAGE/etc/group"
  echo 'hosts: files' > "$STAGE/etc/nsswitch.conf"
  printf '127.0.0.1 localhost\n' > "$STAGE/etc/hosts"
  # Kernel modules, decompressed (busybox insmod loads plain .ko), and their load order.
  mkdir -p "$STAGE/lib/modules/$KVER"
  : > "$STAGE/etc/e2e-modules"
  for p in "${MODULE_PATHS[@]}"; do
    name=$(basename "$p"); name=${name%.xz}; name=${name%.zst}
    case $p in
      *.xz) xz -dc "$p" > "$STAGE/lib/modules/$KVER/$name" ;;
      *.zst) zstd -qdc "$p" > "$STAGE/lib/modules/$KVER/$name" ;;
      *) cp "$p" "$STAGE/lib/modules/$KVER/$name" ;;
    esac
    echo "$name" >> "$STAGE/etc/e2e-modules"
  done
  echo "$KVER" > "$STAGE/etc/e2e-kernel"
  (cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) > "$BASE.tmp"
  mv "$BASE.tmp" "$BASE"
  rm -rf "$STAGE"
  # Older base layers are dead weight.
  find "$CACHE" -maxdepth 1 -name 'base-*.cpio' ! -name "$(basename "$BASE")" -delete
fi
if [[ $BASE_ONLY == 1 ]]; then
  log "kernel $KVER, siw.ko and the base layer are ready"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# Project layer: whichever of the project's binaries the build dir holds, with the libraries the
# base layer lacks (gRPC, protobuf...). Rebuilt every time: it is small and its inputs change.
PROJECT_BINARIES=(rdmak8s-device-plugin rdmak8s rdmak8s-fake-kubelet rdmak8s-inspect cni-driver
                  rdmak8s-dra-driver rdmak8s-fake-api-server rdmak8s-fake-dra-kubelet)
STAGE=$CACHE/stage-project
rm -rf "$STAGE" && mkdir -p "$STAGE/opt/rdmak8s/bin" "$STAGE/opt/cni/bin"
present=()
BASE_LIST=$(cpio -it --quiet < "$BASE" | sed 's|^\./||')
for b in "${PROJECT_BINARIES[@]}"; do
    f=""
    for dir in "${BUILD_DIRS[@]}"; do  # the first build dir holding it wins
      [[ -d $dir ]] && f=$(find "$dir" -type f -name "$b" -perm -u+x 2>/dev/null | head -1)
      [[ -n $f ]] && break
    done
    [[ -n $f ]] || continue
    present+=("$b")
    cp "$f" "$STAGE/opt/rdmak8s/bin/$b"
    # Debug info is most of a build's size (~95 MB of a 155 MB initrd: 83 MB of binaries become 8), and
    # every TCG boot decompresses and copies it; symbols stay for backtraces.
    strip --strip-debug "$STAGE/opt/rdmak8s/bin/$b"
    while read -r lib; do
      [[ -n $lib ]] || continue
      dest=$lib; case $dest in /bin/*|/sbin/*|/lib/*|/lib64/*) dest=/usr$dest ;; esac
      grep -qxF "${dest#/}" <<<"$BASE_LIST" || copy_file "$STAGE" "$lib"
    done < <(ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p')
done
# The CNI plugin is also found where runtimes look for plugins.
[[ -f $STAGE/opt/rdmak8s/bin/rdmak8s ]] && cp "$STAGE/opt/rdmak8s/bin/rdmak8s" "$STAGE/opt/cni/bin/rdmak8s"
printf '%s\n' "${present[@]}" > "$STAGE/opt/rdmak8s/present"
PROJECT=$CACHE/project.cpio
(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) > "$PROJECT"
rm -rf "$STAGE"

# Guest layer: init, helpers, scenarios and the e2e-only CNI plugin.
STAGE=$CACHE/stage-guest
rm -rf "$STAGE" && mkdir -p "$STAGE/e2e" "$STAGE/opt/cni/bin"
cp -a "$HERE/guest/." "$STAGE/e2e/"
install -m 0755 "$HERE/guest/init" "$STAGE/init"
for p in "$HERE"/cni/*; do [[ -f $p ]] && install -m 0755 "$p" "$STAGE/opt/cni/bin/$(basename "$p")"; done
# Guest-side helper programs compiled here (Debian 12's gcc; the guest runs Debian 12 userspace).
mkdir -p "$STAGE/e2e/lib"
for c in "$HERE"/guest-src/*.c; do
  [[ -f $c ]] || continue
  if [[ $c == *_tool.c ]]; then  # a program of its own, not a preload library
    exe=$CACHE/guest-src/$(basename "${c%_tool.c}")-$(sha256sum "$c" | cut -c1-12)
    if [[ ! -f $exe ]]; then
      mkdir -p "$CACHE/guest-src"
      cc=gcc
      [[ $c == *_mpi_tool.c ]] && cc=mpicc  # an MPI program: Open MPI's wrapper compiler
      "$cc" -O2 -Wall -Wextra -Werror -o "$exe.tmp" "$c" || die "compile $c failed"
      mv "$exe.tmp" "$exe"
    fi
    mkdir -p "$STAGE/e2e/bin"
    cp "$exe" "$STAGE/e2e/bin/$(basename "${c%_tool.c}")"
    continue
  fi
  so=$CACHE/guest-src/$(basename "${c%.c}")-$(sha256sum "$c" | cut -c1-12).so
  if [[ ! -f $so ]]; then
    mkdir -p "$CACHE/guest-src"
    gcc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$so.tmp" "$c" -ldl || die "compile $c failed"
    mv "$so.tmp" "$so"
  fi
  cp "$so" "$STAGE/e2e/lib/$(basename "${c%.c}").so"
done
GUEST=$CACHE/guest.cpio
(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) > "$GUEST"
rm -rf "$STAGE"

# Runtime layer (--with-containerd): the fetched binaries, cached by their package trees (a tree
# never changes once complete, so its name is its content's key).
LAYERS=("$BASE" "$PROJECT" "$GUEST")
if [[ $WITH_CONTAINERD == 1 ]]; then
  CTR_BIN=$(bash "$SRC_ROOT/scripts/fetch-trixie-containerd.sh" --print | sed -n 's/^CONTAINERD_BIN=//p') ||
    die "fetching containerd 1.7 and runc failed (scripts/fetch-trixie-containerd.sh)"
  [[ -n $CTR_BIN ]] || die "scripts/fetch-trixie-containerd.sh printed no CONTAINERD_BIN"
  # The CRI client: Debian 12's Python with its gRPC and protobuf, and stubs of trixie's CRI
  # api.proto (no Debian release packages crictl). gogoproto options only steer Go code.
  PY_PACKAGES=(python3.11-minimal libpython3.11-stdlib python3-grpcio python3-protobuf python3-grpc-tools)
  py_versions=""
  for p in "${PY_PACKAGES[@]}"; do
    v=$(dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null) || die "package $p is not installed (run scripts/install-deps.sh)"
    [[ $v == "install ok installed "* ]] || die "package $p is not installed (run scripts/install-deps.sh)"
    py_versions+="$p=${v##* } "
  done
  RT_KEY=$( { for b in containerd containerd-shim-runc-v2 ctr runc api.proto; do readlink -f "$CTR_BIN/$b"; done
              echo "$py_versions"; sha256sum "$0" "$HERE/guest-src/cri.py" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
  RUNTIME=$CACHE/runtime-$RT_KEY.cpio
  if [[ ! -f $RUNTIME ]]; then
    log "assembling the runtime layer (containerd 1.7, runc)"
    STAGE=$CACHE/stage-runtime
    rm -rf "$STAGE" && mkdir -p "$STAGE/usr/bin"
    for b in containerd containerd-shim-runc-v2 ctr runc; do
      f=$(readlink -f "$CTR_BIN/$b")
      copy_file "$STAGE" "$f" "/usr/bin/$b"
      # Go binaries linked to libc only, runc to libseccomp too: the libraries the base lacks.
      while read -r lib; do
        [[ -n $lib ]] || continue
        dest=$lib; case $dest in /bin/*|/sbin/*|/lib/*|/lib64/*) dest=/usr$dest ;; esac
        grep -qxF "${dest#/}" <<<"$BASE_LIST" || copy_file "$STAGE" "$lib"
      done < <(ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p')
    done
    PYLIB=/usr/lib/python3.11
    tar -C / -cf - --exclude=__pycache__ --exclude="${PYLIB#/}/test" --exclude="${PYLIB#/}/idlelib" \
      --exclude="${PYLIB#/}/tkinter" --exclude="${PYLIB#/}/ensurepip" --exclude="${PYLIB#/}/lib2to3" \
      --exclude="${PYLIB#/}/config-3.11-x86_64-linux-gnu" "${PYLIB#/}" \
      usr/lib/python3/dist-packages/grpc usr/lib/python3/dist-packages/google | tar -C "$STAGE" -xf - ||
      die "copying Python's standard library, grpc and protobuf failed"
    copy_file "$STAGE" /usr/bin/python3.11 /usr/bin/python3
    while read -r f; do
      while read -r lib; do
        [[ -n $lib ]] || continue
        dest=$lib; case $dest in /bin/*|/sbin/*|/lib/*|/lib64/*) dest=/usr$dest ;; esac
        grep -qxF "${dest#/}" <<<"$BASE_LIST" || copy_file "$STAGE" "$lib"
      done < <(ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p')
    done < <(echo /usr/bin/python3.11; find "$STAGE/usr/lib" -name '*.so' -path '*python3*')
    # The pod network of the runtime scenarios' plain sandboxes (a veth with host-local IPAM).
    copy_file "$STAGE" /usr/lib/cni/ptp /opt/cni/bin/ptp
    mkdir -p "$STAGE/e2e/cri"
    sed -e '/^import "github.com\/gogo/d' -e '/^option (gogoproto/d' "$(readlink -f "$CTR_BIN/api.proto")" > "$STAGE/e2e/cri/api.proto"
    (cd "$STAGE/e2e/cri" && /usr/bin/python3 -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. api.proto) ||
      die "compiling the CRI api.proto with grpc_tools failed"
    install -m 0755 "$HERE/guest-src/cri.py" "$STAGE/e2e/cri/cri"
    (cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) > "$RUNTIME.tmp"
    mv "$RUNTIME.tmp" "$RUNTIME"
    rm -rf "$STAGE"
    find "$CACHE" -maxdepth 1 -name 'runtime-*.cpio' ! -name "$(basename "$RUNTIME")" -delete
  fi
  LAYERS+=("$RUNTIME")
fi

cat "${LAYERS[@]}" > "$OUT/initrd.cpio.tmp"
mv "$OUT/initrd.cpio.tmp" "$OUT/initrd.cpio"
cp "$VMLINUZ" "$OUT/vmlinuz.tmp" && mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
echo "$KVER" > "$OUT/kernel-release"
log "project binaries in the image: ${present[*]:-(none)}"
echo "E2E-IMAGE kernel=$OUT/vmlinuz initrd=$OUT/initrd.cpio kver=$KVER"
