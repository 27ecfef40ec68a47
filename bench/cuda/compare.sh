#!/bin/bash
# Issue 22's GPU goals on the GPU this runs on: ucx_perftest -m cuda between
# two processes (server and client on this host) against the floors of
# cuda_floor, as a markdown table of ratios from one run.
#   bench/cuda/compare.sh [BIN_DIR]
# BIN_DIR holds ucx_perftest (with its perftest_ucp.so) and cuda_floor
# (default: the build tree's); UCX_MODULE_DIR must name libuct_cuda.so's
# directory unless it is installed. MPS=1 (as root, where the driver has
# nvidia-cuda-mps-control) also measures the 8-byte latencies with the MPS
# daemon running: it starts one and quits it at the end.
set -u
BIN=${1:-}
perftest=${BIN:+$BIN/}ucx_perftest
floor=${BIN:+$BIN/}cuda_floor
if [ -z "$BIN" ]; then
    perftest=build/bench/perftest/ucx_perftest
    floor=build/bench/cuda/cuda_floor
fi
port=${PORT:-13337}

floors=$($floor) || { echo "cuda_floor failed" >&2; exit 1; }
figure() { awk -v n="$1" -v s="$2" '$1 == n && $2 == s { print $3 }' <<<"$floors"; }

# "Final:" line of a client run: field 4 is the average latency (usec),
# field 7 the overall bandwidth (MB/s).
perf() {
    timeout 120 "$perftest" -p "$port" > /dev/null 2>&1 &
    local server=$!
    timeout 120 "$perftest" 127.0.0.1 -p "$port" "$@" 2>&1 | awk '/^Final:/ { print $4, $7 }'
    wait "$server"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

echo "| measure | size | ucx-ng | floor | floor is | ratio | goal |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for size in 1048576 4194304 16777216 67108864; do
    iters=$(( (8 << 30) / size ))
    bw=$(perf -t tag_bw -m cuda -s "$size" -n "$iters" | cut -d' ' -f2)
    fl=$(figure d2d "$size")
    echo "| tag_bw device to device, MB/s | $size | $bw | $fl | cudaMemcpy D2D | $(ratio "$bw" "$fl") | >= 0.8 |"
done
lat=$(perf -t tag_lat -m cuda -s 8 -n 5000 | cut -d' ' -f1)
for f in rtt rtt_pinned; do
    fl=$(figure "$f" 8)
    echo "| tag_lat device to device, usec | 8 | $lat | $fl | cudaMemcpyAsync round trip ($f) | $(ratio "$lat" "$fl") | <= 1.2 |"
done
turns=$(awk -v a="$(figure turn_htod 8)" -v b="$(figure turn_dtoh 8)" 'BEGIN { print a + b }')
echo "| tag_lat device to device, usec | 8 | $lat | $turns | two processes' turns: one HtoD + one DtoH | $(ratio "$lat" "$turns") | |"
for m in cuda,host host,cuda; do
    l=$(perf -t tag_lat -m "$m" -s 8 -n 5000 | cut -d' ' -f1)
    echo "| tag_lat $m, usec | 8 | $l | | | | |"
done
# Staged through host memory (no cuda_ipc, as between nodes): against the
# slower copy-engine stage; the host copy between the stages is a third.
for size in 1048576 4194304 16777216; do
    bw=$(UCX_TLS=^cuda_ipc perf -t tag_bw -m cuda -s "$size" -n $(( (1 << 30) / size )) |
         cut -d' ' -f2)
    fl=$(awk -v a="$(figure dtoh_pinned "$size")" -v b="$(figure htod_pinned "$size")" \
         'BEGIN { print (a < b) ? a : b }')
    echo "| tag_bw staged through host (UCX_TLS=^cuda_ipc), MB/s | $size | $bw | $fl | pinned cudaMemcpy, the slower way | $(ratio "$bw" "$fl") | |"
done
if [ "${MPS:-0}" = 1 ] && command -v nvidia-cuda-mps-control > /dev/null &&
   nvidia-cuda-mps-control -d; then
    # The daemon takes a moment to accept clients: the first client waits.
    lat=$(perf -t tag_lat -m cuda -s 8 -n 5000 | cut -d' ' -f1)
    for f in rtt rtt_pinned; do
        fl=$(figure "$f" 8)
        echo "| tag_lat device to device with MPS, usec | 8 | $lat | $fl | cudaMemcpyAsync round trip ($f) | $(ratio "$lat" "$fl") | <= 1.2 |"
    done
    for m in cuda,host host,cuda; do
        l=$(perf -t tag_lat -m "$m" -s 8 -n 5000 | cut -d' ' -f1)
        echo "| tag_lat $m with MPS, usec | 8 | $l | | | | |"
    done
    echo quit | nvidia-cuda-mps-control
fi
echo
echo "floors: $(tr '\n' ';' <<<"$floors")"
