# Shared by .ci/run (tests) and .ci/main (the main job): installs every
# dependency from Debian's archive and builds the project into $BUILD_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}

# Build tools, test framework, libraries, and the references we compare with:
# Debian's UCX 1.13 (ABI probe, benchmarks) and the MPI runtimes that must run on us.
PACKAGES=(
  build-essential meson ninja-build pkg-config python3
  catch2 libboost-dev
  libibverbs-dev librdmacm-dev
  libucx-dev ucx-utils
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  gnuplot-nox
  iproute2 util-linux
)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  fi
}

build() {
  local extra=("$@")
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" "$ROOT" --prefix "$BUILD_DIR/install" "${extra[@]}"
  fi
  ninja -C "$BUILD_DIR"
}
