/*
 * Four processes, each with an endpoint to every process (itself too), the
 * way OpenSHMEM PEs are connected. What two processes cannot show: an
 * atomic posted by one process and flushed is visible to a third process
 * that learns of it only through a lock word at a fourth.
 *
 * The lock lives at process 1, the counters it guards at process 0. A
 * holder increments `holders` with a fetching add (must return 0), posts
 * an add to `total` and a -1 to `holders`, flushes its worker and releases
 * the lock with a compare-and-swap. The next holder's fetching add reaches
 * process 0 over another connection: it returns 0 only if the flush really
 * waited until process 0 had applied the posted -1.
 *
 * The children speak to the parent (which takes no part in the traffic)
 * over socketpairs: addresses and keys go up, everyone's come down.
 */
#include "ucp_peer.h"

#include <catch2/catch.hpp>

#include <poll.h>
#include <sched.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace ucp_test;

namespace {

constexpr unsigned group_size   = 4;
constexpr unsigned lock_home    = 1;  /* process whose word is the lock */
constexpr unsigned counter_home = 0;  /* process whose words are counted */
constexpr uint64_t rounds       = 25; /* lock acquisitions per process */

/* Word offsets in each process's region. */
enum : uint64_t { lock_word = 0, holders_word = 8, total_word = 16 };

/* A child's verdict, sent to the parent at the end. */
struct outcome {
    uint64_t acquisitions = 0;            /* lock taken */
    uint64_t failed_tests = 0;            /* lock found held */
    uint64_t holders_seen = 0;            /* non-zero holder count found on entry (must stay 0) */
    uint64_t bad_release  = 0;            /* lock word not ours at release (must stay 0) */
    uint64_t total        = ~uint64_t(0); /* counter_home only: final total */
    uint64_t holders      = ~uint64_t(0); /* counter_home only: final holder count */
};

class member {
public:
    member(unsigned rank, int fd) : rank_(rank), fd_(fd) {}

    ~member()
    {
        for (ucp_rkey_h key : rkeys_) {
            if (key != nullptr) {
                ucp_rkey_destroy(key);
            }
        }
        close_eps();
        if (memh_ != nullptr) {
            ucp_mem_unmap(p_.context, memh_);
        }
    }

    /* Context, worker and a mapped region; addresses and keys swapped
     * through the parent; an ep to every member. */
    int setup(const char *tls)
    {
        TEST_CHILD_CHECK(p_.init(tls, UCP_FEATURE_AMO64 | UCP_FEATURE_RMA) == UCS_OK);
        region_.fill(0);
        ucp_mem_map_params_t mp{};
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address    = region_.data();
        mp.length     = sizeof(region_);
        TEST_CHILD_CHECK(ucp_mem_map(p_.context, &mp, &memh_) == UCS_OK);
        void *packed;
        size_t packed_length;
        TEST_CHILD_CHECK(ucp_rkey_pack(p_.context, memh_, &packed, &packed_length) == UCS_OK);
        const uint64_t base = reinterpret_cast<uintptr_t>(region_.data());
        const bool sent     = test::send_blob(fd_, p_.address()) &&
                          test::send_blob(fd_, packed, packed_length) &&
                          test::send_value(fd_, base);
        ucp_rkey_buffer_release(packed);
        TEST_CHILD_CHECK(sent);

        for (unsigned r = 0; r < group_size; ++r) {
            std::vector<uint8_t> address, key;
            TEST_CHILD_CHECK(test::recv_blob(fd_, &address) && test::recv_blob(fd_, &key) &&
                             test::recv_value(fd_, &bases_[r]));
            ucp_ep_params_t params{};
            params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
            params.address    = reinterpret_cast<const ucp_address_t *>(address.data());
            TEST_CHILD_CHECK(ucp_ep_create(p_.worker, &params, &eps_[r]) == UCS_OK);
            TEST_CHILD_CHECK(ucp_ep_rkey_unpack(eps_[r], key.data(), &rkeys_[r]) == UCS_OK);
        }
        return 0;
    }

    /* Takes the lock `rounds` times; counts what it saw in `out`. */
    int run(uint64_t rounds, outcome *out)
    {
        const uint64_t me = rank_ + 1; /* the lock word holds the holder's rank + 1 */
        while (out->acquisitions < rounds) {
            uint64_t old;
            TEST_CHILD_CHECK(atomic(lock_home, lock_word, UCP_ATOMIC_OP_CSWAP, 0, me, &old) ==
                             UCS_OK);
            if (old != 0) {
                ++out->failed_tests;
                sched_yield(); /* four spinning processes share few cores in CI */
                continue;
            }
            TEST_CHILD_CHECK(atomic(counter_home, holders_word, UCP_ATOMIC_OP_ADD, 1, 0, &old) ==
                             UCS_OK);
            out->holders_seen += (old != 0);
            TEST_CHILD_CHECK(post_add(counter_home, total_word, 1) == UCS_OK);
            TEST_CHILD_CHECK(post_add(counter_home, holders_word, uint64_t(-1)) == UCS_OK);
            ucp_request_param_t param{};
            TEST_CHILD_CHECK(p_.wait(ucp_worker_flush_nbx(p_.worker, &param)) == UCS_OK);
            TEST_CHILD_CHECK(atomic(lock_home, lock_word, UCP_ATOMIC_OP_CSWAP, me, 0, &old) ==
                             UCS_OK);
            out->bad_release += (old != me);
            ++out->acquisitions;
            /* Let the others in: the lock's home takes it back at once through its
             * self lane otherwise, and everyone else waits for its last round. */
            for (unsigned i = 0; i < 64 * (rank_ + 1); ++i) {
                ucp_worker_progress(p_.worker);
            }
        }
        return 0;
    }

