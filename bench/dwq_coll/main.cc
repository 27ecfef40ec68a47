/*
 * ucp_dwq_coll: a barrier and an 8-byte allreduce built from counters and
 * triggered operations (ucp/api/ucp_ext.h), timed per operation, to set
 * against MPI_Barrier and MPI_Allreduce (bench/dwq_coll/mpi_coll_lat.c,
 * bench/dwq_coll/compare.sh).
 *
 *   ucp_dwq_coll [-n RANKS] [-i ITERATIONS] [-x TLS] [-w]
 *
 * The ranks spin on their counters (ucp_cntr_wait progresses), as MPI
 * libraries spin in their collectives; -w makes them sleep when there is
 * nothing to progress (UCP_FEATURE_WAKEUP), for more ranks than cores.
 * Forks RANKS processes (the parent only passes addresses and keys). Each
 * rank runs ITERATIONS of:
 *   barrier:   a dissemination barrier posted as triggered sends and
 *              receives on one counter, then only a wait on it (as
 *              examples/ucp_dwq_barrier.c);
 *   allreduce: an atomic add of its value into the same slot of every
 *              rank's region (its own too); each region counts the atomics
 *              that landed in it (ucp_mem_bind_cntr), so a rank waits on its
 *              own counter and reads the sum. Two regions alternate by
 *              iteration: no rank is more than one iteration ahead of
 *              another, so a region's counter counts one iteration's adds.
 * Every sum is checked. Rank 0 prints "barrier_us X" and "allreduce8_us Y":
 * the median over blocks of 100 operations of the time per operation.
 */
#include "../common/forked_ranks.h"

#include <ucp/api/ucp.h>
#include <ucp/api/ucp_ext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

constexpr unsigned block        = 100;
constexpr ucp_tag_t barrier_tag = 0xba00000000000000ull;

#define CHECK(_cond, _what) \
    do { \
        if (!(_cond)) { \
            std::fprintf(stderr, "ucp_dwq_coll rank %u: %s\n", rank, _what); \
            return 1; \
        } \
    } while (0)

bool posted(ucs_status_ptr_t r)
{
    if (UCS_PTR_IS_ERR(r)) {
        return false;
    }
    if (r != nullptr) {
        ucp_request_free(r);
    }
    return true;
}

