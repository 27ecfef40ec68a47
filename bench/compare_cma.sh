#!/bin/bash
# CMA get zcopy bandwidth, ours against a plain memcpy of the same size (the
# copy ceiling) and against UCX 1.13's cma, measured back to back in one run.
# Each measurement is repeated ROUNDS times, interleaved; the table shows the
# median MB/s and the median of the per-round ratios to memcpy and to UCX.
#
#   bench/compare_cma.sh [build-dir] [size] [iterations] [rounds]
#
# Rows: uct_perf (memcpy_bw, get_zcopy_bw with -H and -o), UCX 1.13's
# ucx_perftest (Debian's ucx-utils: /usr/bin/ucx_perftest, or $UCX_PERFTEST)
# as server and client on localhost, and our ucx_perftest with the same
# command line (--loopback, plus --huge-pages: UCX's tool allocates its
# buffers on THP). Without Debian's tool the UCX rows read "n/a". Pins
# initiator/responder to CPUs 0 and 1. MB/s are 2^20 bytes/s.
set -u
BUILD=${1:-build}
SIZE=${2:-4194304}
ITERS=${3:-300}
ROUNDS=${4:-3}
WARMUP=$((ITERS / 10))
PERF="$BUILD/bench/uct_perf"
NG_PERFTEST="$BUILD/bench/perftest/ucx_perftest"
UCX_PERFTEST=${UCX_PERFTEST:-/usr/bin/ucx_perftest}
PORT=$((20000 + $$ % 20000))
# UCX's own test of cma get zcopy; both tools take it as it is.
GET_ARGS=(-t get -D zcopy -x cma -d memory -s "$SIZE" -n "$ITERS" -w "$WARMUP")

for tool in "$PERF" "$NG_PERFTEST"; do
    [ -x "$tool" ] || { echo "no $tool: build first (ninja -C $BUILD)" >&2; exit 1; }
done
export UCX_CONFIG_FILE=

# Prints the MB/s of a uct_perf run.
ours() {
    "$PERF" "$@" -s "$SIZE" -n "$ITERS" -w "$WARMUP" -c 0,1 |
        awk '/ bandwidth / { print $3 }'
}

# Prints the overall MB/s of a ucx_perftest run: the 7th field of "Final:".
final_mbs() { awk '/^Final:/ { print $7 }'; }

# Our ucx_perftest: one command, the peer forked (-c: this side, the peer).
ng() {
    local out
    out=$("$NG_PERFTEST" --loopback -c 0,1 "${GET_ARGS[@]}" "$@" 2>/dev/null | final_mbs)
    echo "${out:-n/a}"
}

# UCX 1.13's ucx_perftest as a server and a client on localhost.
ucx() {
    [ -x "$UCX_PERFTEST" ] || { echo n/a; return; }
    "$UCX_PERFTEST" -p $PORT -c 1 "${GET_ARGS[@]}" "$@" >/dev/null 2>&1 &
    local server=$!
    local out=""
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 0.3     # give the server time to listen; retried below if not yet
        out=$("$UCX_PERFTEST" localhost -p $PORT -c 0 "${GET_ARGS[@]}" "$@" 2>/dev/null |
              final_mbs)
        [ -n "$out" ] && break
    done
    wait $server 2>/dev/null
    echo "${out:-n/a}"
}

median() { tr ' ' '\n' | grep -v '^$' | grep -v n/a | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "n/a" }'; }

# Median over rounds of a[i] / b[i]: each ratio compares two runs made a few
# seconds apart, which the load of a shared machine changes less than it
# changes runs far apart.
ratio() {
    local -a a=($1) b=($2)
    local out="" i
    for i in "${!a[@]}"; do
        out+=" $(awk -v x="${a[$i]}" -v y="${b[$i]:-n/a}" 'BEGIN { if (x == "n/a" || y == "n/a" || y == 0) print "n/a"; else printf "%.3f", x / y }')"
    done
    local m
    m=$(echo "$out" | median)
    [ "$m" = n/a ] && echo n/a || printf "%.2f" "$m"
}

declare -A results
names=(memcpy memcpy_huge ours ours_huge ours_quiet ours_quiet_huge ng_tool ng_tool_quiet
       ucx ucx_quiet)
for round in $(seq "$ROUNDS"); do
    results[memcpy]+=" $(ours -t memcpy_bw)"
    results[memcpy_huge]+=" $(ours -t memcpy_bw -H)"
    results[ours]+=" $(ours -t get_zcopy_bw -x cma)"
    results[ours_huge]+=" $(ours -t get_zcopy_bw -x cma -H)"
    results[ours_quiet]+=" $(ours -t get_zcopy_bw -x cma -o)"
    results[ours_quiet_huge]+=" $(ours -t get_zcopy_bw -x cma -o -H)"
    results[ng_tool]+=" $(ng --huge-pages)"
    results[ng_tool_quiet]+=" $(ng --huge-pages -o)"
    results[ucx]+=" $(ucx)"
    results[ucx_quiet]+=" $(ucx -o)"
done

printf "%-46s %9s %9s %9s %9s   %s\n" "get $SIZE bytes" "MB/s" "x memcpy" "x UCX" \
       "x UCX -o" "MB/s per round"
for n in "${names[@]}"; do
    m=$(echo "${results[$n]}" | median)
    case $n in
        memcpy)          label="memcpy, 4 KiB pages";;
        memcpy_huge)     label="memcpy, huge pages (the ceiling)";;
        ours)            label="ucx-ng cma, 4 KiB pages";;
        ours_huge)       label="ucx-ng cma, huge pages (-H)";;
        ours_quiet)      label="ucx-ng cma, 4 KiB, target idle (-o)";;
        ours_quiet_huge) label="ucx-ng cma, huge pages, target idle";;
        ng_tool)         label="ucx-ng cma, our ucx_perftest --huge-pages";;
        ng_tool_quiet)   label="ucx-ng cma, our ucx_perftest --huge-pages -o";;
        ucx)             label="UCX 1.13 cma (its buffers: thp)";;
        ucx_quiet)       label="UCX 1.13 cma, target idle (-o)";;
    esac
    printf "%-46s %9s %9s %9s %9s   %s\n" "$label" "$m" \
           "$(ratio "${results[$n]}" "${results[memcpy_huge]}")" \
           "$(ratio "${results[$n]}" "${results[ucx]}")" \
           "$(ratio "${results[$n]}" "${results[ucx_quiet]}")" "${results[$n]# }"
done
