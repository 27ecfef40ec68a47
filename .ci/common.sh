# Shared by .ci/run (tests) and .ci/main (the main job): installs every
# dependency from Debian's archive and builds the project into $BUILD_DIR
# (and, for .ci/run, the sanitizer build into $SAN_BUILD_DIR).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SAN_BUILD_DIR=${SAN_BUILD_DIR:-$ROOT/build-san}

# Build tools, test framework, libraries, and the references we compare with:
# Debian's UCX 1.13 (ABI probe, benchmarks) and the MPI runtimes that must run on us.
PACKAGES=(
  build-essential meson ninja-build pkg-config python3 cmake
  catch2 libboost-dev libdw-dev
  libibverbs-dev librdmacm-dev
  libucx-dev ucx-utils
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  gnuplot-nox doxygen
  iproute2 util-linux
  clang-14 libclang-rt-14-dev llvm-14 clang-format-14
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

# clang with ASan + UBSan (every error fatal), the libraries' assertions
# (ucs_assert: -Db_ndebug=false) and libFuzzer's coverage in every library,
# plus the fuzz targets (docs/fuzzing.md). Only what the sanitizer job runs
# is built: the libraries, the ucs/uct/ucp test binaries and their helpers,
# ucx_info and the test modules (uct's modules test), the verbs module and
# the emulated verbs device its tests run on, and the fuzz targets.
# The verbs module and the emulated device of its tests, where the build has
# them (rdma-core found).
verbs_targets() {
  if [ -f "$1/uct/ib/libuct_ib.so" ] || grep -q "libuct_ib.so" "$1/build.ninja" 2>/dev/null; then
    echo uct/ib/libuct_ib.so tests/verbs_emu/libverbs_emu.so \
      tests/verbs_emu/libverbs_emu_probe.so tests/verbs_emu/test_verbs_emu
  fi
}

build_sanitized() {
  if [ ! -f "$SAN_BUILD_DIR/build.ninja" ]; then
    local flags="-gline-tables-only -fno-sanitize-recover=all"
    CC=clang-14 CXX=clang++-14 meson setup "$SAN_BUILD_DIR" "$ROOT" --werror \
      -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
      -Doptimization=2 -Ddebug=false -Db_ndebug=false \
      -Dc_args="$flags" -Dcpp_args="$flags" \
      -Dc_link_args=-fno-sanitize-recover=all -Dcpp_link_args=-fno-sanitize-recover=all
  fi
  ninja -C "$SAN_BUILD_DIR" tests/ucs/test_ucs tests/ucs/crash_helper tests/ucs/chain_helper \
    tests/uct/test_uct tests/ucp/test_ucp tests/coll/test_coll \
    tests/progress/ucp_progress_probe tests/probes/ucp_bad_input_probe tests/soak/ucp_soak \
    tools/info/ucx_info tests/uct/modules/testloop/libuct_testloop.so \
    tests/uct/modules/bad/libuct_badabi.so tests/uct/modules/bad/libuct_noentry.so \
    $(verbs_targets "$SAN_BUILD_DIR") fuzz_targets
}

# Sanitizer settings of the tests run on that build: every report stops
# the process (and fails its test), leaks included; llvm-symbolizer puts
# file:line in the stacks.
sanitizer_env() {
  export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14 || true)}
  # Our crash handler would take SIGSEGV from ASan's (as UCX's does) and re-raise
  # it, so ASan would report the re-raise instead of the fault: keep ASan's. The
  # [debug] tests set UCX_HANDLE_ERRORS themselves.
  export UCX_HANDLE_ERRORS=${UCX_HANDLE_ERRORS:-none}
}
