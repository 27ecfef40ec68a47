/*
 * Triggered operations between processes, over shared memory and tcp:
 *  - an echo chain between two processes, posted at once and run by
 *    progress alone: each echo sends the buffer its receive just filled
 *    (buffers are read when the operation starts), over eager, multi-
 *    fragment and rendezvous sizes;
 *  - four processes running dissemination barriers and a ring allgather
 *    built only from deferred work, checked against shared-memory arrival
 *    counts and against the data;
 *  - a peer killed in the middle of a chain: the queued operations on its
 *    endpoint fail, so a wait on the chain's counter unwinds.
 */
#include "ext_test_util.h"
#include "ucp_peer.h"

#include <ucp/api/ucp_ext.h>

#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <array>
#include <atomic>
#include <memory>
#include <vector>

using namespace ucp_test;

namespace {

constexpr uint64_t features = UCP_FEATURE_TAG;

/* Eager, multi-fragment and rendezvous sizes on both transports. */
const size_t echo_sizes[] = {8, 3000, 40000, 200000, 16, 100000};

/* The echoing side: receive i lands in slot i; echo i sends slot i once
 * receive i has completed. Everything posted before the first byte. */
int echo_child(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init(tls, features) == UCS_OK);
    TEST_CHILD_CHECK(c.connect_over(fd));
    ucp_cntr_h received = new_cntr(c.worker);
    ucp_cntr_h echoed   = new_cntr(c.worker);
    TEST_CHILD_CHECK((received != nullptr) && (echoed != nullptr));
    std::vector<std::vector<uint8_t>> slots;
    for (size_t size : echo_sizes) {
        slots.emplace_back(size);
    }
    for (size_t i = 0; i < std::size(echo_sizes); ++i) {
        ucp_ext_request_param_t recv = triggered_by(received, i, received);
        TEST_CHILD_CHECK(posted(ucp_tag_recv_nbx(c.worker, slots[i].data(), slots[i].size(), i,
                                                 ~ucp_tag_t(0), &recv.base)));
        ucp_ext_request_param_t echo = triggered_by(received, i + 1, echoed);
        TEST_CHILD_CHECK(posted(ucp_tag_send_nbx(c.ep, slots[i].data(), slots[i].size(), 1000 + i,
                                                 &echo.base)));
    }
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1))); /* all posted */
    TEST_CHILD_CHECK(ucp_cntr_wait(echoed, std::size(echo_sizes), 60000) == UCS_OK);
    TEST_CHILD_CHECK(ucp_cntr_read_err(received) + ucp_cntr_read_err(echoed) == 0);
    uint8_t done;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    TEST_CHILD_CHECK(ucp_cntr_destroy(received) == UCS_OK);
    TEST_CHILD_CHECK(ucp_cntr_destroy(echoed) == UCS_OK);
    return 0;
}

} // namespace

TEST_CASE("triggered operations: an echo chain between two processes, run by progress "
          "alone",
          "[ucp_trigger]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init(tls, features) == UCS_OK);
    test::child_process child([tls](int fd) { return echo_child(fd, tls); });
    REQUIRE(p.connect_over(child.fd()));
    uint8_t ready;
    REQUIRE(p.recv_value_progress(child.fd(), &ready));

    /* Our side: send i once echo i-1 came back, receive echo i. */
    ucp_cntr_h back = new_cntr(p.worker);
    REQUIRE(back != nullptr);
    std::vector<std::vector<uint8_t>> out, in;
    for (size_t i = 0; i < std::size(echo_sizes); ++i) {
        out.emplace_back(echo_sizes[i]);
        in.emplace_back(echo_sizes[i]);
        fill_pattern(out[i].data(), out[i].size(), i);
    }
    for (size_t i = 0; i < std::size(echo_sizes); ++i) {
        ucp_ext_request_param_t send = triggered_by(back, i);
        REQUIRE(posted(ucp_tag_send_nbx(p.ep, out[i].data(), out[i].size(), i, &send.base)));
        ucp_ext_request_param_t recv = triggered_by(back, i, back);
        REQUIRE(posted(ucp_tag_recv_nbx(p.worker, in[i].data(), in[i].size(), 1000 + i,
                                        ~ucp_tag_t(0), &recv.base)));
    }
    CHECK(ucp_cntr_wait(back, std::size(echo_sizes), 60000) == UCS_OK);
    CHECK(ucp_cntr_read_err(back) == 0);
    for (size_t i = 0; i < std::size(echo_sizes); ++i) {
        CHECK(check_pattern(in[i].data(), in[i].size(), i));
    }
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    CHECK(child.wait() == 0);
    CHECK(ucp_cntr_destroy(back) == UCS_OK);
}

