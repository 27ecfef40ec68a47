/*
 * Benchmarks of several processes on one machine (ucp_dwq_coll,
 * ucp_coll_bench): the parent forks the ranks and only passes their blobs
 * (worker addresses, keys) around and relays one-byte barriers; each rank
 * talks to it over a socketpair (perf::fd_oob).
 */
#ifndef BENCH_COMMON_FORKED_RANKS_H
#define BENCH_COMMON_FORKED_RANKS_H

#include "oob.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace perf {

/*
 * Forks `nranks` processes, each exiting with body(rank, channel). Every
 * rank first sends `blobs_per_rank` blobs; the parent sends all ranks'
 * blobs, rank by rank, to every rank. Then for each byte of `barriers` the
 * parent waits for that byte from every rank and answers each with 'g'.
 * True when every step worked and every rank exited 0.
 */
bool run_forked_ranks(unsigned nranks, unsigned blobs_per_rank,
                      const std::vector<uint8_t> &barriers,
                      const std::function<int(unsigned rank, oob &channel)> &body);

} // namespace perf

#endif