ucp_ext_request_param_t triggered(ucp_cntr_h trigger, uint64_t threshold, ucp_cntr_h cntr)
{
    ucp_ext_request_param_t ext{};
    ext.base.op_attr_mask = UCP_OP_ATTR_FIELD_EXT;
    ext.ext_field_mask    = UCP_EXT_PARAM_FIELD_TRIGGER | UCP_EXT_PARAM_FIELD_CNTR;
    ext.trigger_cntr      = trigger;
    ext.trigger_threshold = threshold;
    ext.cntr              = cntr;
    return ext;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct rank_state {
    ucp_context_h context = nullptr;
    ucp_worker_h worker   = nullptr;
    std::vector<ucp_ep_h> eps;
    std::vector<uint64_t> slots[2]; /* the two allreduce regions */
    ucp_mem_h memh[2]    = {nullptr, nullptr};
    ucp_cntr_h landed[2] = {nullptr, nullptr};
    std::vector<ucp_rkey_h> rkeys[2];
    std::vector<uint64_t> bases[2];
};

int run_rank(unsigned rank, unsigned nranks, unsigned iterations, const char *tls, bool sleep,
             perf::oob &sock)
{
    rank_state s;
    ucp_config_t *config;
    CHECK(ucp_config_read(nullptr, nullptr, &config) == UCS_OK, "ucp_config_read failed");
    if (tls != nullptr) {
        ucp_config_modify(config, "TLS", tls);
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    /* With WAKEUP ucp_cntr_wait sleeps when progress finds nothing;
     * without it, it spins, as MPI libraries do. */
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_AMO64 | (sleep ? UCP_FEATURE_WAKEUP : 0);
    CHECK(ucp_init(&params, config, &s.context) == UCS_OK, "ucp_init failed");
    ucp_config_release(config);
    ucp_worker_params_t wp{};
    CHECK(ucp_worker_create(s.context, &wp, &s.worker) == UCS_OK, "ucp_worker_create failed");
    ucp_cntr_params_t cp{};
    ucp_cntr_h rounds, sent;
    CHECK((ucp_cntr_create(s.worker, &cp, &rounds) == UCS_OK) &&
              (ucp_cntr_create(s.worker, &cp, &sent) == UCS_OK),
          "ucp_cntr_create failed");

    /* Our address and the keys of our two regions, each counted. */
    ucp_address_t *address;
    size_t length;
    CHECK(ucp_worker_get_address(s.worker, &address, &length) == UCS_OK, "no address");
    std::vector<uint8_t> mine(reinterpret_cast<uint8_t *>(address),
                              reinterpret_cast<uint8_t *>(address) + length);
    ucp_worker_release_address(s.worker, address);
    CHECK(sock.send_blob(mine), "cannot send the address");
    for (int p = 0; p < 2; ++p) {
        s.slots[p].assign(iterations / 2 + 1, 0);
        ucp_mem_map_params_t mp{};
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address    = s.slots[p].data();
        mp.length     = s.slots[p].size() * sizeof(uint64_t);
        CHECK(ucp_mem_map(s.context, &mp, &s.memh[p]) == UCS_OK, "ucp_mem_map failed");
        CHECK(ucp_cntr_create(s.worker, &cp, &s.landed[p]) == UCS_OK, "no counter");
        CHECK(ucp_mem_bind_cntr(s.memh[p], s.landed[p], UCP_MEM_CNTR_REMOTE_ATOMIC) == UCS_OK,
              "ucp_mem_bind_cntr failed");
        void *key;
        size_t key_length;
        CHECK(ucp_rkey_pack(s.context, s.memh[p], &key, &key_length) == UCS_OK, "no key");
        std::vector<uint8_t> blob(static_cast<uint8_t *>(key),
                                  static_cast<uint8_t *>(key) + key_length);
        ucp_rkey_buffer_release(key);
        const uint64_t base = reinterpret_cast<uintptr_t>(s.slots[p].data());
        std::vector<uint8_t> base_blob(reinterpret_cast<const uint8_t *>(&base),
                                       reinterpret_cast<const uint8_t *>(&base) + sizeof(base));
        CHECK(sock.send_blob(blob) && sock.send_blob(base_blob), "cannot send a key");
    }
    for (unsigned r = 0; r < nranks; ++r) {
        std::vector<uint8_t> remote;
        CHECK(sock.recv_blob(&remote), "no address");
        ucp_ep_params_t ep_params{};
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = reinterpret_cast<const ucp_address_t *>(remote.data());
        ucp_ep_h ep;
        CHECK(ucp_ep_create(s.worker, &ep_params, &ep) == UCS_OK, "ucp_ep_create failed");
        s.eps.push_back(ep);
        for (int p = 0; p < 2; ++p) {
            std::vector<uint8_t> key, base;
            CHECK(sock.recv_blob(&key) && sock.recv_blob(&base) &&
                      (base.size() == sizeof(uint64_t)),
                  "no key");
            ucp_rkey_h rkey;
            CHECK(ucp_ep_rkey_unpack(ep, key.data(), &rkey) == UCS_OK, "bad key");
            s.rkeys[p].push_back(rkey);
            uint64_t b;
            std::memcpy(&b, base.data(), sizeof(b));
            s.bases[p].push_back(b);
        }
    }
    /* Everyone connected before the clock starts. */
    uint8_t go;
    CHECK(sock.send_byte('r') && sock.recv_byte(&go), "no start");

    unsigned nrounds = 0;
    while ((1u << nrounds) < nranks) {
        ++nrounds;
    }
    uint8_t token = 0;
    std::vector<double> barrier_us, allreduce_us;
    auto start = std::chrono::steady_clock::now();
    for (unsigned b = 0; b < iterations; ++b) {
        const uint64_t base = uint64_t(b) * nrounds;
        for (unsigned k = 0; k < nrounds; ++k) {
            const ucp_tag_t tag          = barrier_tag | (uint64_t(b) << 8) | k;
            ucp_ext_request_param_t recv = triggered(rounds, base + k, rounds);
            ucp_ext_request_param_t send = triggered(rounds, base + k, sent);
            CHECK(posted(ucp_tag_recv_nbx(s.worker, &token, 1, tag, ~ucp_tag_t(0), &recv.base)),
                  "cannot post a receive");
            CHECK(posted(ucp_tag_send_nbx(s.eps[(rank + (1u << k)) % nranks], &token, 1, tag,
                                          &send.base)),
                  "cannot post a send");
        }
        CHECK(ucp_cntr_wait(rounds, base + nrounds, 60000) == UCS_OK, "barrier failed");
        if ((b + 1) % block == 0) {
            const auto now = std::chrono::steady_clock::now();
            barrier_us.push_back(std::chrono::duration<double, std::micro>(now - start).count() /
                                 block);
            start = now;
        }
    }
    ucp_request_param_t amo{};
    amo.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    amo.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    start            = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < iterations; ++i) {
        const unsigned p = i % 2, slot = i / 2;
        const uint64_t value = uint64_t(rank + 1) * (i + 1);
        for (unsigned r = 0; r < nranks; ++r) {
            CHECK(posted(ucp_atomic_op_nbx(s.eps[r], UCP_ATOMIC_OP_ADD, &value, 1,
                                           s.bases[p][r] + slot * sizeof(uint64_t), s.rkeys[p][r],
                                           &amo)),
                  "cannot post an atomic");
        }
        CHECK(ucp_cntr_wait(s.landed[p], uint64_t(slot + 1) * nranks, 60000) == UCS_OK,
              "allreduce failed");
        const uint64_t expected = uint64_t(nranks) * (nranks + 1) / 2 * (i + 1);
        CHECK(s.slots[p][slot] == expected, "wrong sum");
        if ((i + 1) % block == 0) {
            const auto now = std::chrono::steady_clock::now();
            allreduce_us.push_back(std::chrono::duration<double, std::micro>(now - start).count() /
                                   block);
            start = now;
        }
    }
    CHECK(ucp_cntr_wait(sent, uint64_t(iterations) * nrounds, 60000) == UCS_OK, "sends");
    /* Our atomics' acknowledgements too, before anyone closes. */
    ucp_request_param_t flush{};
    ucs_status_ptr_t flushed = ucp_worker_flush_nbx(s.worker, &flush);
    if (UCS_PTR_IS_PTR(flushed)) {
        while (ucp_request_check_status(flushed) == UCS_INPROGRESS) {
            ucp_worker_progress(s.worker);
        }
        ucp_request_free(flushed);
    }
    CHECK(!UCS_PTR_IS_ERR(flushed), "flush failed");
    if (rank == 0) {
        std::printf("ranks %u iterations %u\nbarrier_us %.3f\nallreduce8_us %.3f\n", nranks,
                    iterations, median(barrier_us), median(allreduce_us));
        std::fflush(stdout);
    }
    /* Everyone done before anyone closes. */
    CHECK(sock.send_byte('d') && sock.recv_byte(&go), "no end");
    for (int p = 0; p < 2; ++p) {
        for (ucp_rkey_h rkey : s.rkeys[p]) {
            ucp_rkey_destroy(rkey);
        }
        ucp_mem_unmap(s.context, s.memh[p]);
        ucp_cntr_destroy(s.landed[p]);
    }
    ucp_request_param_t close{};
    close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    close.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    for (ucp_ep_h ep : s.eps) {
        ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &close);
        if (UCS_PTR_IS_PTR(r)) {
            ucp_request_free(r);
        }
    }
    ucp_cntr_destroy(rounds);
    ucp_cntr_destroy(sent);
    ucp_worker_destroy(s.worker);
    ucp_cleanup(s.context);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    unsigned nranks = 2, iterations = 2000;
    const char *tls = nullptr;
    bool sleep      = false;
    int opt;
    while ((opt = getopt(argc, argv, "n:i:x:w")) != -1) {
        if (opt == 'n') {
            nranks = unsigned(std::atoi(optarg));
        } else if (opt == 'i') {
            iterations = unsigned(std::atoi(optarg));
        } else if (opt == 'x') {
            tls = optarg;
        } else if (opt == 'w') {
            sleep = true;
        } else {
            std::fprintf(stderr, "usage: ucp_dwq_coll [-n RANKS] [-i ITERATIONS] [-x TLS] "
                                 "[-w]\n");
            return 2;
        }
    }
    if ((nranks < 2) || (nranks > 64) || (iterations < block)) {
        std::fprintf(stderr, "ucp_dwq_coll: 2 to 64 ranks, at least %u iterations\n", block);
        return 2;
    }
    /* Address, key 0, base 0, key 1, base 1 of every rank, to every rank;
     * then everyone connected ('r') and everyone done ('d'). */
    const bool ok = perf::run_forked_ranks(nranks, 5, {uint8_t('r'), uint8_t('d')},
                                           [&](unsigned r, perf::oob &channel) {
        return run_rank(r, nranks, iterations, tls, sleep, channel);
    });
    if (!ok) {
        std::fprintf(stderr, "ucp_dwq_coll: a rank failed\n");
        return 1;
    }
    return 0;
}