namespace {

constexpr unsigned group_size           = 4;
constexpr unsigned barriers             = 20;
constexpr unsigned dissemination_rounds = 2;    /* log2(group_size) */
constexpr size_t block_words            = 4096; /* 32 KiB: rendezvous on shm */

/* Shared by the four processes (mapped before they fork): how many of them
 * have entered each barrier. */
struct arrivals {
    std::atomic<unsigned> entered[barriers];
};

ucp_tag_t barrier_tag(unsigned barrier, unsigned round)
{
    return (1ull << 32) | (barrier << 8) | round;
}

ucp_tag_t gather_tag(unsigned step)
{
    return (2ull << 32) | step;
}

uint64_t block_value(unsigned rank, size_t word)
{
    return (uint64_t(rank) << 32) | word;
}

int member_body(unsigned rank, int fd, const char *tls, arrivals *shared)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, features) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, p.address()));
    std::array<ucp_ep_h, group_size> eps{};
    for (unsigned r = 0; r < group_size; ++r) {
        std::vector<uint8_t> address;
        TEST_CHILD_CHECK(test::recv_blob(fd, &address));
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t *>(address.data());
        TEST_CHILD_CHECK(ucp_ep_create(p.worker, &params, &eps[r]) == UCS_OK);
    }
    ucp_cntr_h rounds = new_cntr(p.worker);
    ucp_cntr_h sent   = new_cntr(p.worker);
    TEST_CHILD_CHECK((rounds != nullptr) && (sent != nullptr));

    /* Dissemination barriers: round k sends to rank + 2^k once rounds
     * 0..k-1 were received; round k's receive is posted only then too, so
     * `rounds` counts the rounds of each barrier in order. */
    uint8_t token = 0;
    for (unsigned b = 0; b < barriers; ++b) {
        shared->entered[b].fetch_add(1);
        const uint64_t base = uint64_t(b) * dissemination_rounds;
        for (unsigned k = 0; k < dissemination_rounds; ++k) {
            ucp_ext_request_param_t recv = triggered_by(rounds, base + k, rounds);
            TEST_CHILD_CHECK(posted(ucp_tag_recv_nbx(p.worker, &token, sizeof(token),
                                                     barrier_tag(b, k), ~ucp_tag_t(0),
                                                     &recv.base)));
            ucp_ext_request_param_t send = triggered_by(rounds, base + k, sent);
            const unsigned to            = (rank + (1u << k)) % group_size;
            TEST_CHILD_CHECK(posted(ucp_tag_send_nbx(eps[to], &token, sizeof(token),
                                                     barrier_tag(b, k), &send.base)));
        }
        TEST_CHILD_CHECK(ucp_cntr_wait(rounds, base + dissemination_rounds, 60000) == UCS_OK);
        /* Nobody leaves before everybody came. */
        TEST_CHILD_CHECK(shared->entered[b].load() == group_size);
    }

    /* A ring allgather: step s forwards to the right the block received at
     * step s-1 (read when the send starts), and receives the next from the
     * left. Then the sum over the blocks: an allreduce. */
    ucp_cntr_h gathered = new_cntr(p.worker);
    TEST_CHILD_CHECK(gathered != nullptr);
    std::vector<uint64_t> blocks(group_size * block_words);
    for (size_t w = 0; w < block_words; ++w) {
        blocks[rank * block_words + w] = block_value(rank, w);
    }
    const unsigned right = (rank + 1) % group_size;
    for (unsigned s = 0; s + 1 < group_size; ++s) {
        const unsigned out_block     = (rank + group_size - s) % group_size;
        const unsigned in_block      = (rank + group_size - s - 1) % group_size;
        ucp_ext_request_param_t send = triggered_by(gathered, s, sent);
        TEST_CHILD_CHECK(posted(ucp_tag_send_nbx(eps[right], &blocks[out_block * block_words],
                                                 block_words * sizeof(uint64_t), gather_tag(s),
                                                 &send.base)));
        ucp_ext_request_param_t recv = triggered_by(gathered, s, gathered);
        TEST_CHILD_CHECK(posted(ucp_tag_recv_nbx(p.worker, &blocks[in_block * block_words],
                                                 block_words * sizeof(uint64_t), gather_tag(s),
                                                 ~ucp_tag_t(0), &recv.base)));
    }
    TEST_CHILD_CHECK(ucp_cntr_wait(gathered, group_size - 1, 60000) == UCS_OK);
    uint64_t sum = 0, expected = 0;
    for (unsigned r = 0; r < group_size; ++r) {
        for (size_t w = 0; w < block_words; ++w) {
            TEST_CHILD_CHECK(blocks[r * block_words + w] == block_value(r, w));
            sum += blocks[r * block_words + w];
            expected += block_value(r, w);
        }
    }
    TEST_CHILD_CHECK(sum == expected);
    /* Every send done before anyone closes. */
    const uint64_t sends = barriers * dissemination_rounds + group_size - 1;
    TEST_CHILD_CHECK(ucp_cntr_wait(sent, sends, 60000) == UCS_OK);
    TEST_CHILD_CHECK(ucp_cntr_read_err(rounds) + ucp_cntr_read_err(sent) +
                         ucp_cntr_read_err(gathered) ==
                     0);
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    uint8_t go;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &go));
    for (ucp_ep_h ep : eps) {
        p.wait(ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FORCE));
    }
    for (ucp_cntr_h c : {rounds, sent, gathered}) {
        TEST_CHILD_CHECK(ucp_cntr_destroy(c) == UCS_OK);
    }
    return 0;
}

} // namespace

