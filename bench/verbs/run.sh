#!/usr/bin/env bash
# ucx_perftest over the verbs transports: the performance model ucx_info
# prints, uct tests on rc_verbs (active-message latency and bandwidth, put
# latency and bandwidth, fetch-add latency) and UCP tests with
# UCX_TLS=rc_verbs,tcp (tcp only carries the wireup), between two processes
# of this machine (--loopback).
#
# Without a verbs adapter it runs on the emulated device of the tests
# (tests/verbs_emu: shared-memory rings and CMA) and says so first: those
# numbers measure the emulator, not InfiniBand or RoCE. On two hosts with an
# adapter, run ucx_perftest as a server on one and a client on the other
# (bench/README.md), against UCX 1.13's the same way.
#
#   bench/verbs/run.sh [BUILD_DIR]     (default: build; ITERS=10000)
set -euo pipefail

build=${1:-build}
iters=${ITERS:-10000}
perftest=$build/bench/perftest/ucx_perftest
info=$build/tools/info/ucx_info
export UCX_MODULE_DIR=${UCX_MODULE_DIR:-$build/uct/ib}

if ! "$info" -d -t rc_verbs 2>/dev/null | grep -q "Transport: rc_verbs"; then
    emulator=$build/tests/verbs_emu/libverbs_emu.so
    if [ ! -e "$emulator" ]; then
        echo "no verbs adapter here and no emulated device built ($emulator)" >&2
        exit 1
    fi
    echo "# NOTE: no verbs adapter on this machine: these runs use the EMULATED device"
    echo "# (tests/verbs_emu: shared memory and CMA). The numbers measure the emulator,"
    echo "# not InfiniBand or RoCE, and say nothing of the transport's speed on hardware."
    export LD_PRELOAD=$emulator
    export VERBS_EMU_FABRIC=/verbs_emu.bench.$$
    trap 'rm -f "/dev/shm$VERBS_EMU_FABRIC"' EXIT    # the emulator's table of this run
fi
device=$("$info" -d -t rc_verbs | sed -n 's/^# *Device: //p' | head -1)

echo "# rc_verbs on $device: the model UCP selects lanes and thresholds with"
"$info" -d -t rc_verbs | grep -E "bandwidth:|latency:|overhead:"

run() {
    echo
    echo "# ucx_perftest $*"
    "$perftest" --loopback -n "$iters" "$@" | grep -E "^Final:|^\|.*(latency|bandwidth)"
}

run -t am_short_lat -x rc_verbs -d "$device" -s 8
run -t am_bcopy_bw -x rc_verbs -d "$device" -s 4096
run -t put_short_lat -x rc_verbs -d "$device" -s 8
run -t put_zcopy_bw -x rc_verbs -d "$device" -s 65536
run -t fadd -x rc_verbs -d "$device" -s 8
export UCX_TLS=rc_verbs,tcp
run -t tag_lat -s 8
run -t tag_bw -s 1048576
run -t ucp_put_bw -s 65536
