/*
 * ucp_coll_bench: the collectives of libucp_coll timed per operation, at the
 * operations and sizes of coll_sizes.h (as mpi_coll_bench times MPI's).
 *
 *   ucp_coll_bench [-n RANKS] [-i ITERATIONS] [-x TLS] [-y] [-o OPERATION] [-s BYTES]
 *
 * Forks RANKS processes (the parent only passes worker addresses around),
 * which make a team and run each collective: a warm-up block, then 5
 * blocks; rank 0 prints "<operation> <bytes> <us>", the median block's time
 * per operation. -y: yield the core when progress finds nothing (more ranks
 * than cores, as Open MPI does under --oversubscribe). -o and -s time only
 * that operation and size (for profiles); -o reduce times a reduce of
 * doubles to rank 0, which the MPI benchmark does not (so it is left out of
 * the default run). The allreduce and reduce sums are checked.
 */
#include "coll_sizes.h"

#include "../common/forked_ranks.h"

#include <coll/api/ucp_coll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sched.h>
#include <unistd.h>

namespace {

#define CHECK(_cond, _what) \
    do { \
        if (!(_cond)) { \
            std::fprintf(stderr, "ucp_coll_bench rank %u: %s\n", rank, _what); \
            return 1; \
        } \
    } while (0)

struct rank_state {
    ucp_context_h context   = nullptr;
    ucp_worker_h worker     = nullptr;
    ucp_coll_context_h coll = nullptr;
    ucp_team_h team         = nullptr;
    std::vector<ucp_ep_h> eps;
    bool yield = false;

