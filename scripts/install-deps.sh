#!/usr/bin/env bash
# Installs every Debian 12 package that the build, the tests, the demo and the benchmarks need.
# Idempotent and quiet: when everything is present it prints nothing and touches nothing.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential g++ cmake make pkg-config git ca-certificates
  ninja-build  # the CMake presets' generator
  ccache  # make test's builds (scripts/test.sh): a cache outside the checkout, keyed by content
  # libraries we link
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  nlohmann-json3-dev
  libnghttp2-dev  # libnghttp2.a: the CNI's HTTP/2 to kubelet's pod-resources API (cni/pod_resources_client.h)
  libcli11-dev libspdlog-dev prometheus-cpp-dev
  # DRA driver's API client: HTTP(S) and kubeconfig YAML (dra/api/kube_client.h says why);
  # libssl-dev for the TLS of the tests' fake API server
  libcurl4-openssl-dev libyaml-cpp-dev libssl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev iproute2 kmod procps
  strace  # cni_exec_bench counts the CNI's syscalls per ADD/DEL
  # make test's asan and tsan stages, and make fuzz: clang and its sanitizer/libFuzzer runtimes
  clang libclang-rt-14-dev lld  # links their test executables (CMakePresets.json)
  clang-tidy  # make tidy: the checks in .clang-tidy over our own sources (scripts/tidy.sh)
  # CNI driven as runtimes drive it: libcni (Go) and the reference plugins
  golang-go golang-github-appc-cni-dev containernetworking-plugins
  # manifests checked (kustomize and kubectl are trixie's, fetched by the tests:
  # scripts/fetch-trixie-tools.sh; Debian 12's kubectl 1.20 cannot render them)
  python3 python3-yaml debian-archive-keyring
  # e2e VM: soft RDMA under qemu, userspace from Debian packages
  qemu-system-x86 busybox-static debootstrap cpio xz-utils
  ibverbs-utils rdmacm-utils perftest jq curl
  # e2e with containerd (issue 25): the CRI client in the guest is Python on Debian's gRPC, its
  # stubs compiled from trixie's CRI api.proto at image build
  python3-grpcio python3-grpc-tools python3-protobuf
  # two-node e2e: the real clients in its pods (UCX 1.13, Open MPI 4.1 over UCX; mpicc)
  ucx-utils openmpi-bin libopenmpi-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  # dpkg-query prints "install ok installed" only for a package that is fully installed.
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