TEST_CASE("deferred work: four processes run barriers and an allgather built from "
          "triggered operations",
          "[ucp_trigger]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    void *map = mmap(nullptr, sizeof(arrivals), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    REQUIRE(map != MAP_FAILED);
    auto *shared = new (map) arrivals{};
    std::vector<std::unique_ptr<test::child_process>> members;
    for (unsigned r = 0; r < group_size; ++r) {
        members.push_back(std::make_unique<test::child_process>([r, tls, shared](int fd) {
            return member_body(r, fd, tls, shared);
        }));
    }
    std::vector<std::vector<uint8_t>> addresses(group_size);
    for (unsigned r = 0; r < group_size; ++r) {
        REQUIRE(test::recv_blob(members[r]->fd(), &addresses[r]));
    }
    for (auto &m : members) {
        for (const auto &address : addresses) {
            REQUIRE(test::send_blob(m->fd(), address));
        }
    }
    for (auto &m : members) {
        uint8_t done;
        CHECK(test::recv_value(m->fd(), &done));
    }
    for (auto &m : members) {
        REQUIRE(test::send_value(m->fd(), uint8_t(1)));
    }
    for (unsigned r = 0; r < group_size; ++r) {
        INFO("member " << r);
        CHECK(members[r]->wait() == 0);
    }
    munmap(map, sizeof(arrivals));
}

namespace {

/* Connects, then waits on the test socket until killed. */
int doomed_child(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init(tls, features) == UCS_OK);
    TEST_CHILD_CHECK(c.connect_over(fd));
    uint8_t never;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &never));
    return 0;
}

} // namespace

TEST_CASE("triggered operations: a peer killed in the middle of a chain fails what waits "
          "to go to it",
          "[ucp_trigger]")
{
    const char *tls = GENERATE("posix,self", "tcp,self");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init(tls, features) == UCS_OK);
    test::child_process child([tls](int fd) { return doomed_child(fd, tls); });
    std::vector<uint8_t> remote;
    REQUIRE(test::send_blob(child.fd(), p.address()));
    REQUIRE(test::recv_blob(child.fd(), &remote));
    ep_errors errors;
    REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, ep_errors::record, &errors) == UCS_OK);
    /* The chain: a receive from the peer, then a send to it once that
     * arrived, counted on `chain` (errors too). */
    ucp_cntr_h chain = new_cntr(p.worker);
    REQUIRE(chain != nullptr);
    uint64_t in = 0, out = 1;
    ucp_ext_request_param_t recv = triggered_by(chain, 0, chain);
    ucs_status_ptr_t r = ucp_tag_recv_nbx(p.worker, &in, sizeof(in), 1, ~ucp_tag_t(0), &recv.base);
    REQUIRE(UCS_PTR_IS_PTR(r));
    ucp_ext_request_param_t send = triggered_by(chain, 1, chain);
    ucs_status_ptr_t s           = ucp_tag_send_nbx(p.ep, &out, sizeof(out), 2, &send.base);
    REQUIRE(UCS_PTR_IS_PTR(s));
    child.kill(SIGKILL);
    /* The ep fails: the queued send goes with it, on the error value. */
    CHECK(ucp_cntr_wait(chain, 1, 60000) == UCS_ERR_IO_ERROR);
    CHECK(errors.calls == 1);
    CHECK(ucp_cntr_read_err(chain) == 1);
    CHECK(ucp_cntr_read(chain) == 0);
    CHECK(ucp_request_check_status(s) != UCS_INPROGRESS);
    CHECK(ucp_request_check_status(s) != UCS_OK);
    ucp_request_free(s);
    /* The receive names no ep: the application unwinds it. */
    ucp_request_cancel(p.worker, r);
    CHECK(p.wait(r) == UCS_ERR_CANCELED);
    size_t cancelled = 1;
    CHECK(ucp_dwq_flush(p.worker, nullptr, &cancelled) == UCS_OK);
    CHECK(cancelled == 0);
    CHECK(child.wait() == 128 + SIGKILL);
    CHECK(ucp_cntr_destroy(chain) == UCS_OK);
}