    /* Serves the others' operations until the parent says everyone is done. */
    int serve_until_told()
    {
        uint8_t go;
        TEST_CHILD_CHECK(p_.recv_value_progress(fd_, &go));
        return 0;
    }

    void read_counters(outcome *out) const
    {
        std::memcpy(&out->total, &region_[total_word / 8], sizeof(uint64_t));
        std::memcpy(&out->holders, &region_[holders_word / 8], sizeof(uint64_t));
    }

private:
    ucs_status_t atomic(unsigned target, uint64_t offset, ucp_atomic_op_t op, uint64_t operand,
                        uint64_t swap, uint64_t *old)
    {
        uint64_t reply = swap; /* CSWAP: swapped in when the word equals operand */
        ucp_request_param_t param{};
        param.op_attr_mask  = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.datatype      = ucp_dt_make_contig(8);
        param.reply_buffer  = &reply;
        ucs_status_t status = p_.wait(ucp_atomic_op_nbx(eps_[target], op, &operand, 1,
                                                        bases_[target] + offset, rkeys_[target],
                                                        &param));
        *old                = reply;
        return status;
    }

    ucs_status_t post_add(unsigned target, uint64_t offset, uint64_t value)
    {
        return ucp_atomic_post(eps_[target], UCP_ATOMIC_POST_OP_ADD, value, 8,
                               bases_[target] + offset, rkeys_[target]);
    }

    void close_eps()
    {
        for (ucp_ep_h &ep : eps_) {
            if (ep != nullptr) {
                p_.wait(ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FORCE));
                ep = nullptr;
            }
        }
    }

    unsigned rank_;
    int fd_;
    peer p_;
    alignas(64) std::array<uint64_t, 8> region_{};
    ucp_mem_h memh_ = nullptr;
    std::array<ucp_ep_h, group_size> eps_{};
    std::array<ucp_rkey_h, group_size> rkeys_{};
    std::array<uint64_t, group_size> bases_{};
};

int member_body(unsigned rank, int fd, const char *tls, uint64_t rounds)
{
    member m(rank, fd);
    if (int rc = m.setup(tls)) {
        return rc;
    }
    outcome out;
    if (int rc = m.run(rounds, &out)) {
        return rc;
    }
    /* Flushed after its last release: tell the parent, then keep serving. */
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    if (int rc = m.serve_until_told()) {
        return rc;
    }
    if (rank == counter_home) {
        m.read_counters(&out);
    }
    TEST_CHILD_CHECK(test::send_value(fd, out));
    /* Nobody closes before everyone has read its counters. */
    uint8_t go;
    TEST_CHILD_CHECK(test::recv_value(fd, &go));
    return 0;
}

} // namespace

TEST_CASE("four processes: a posted atomic that was flushed is seen by a third process "
          "that takes the lock next",
          "[ucp_amo]")
{
    for (const char *tls : {"tcp,self", "posix,self", "posix,cma,self"}) {
        INFO("UCX_TLS=" << tls);
        std::vector<std::unique_ptr<test::child_process>> members;
        for (unsigned r = 0; r < group_size; ++r) {
            members.push_back(std::make_unique<test::child_process>([r, tls](int fd) {
                return member_body(r, fd, tls, rounds);
            }));
        }
        /* Every member's address, key and region base, to every member. */
        std::vector<std::vector<uint8_t>> blobs(3 * group_size);
        for (unsigned r = 0; r < group_size; ++r) {
            const int fd = members[r]->fd();
            REQUIRE(test::recv_blob(fd, &blobs[3 * r]));
            REQUIRE(test::recv_blob(fd, &blobs[3 * r + 1]));
            REQUIRE(test::recv_blob(fd, &blobs[3 * r + 2]));
        }
        for (auto &m : members) {
            for (const auto &blob : blobs) {
                REQUIRE(test::send_blob(m->fd(), blob));
            }
        }
        for (auto &m : members) {
            uint8_t done;
            REQUIRE(test::recv_value(m->fd(), &done));
        }
        for (auto &m : members) {
            REQUIRE(test::send_value(m->fd(), uint8_t(1)));
        }
        std::array<outcome, group_size> out;
        for (unsigned r = 0; r < group_size; ++r) {
            REQUIRE(test::recv_value(members[r]->fd(), &out[r]));
        }
        for (auto &m : members) {
            REQUIRE(test::send_value(m->fd(), uint8_t(1)));
        }
        for (unsigned r = 0; r < group_size; ++r) {
            INFO("member " << r << ": " << out[r].acquisitions << " acquisitions, "
                           << out[r].failed_tests << " failed tests");
            CHECK(out[r].acquisitions == rounds);
            CHECK(out[r].holders_seen == 0);
            CHECK(out[r].bad_release == 0);
            CHECK(members[r]->wait() == 0);
        }
        CHECK(out[counter_home].total == group_size * rounds);
        CHECK(out[counter_home].holders == 0);
    }
}
