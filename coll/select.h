/*
 * Which algorithm runs a collective: a default by message size and team
 * size, overridden by UCX_COLL_TUNE, in the spirit of UCC's tuning strings:
 *
 *   UCX_COLL_TUNE=allreduce:0-8k:@recursive_doubling#allreduce:8k-inf:@ring#bcast:@binomial
 *   UCX_COLL_TUNE=bcast:[2-4]:@binomial#allreduce:64k-inf:[9-inf]:@ring
 *
 * (the algorithms' names are in algorithms.cc and docs/collectives.md)
 *
 * Tokens are separated by '#'; each is coll[:start-end][:[min-max]]:@algorithm,
 * the range in bytes of one rank's message (count * element size; sizes take
 * k/m/g suffixes, "inf" is no limit, the end is exclusive) and, in brackets
 * as in UCC, the range of team sizes (both ends included, "inf" no limit);
 * a range left out covers everything. Later tokens win where they overlap.
 * A token may end in radix=K (2 to 16) instead of an algorithm: it sets the
 * radix of the knomial algorithms (barrier, bcast, allreduce, reduce) over
 * its ranges, in place of UCX_COLL_KNOMIAL_RADIX (UCC's *_KN_RADIX by size):
 *
 *   UCX_COLL_TUNE=allreduce:0-4k:radix=8#bcast:1m-inf:radix=2
 *
 * UCX_LOG_LEVEL=info prints the resolved table when a context is made.
 */
#ifndef COLL_SELECT_H
#define COLL_SELECT_H

#include <coll/api/ucp_coll.h>

#include <cstddef>
#include <string>
#include <vector>

namespace coll {

struct algorithm;

struct tune_rule {
    ucp_coll_type_t coll;
    size_t start;      /* bytes, inclusive */
    size_t end;        /* bytes, exclusive; SIZE_MAX: no limit */
    unsigned team_min; /* team sizes, both included */
    unsigned team_max; /* UINT_MAX: no limit */
    unsigned alg;      /* index in algorithms_of(coll); not for a radix rule */
    unsigned radix;    /* 0: an algorithm rule; else the knomial radix it sets */
};

/* UCX_COLL_KNOMIAL_RADIX: the radix of the knomial algorithms (a rank
 * sends to up to radix - 1 peers per round); UCC's default for small
 * messages is 4. */
constexpr unsigned knomial_radix_default = 4;
constexpr unsigned knomial_radix_min     = 2;
constexpr unsigned knomial_radix_max     = 16;

/* UCX_COLL_PIPELINE_SEGMENT: the bytes of a segment of the pipelined
 * bcast and reduce (one message per segment and link); Open MPI's tuned
 * pipelines use segments of tens of KiB. */
constexpr size_t pipeline_segment_default = 65536;
constexpr size_t pipeline_segment_min     = 1024;
constexpr size_t pipeline_segment_max     = size_t(1) << 30;

struct tuning {
    std::vector<tune_rule> rules; /* in the order given */
    unsigned knomial_radix  = knomial_radix_default;
    size_t pipeline_segment = pipeline_segment_default;
};

/* Parses a UCX_COLL_TUNE value; false (with an error logged) if it is bad. */
bool parse_tuning(const char *text, tuning *out);

/* The algorithm for a collective of `bytes` per rank on `team_size` ranks. */
const algorithm &select_algorithm(const tuning &tune, ucp_coll_type_t coll, size_t bytes,
                                  unsigned team_size);

/* The radix of the knomial algorithms for a collective of `bytes` per rank
 * on `team_size` ranks: UCX_COLL_KNOMIAL_RADIX, or the last radix rule
 * that covers it. */
unsigned select_radix(const tuning &tune, ucp_coll_type_t coll, size_t bytes, unsigned team_size);

/* The resolved table, one line per collective (for UCX_LOG_LEVEL=info). */
std::vector<std::string> describe_tuning(const tuning &tune);

/* Reads UCX_COLL_TUNE, UCX_COLL_KNOMIAL_RADIX and UCX_COLL_PIPELINE_SEGMENT
 * (through the UCS configuration: files and the environment); false (with
 * an error logged) if a value is bad. */
bool read_tuning(tuning *out);

} // namespace coll

#endif
