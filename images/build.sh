#!/usr/bin/env bash
# Builds every images/<name>/Dockerfile as $IMAGE_REPO/rdmak8s-<name>:$IMAGE_TAG, with the first
# container engine that exists AND answers (docker, podman, buildah, in that order; a docker CLI
# without a daemon does not count). The build context is the repository root.
#
# Exit status: 0 when every image was built; 1 when a build failed; 2 when no working container
# engine was found -- non-zero on purpose, so that a pipeline that goes on to push images cannot
# mistake "nothing built" for success. The message says which engines were tried and why each was
# unusable.
#
# Environment: IMAGE_REPO (default ghcr.io/rdmak8s, as in manifests/components/images/kustomization.yaml),
# IMAGE_TAG (default: the project version from CMakeLists.txt), CONTAINER_ENGINE (force one).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo=${IMAGE_REPO:-ghcr.io/rdmak8s}
tag=${IMAGE_TAG:-$(sed -n 's/^project(rdmak8s VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")}
[[ -n "$tag" ]] || { echo "make images: cannot read the project version from CMakeLists.txt; set IMAGE_TAG" >&2; exit 1; }

engine_works() {
  case $1 in
    docker | podman) "$1" info >/dev/null 2>&1 ;;
    buildah) buildah info >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}

engine=
tried=()
for e in ${CONTAINER_ENGINE:-docker podman buildah}; do
  if ! command -v "$e" >/dev/null 2>&1; then
    tried+=("$e: not installed")
  elif ! engine_works "$e"; then
    tried+=("$e: installed but '$e info' fails (no daemon or no permission?)")
  else
    engine=$e
    break
  fi
done
if [[ -z "$engine" ]]; then
  {
    echo "make images: no working container engine; no image was built."
    for t in "${tried[@]}"; do echo "  - $t"; done
    echo "  Install and start docker or podman (or buildah), or set CONTAINER_ENGINE."
  } >&2
  exit 2
fi

built=()
for dockerfile in "$root"/images/*/Dockerfile; do
  name=rdmak8s-$(basename "$(dirname "$dockerfile")")
  image="$repo/$name:$tag"
  echo "make images: $engine building $image from ${dockerfile#"$root"/}" >&2
  case $engine in
    buildah) buildah bud -f "$dockerfile" -t "$image" "$root" ;;
    *) "$engine" build -f "$dockerfile" -t "$image" "$root" ;;
  esac || { echo "make images: building $image failed" >&2; exit 1; }
  built+=("$image")
done
printf 'make images: built %s\n' "${built[@]}" >&2
