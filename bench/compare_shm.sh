#!/bin/bash
# Shared-memory latency, ours against the physical floor and against UCX,
# measured back to back in one run. Each measurement is repeated ROUNDS
# times, interleaved, and the median of the medians is reported.
#
#   bench/compare_shm.sh [build-dir] [iterations] [rounds]
#
# Needs ucx_perftest (Debian's ucx-utils) for the UCX columns; without it
# those columns read "n/a". Pins initiator/responder to CPUs 0 and 1.
set -u
BUILD=${1:-build}
ITERS=${2:-100000}
ROUNDS=${3:-3}
PERF="$BUILD/bench/uct_perf"
PORT=$((20000 + $$ % 20000))

[ -x "$PERF" ] || { echo "no $PERF: build first (ninja -C $BUILD)" >&2; exit 1; }

# Prints the one-way median latency in usec of a uct_perf run.
ours() {
    "$PERF" "$@" -n "$ITERS" -c 0,1 | awk '/one-way latency/ { print $6 }'
}

# Prints the 50%ile latency in usec of an ucx_perftest client/server pair.
ucx() {
    command -v ucx_perftest >/dev/null || { echo n/a; return; }
    local env=$1; shift
    env $env ucx_perftest -p $PORT -c 1 "$@" -n "$ITERS" >/dev/null 2>&1 &
    local server=$!
    local out=""
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 0.3     # give the server time to listen; retried below if not yet
        out=$(env $env ucx_perftest localhost -p $PORT -c 0 "$@" -n "$ITERS" 2>/dev/null |
              awk '/^Final:/ { print $3 }')
        [ -n "$out" ] && break
    done
    wait $server 2>/dev/null
    echo "${out:-n/a}"
}

median() { tr ' ' '\n' | grep -v '^$' | grep -v n/a | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "n/a" }'; }

declare -A results
names=(floor posix sysv ucx_uct_posix ucx_ucp_tag_posix)
for round in $(seq "$ROUNDS"); do
    results[floor]+=" $(ours -t cacheline_lat)"
    results[posix]+=" $(ours -t am_short_lat -x posix -s 8)"
    results[sysv]+=" $(ours -t am_short_lat -x sysv -s 8)"
    results[ucx_uct_posix]+=" $(ucx '' -t am_lat -x posix -d memory -s 8)"
    results[ucx_ucp_tag_posix]+=" $(ucx UCX_TLS=posix -t tag_lat -s 8)"
done

floor=$(echo "${results[floor]}" | median)
printf "%-34s %10s %10s   %s\n" "measurement (8 bytes, one-way)" "usec" "x floor" "rounds"
for n in "${names[@]}"; do
    m=$(echo "${results[$n]}" | median)
    ratio=$(awk -v a="$m" -v b="$floor" 'BEGIN { if (a == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }')
    case $n in
        floor)             label="cache-line floor (uct_perf)";;
        posix)             label="ucx-ng posix am_short";;
        sysv)              label="ucx-ng sysv am_short";;
        ucx_uct_posix)     label="UCX 1.13 uct posix am_lat";;
        ucx_ucp_tag_posix) label="UCX 1.13 ucp tag_lat (posix)";;
    esac
    printf "%-34s %10s %10s   %s\n" "$label" "$m" "$ratio" "${results[$n]# }"
done