    ucs_status_t wait(ucs_status_ptr_t request)
    {
        if (request == nullptr) {
            return UCS_OK;
        }
        if (UCS_PTR_IS_ERR(request)) {
            return UCS_PTR_STATUS(request);
        }
        ucs_status_t status;
        while ((status = ucp_coll_request_check_status(request)) == UCS_INPROGRESS) {
            if ((ucp_worker_progress(worker) == 0) && yield) {
                sched_yield();
            }
        }
        ucp_coll_request_free(request);
        return status;
    }
};

/* Past coll_sizes.h's operations: timed only with -o reduce. */
constexpr int bench_reduce = BENCH_OPS;

const char *op_name(int op)
{
    return (op == bench_reduce) ? "reduce" : bench_coll_names[op];
}

ucp_coll_args_t args_of(int op, const double *sbuf, double *rbuf, size_t bytes)
{
    ucp_coll_args_t a{};
    a.field_mask = UCP_COLL_ARGS_FIELD_OP;
    a.sbuf       = sbuf;
    a.rbuf       = rbuf;
    a.dt         = UCP_COLL_DT_UINT8;
    a.count      = bytes;
    switch (op) {
    case BENCH_BARRIER:
        a.coll = UCP_COLL_BARRIER;
        break;
    case BENCH_BCAST:
        a.coll = UCP_COLL_BCAST;
        break;
    case BENCH_ALLREDUCE:
        a.coll  = UCP_COLL_ALLREDUCE;
        a.dt    = UCP_COLL_DT_DOUBLE;
        a.count = bytes / sizeof(double);
        a.op    = UCP_COLL_OP_SUM;
        break;
    case bench_reduce:
        a.coll  = UCP_COLL_REDUCE;
        a.dt    = UCP_COLL_DT_DOUBLE;
        a.count = bytes / sizeof(double);
        a.op    = UCP_COLL_OP_SUM;
        break;
    case BENCH_ALLGATHER:
        a.coll = UCP_COLL_ALLGATHER;
        break;
    default:
        a.coll = UCP_COLL_ALLTOALL;
        break;
    }
    return a;
}

struct selection {
    const char *op = nullptr; /* nullptr: all */
    long bytes     = -1;      /* -1: all */
};

int run_rank(unsigned rank, unsigned nranks, unsigned base, const char *tls, bool yield,
             const selection &only, perf::oob &sock)
{
    rank_state s;
    s.yield = yield;
    ucp_config_t *config;
    CHECK(ucp_config_read(nullptr, nullptr, &config) == UCS_OK, "ucp_config_read failed");
    if (tls != nullptr) {
        ucp_config_modify(config, "TLS", tls);
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_AM;
    CHECK(ucp_init(&params, config, &s.context) == UCS_OK, "ucp_init failed");
    ucp_config_release(config);
    ucp_worker_params_t wp{};
    CHECK(ucp_worker_create(s.context, &wp, &s.worker) == UCS_OK, "ucp_worker_create failed");
    CHECK(ucp_coll_context_create(s.worker, &s.coll) == UCS_OK, "ucp_coll_context_create");
    ucp_address_t *address;
    size_t length;
    CHECK(ucp_worker_get_address(s.worker, &address, &length) == UCS_OK, "no address");
    std::vector<uint8_t> mine(reinterpret_cast<uint8_t *>(address),
                              reinterpret_cast<uint8_t *>(address) + length);
    ucp_worker_release_address(s.worker, address);
    CHECK(sock.send_blob(mine), "cannot send the address");
    for (unsigned r = 0; r < nranks; ++r) {
        std::vector<uint8_t> remote;
        CHECK(sock.recv_blob(&remote), "no address");
        ucp_ep_h ep = nullptr;
        if (r != rank) {
            ucp_ep_params_t ep_params{};
            ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
            ep_params.address    = reinterpret_cast<const ucp_address_t *>(remote.data());
            CHECK(ucp_ep_create(s.worker, &ep_params, &ep) == UCS_OK, "ucp_ep_create failed");
        }
        s.eps.push_back(ep);
    }
    ucp_team_params_t tp{};
    tp.field_mask = UCP_TEAM_PARAM_FIELD_EPS;
    tp.eps        = s.eps.data();
    tp.size       = nranks;
    tp.my_rank    = rank;
    CHECK(s.wait(ucp_team_create_nbx(s.coll, &tp, &s.team, nullptr)) == UCS_OK, "no team");

    const size_t most = bench_coll_sizes[BENCH_COLL_NSIZES - 1] * nranks;
    std::vector<double> sbuf(most / sizeof(double), double(rank + 1));
    std::vector<double> rbuf(most / sizeof(double));
    const ucp_coll_args_t barrier = args_of(BENCH_BARRIER, nullptr, nullptr, 0);
    for (int op = 0; op <= bench_reduce; ++op) {
        for (size_t si = 0; si < BENCH_COLL_NSIZES; ++si) {
            const size_t bytes = (op == BENCH_BARRIER) ? 0 : bench_coll_sizes[si];
            if (((op == bench_reduce) && (only.op == nullptr)) ||
                ((only.op != nullptr) && (std::strcmp(only.op, op_name(op)) != 0)) ||
                ((only.bytes >= 0) && (op != BENCH_BARRIER) && (size_t(only.bytes) != bytes))) {
                continue;
            }
            const unsigned iters    = bench_coll_iterations(bytes, base);
            const ucp_coll_args_t a = args_of(op, sbuf.data(), rbuf.data(), bytes);
            double block_us[6];
            for (double &us : block_us) {
                CHECK(s.wait(ucp_coll_nbx(s.team, &barrier, nullptr)) == UCS_OK, "barrier");
                const auto start = std::chrono::steady_clock::now();
                for (unsigned i = 0; i < iters; ++i) {
                    CHECK(s.wait(ucp_coll_nbx(s.team, &a, nullptr)) == UCS_OK, "collective");
                }
                us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                               start)
                         .count() /
                     iters;
            }
            CHECK(((op != BENCH_ALLREDUCE) && ((op != bench_reduce) || (rank != 0))) ||
                      (rbuf[0] == nranks * (nranks + 1) / 2.0),
                  "wrong sum");
            std::sort(block_us + 1, block_us + 6);
            if (rank == 0) {
                std::printf("%s %zu %.3f\n", op_name(op), bytes, block_us[3]);
                std::fflush(stdout);
            }
            if (op == BENCH_BARRIER) {
                break;
            }
        }
    }
    CHECK(s.wait(ucp_coll_nbx(s.team, &barrier, nullptr)) == UCS_OK, "barrier");
    CHECK(ucp_team_destroy(s.team) == UCS_OK, "ucp_team_destroy");
    CHECK(ucp_coll_context_destroy(s.coll) == UCS_OK, "ucp_coll_context_destroy");
    std::vector<ucs_status_ptr_t> closes;
    ucp_request_param_t close{};
    for (ucp_ep_h ep : s.eps) {
        if (ep != nullptr) {
            closes.push_back(ucp_ep_close_nbx(ep, &close));
        }
    }
    for (ucs_status_ptr_t r : closes) {
        if (UCS_PTR_IS_PTR(r)) {
            while (ucp_request_check_status(r) == UCS_INPROGRESS) {
                ucp_worker_progress(s.worker);
            }
            ucp_request_free(r);
        }
    }
    ucp_worker_destroy(s.worker);
    ucp_cleanup(s.context);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    unsigned nranks = 2, base = 1000;
    const char *tls = nullptr;
    bool yield      = false;
    selection only;
    int opt;
    while ((opt = getopt(argc, argv, "n:i:x:yo:s:")) != -1) {
        if (opt == 'n') {
            nranks = unsigned(std::atoi(optarg));
        } else if (opt == 'i') {
            base = unsigned(std::atoi(optarg));
        } else if (opt == 'x') {
            tls = optarg;
        } else if (opt == 'y') {
            yield = true;
        } else if (opt == 'o') {
            only.op = optarg;
        } else if (opt == 's') {
            only.bytes = std::atol(optarg);
        } else {
            std::fprintf(stderr, "usage: ucp_coll_bench [-n RANKS] [-i ITERATIONS] [-x TLS] "
                                 "[-y] [-o OPERATION] [-s BYTES]\n");
            return 2;
        }
    }
    if ((nranks < 1) || (nranks > 64) || (base < 1)) {
        std::fprintf(stderr, "ucp_coll_bench: 1 to 64 ranks, at least 1 iteration\n");
        return 2;
    }
    const bool ok = perf::run_forked_ranks(nranks, 1, {}, [&](unsigned r, perf::oob &channel) {
        return run_rank(r, nranks, base, tls, yield, only, channel);
    });
    if (!ok) {
        std::fprintf(stderr, "ucp_coll_bench: a rank failed\n");
        return 1;
    }
    return 0;
}
