/*
 * Put and get with completion ids (ucp/api/ucp_pwc.h), between processes
 * over shared memory and tcp:
 *  - every remote id is checked against its data the moment it is probed
 *    (1 B .. 16 MiB, ids by value and of bytes): never an id before data;
 *  - no-LCE / no-RCE combinations and size-0 notifications;
 *  - gets: the local id when the data landed, the target's after;
 *  - back-pressure: a target that does not probe stops the initiator
 *    (UCS_ERR_NO_RESOURCE after a window sent and a window waiting), and
 *    nothing is lost once it probes;
 *  - remote completions counted on a counter instead of queued;
 *  - a peer killed with operations sent and waiting: all complete, the
 *    waiting ones with an error;
 *  - four processes putting to each other, probed from one source and any.
 */
#include "ext_test_util.h"
#include "rma_test_util.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/api/ucp_pwc.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/ext/pwc.h>
#include <ucp/proto/wire.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

using namespace ucp_test;

namespace {

constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;

/* A completion with its id's bytes copied (they live until the next probe). */
struct taken {
    ucp_pwc_completion_t completion;
    std::vector<uint8_t> id;
};

/* Probes (`flags`, from `ep` if set) until `count` completions came, or
 * 60 s passed; returns what came. */
std::vector<taken> probe_for(ucp_worker_h worker, unsigned flags, size_t count,
                             ucp_ep_h ep = nullptr)
{
    std::vector<taken> out;
    ucp_pwc_probe_params_t params{};
    params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS | ((ep != nullptr) ? UCP_PWC_PROBE_FIELD_EP : 0);
    params.flags      = flags;
    params.ep         = ep;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((out.size() < count) && (std::chrono::steady_clock::now() < deadline)) {
        ucp_pwc_completion_t batch[16];
        size_t n = 0;
        if (ucp_pwc_probe(worker, &params, batch, std::min<size_t>(16, count - out.size()), &n,
                          nullptr) != UCS_OK) {
            break;
        }
        for (size_t i = 0; i < n; ++i) {
            taken t{batch[i], {}};
            if (batch[i].cid.size != 0) {
                const auto *bytes = static_cast<const uint8_t *>(batch[i].cid.data);
                t.id.assign(bytes, bytes + batch[i].cid.size);
            }
            out.push_back(std::move(t));
        }
    }
    return out;
}

/* How many operations of `worker` are not complete. */
size_t pending_of(ucp_worker_h worker, ucp_ep_h ep = nullptr)
{
    ucp_pwc_probe_params_t params{};
    params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS | ((ep != nullptr) ? UCP_PWC_PROBE_FIELD_EP : 0);
    params.flags      = UCP_PWC_PROBE_LOCAL;
    params.ep         = ep;
    size_t count = 0, pending = 0;
    /* max 0: takes nothing, only progresses and counts. */
    return (ucp_pwc_probe(worker, &params, nullptr, 0, &count, &pending) == UCS_OK) ? pending :
                                                                                      SIZE_MAX;
}

ucp_cid_t by_value(uint64_t value)
{
    return ucp_cid_t{value, nullptr, 0};
}

/* Where each size of the ordering test goes in the target's region. */
struct placement {
    size_t size;
    size_t offset;
};

std::vector<placement> placements()
{
    const size_t sizes[] = {1,    7,     8,     64,      1000,     4096, 8191,
                            8192, 20000, 65536, 1 << 20, 16 << 20, 3,    300000};
    std::vector<placement> out;
    size_t offset = 0;
    for (size_t size : sizes) {
        out.push_back({size, offset});
        offset += (size + 63) / 64 * 64;
    }
    return out;
}

size_t region_size(const std::vector<placement> &places)
{
    return places.back().offset + places.back().size + 64;
}

/* An id of bytes: which placement, and a tag to check it came whole. */
struct id_bytes {
    uint64_t index;
    uint64_t tag;
    uint8_t filler[24];
};

/* The target: maps a region, gives its key and address, then serves what
 * `body` does with it. */
template <typename Body>
int target_child(int fd, const char *tls, size_t length, const settings &extra, Body &&body)
{
    peer t;
    TEST_CHILD_CHECK(t.init_with(tls, features, extra) == UCS_OK);
    rma_test::region r;
    TEST_CHILD_CHECK(r.map(t.context, rma_test::memory::registered, length) == UCS_OK);
    TEST_CHILD_CHECK(t.connect_over(fd));
    TEST_CHILD_CHECK(test::send_blob(fd, r.key()));
    TEST_CHILD_CHECK(test::send_value(fd, r.address()));
    const int rc = body(t, r);
    if (rc != 0) {
        return rc;
    }
    /* Checked: the initiator learns it, and we stay (progressing) until it
     * is done with us. */
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    uint8_t done;
    TEST_CHILD_CHECK(t.recv_value_progress(fd, &done));
    return 0;
}

/* The initiator's side of target_child: connected, the key unpacked. */
struct initiator {
    peer p;
    ucp_rkey_h rkey  = nullptr;
    uint64_t address = 0;

    bool setup(int fd, const char *tls, const settings &extra = {},
               ucp_err_handler_cb_t on_error = nullptr, void *arg = nullptr)
    {
        if (p.init_with(tls, features, extra) != UCS_OK) {
            return false;
        }
        if (on_error == nullptr) {
            if (!p.connect_over(fd)) {
                return false;
            }
        } else {
            std::vector<uint8_t> remote;
            if (!test::send_blob(fd, p.address()) || !test::recv_blob(fd, &remote) ||
                (p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, on_error, arg) != UCS_OK)) {
                return false;
            }
        }
        std::vector<uint8_t> key;
        return test::recv_blob(fd, &key) && p.recv_value_progress(fd, &address) &&
               (ucp_ep_rkey_unpack(p.ep, key.data(), &rkey) == UCS_OK);
    }

    /* The target checked what it got (and says so); then it may go. */
    bool finish(test::child_process &child)
    {
        uint8_t checked;
        const bool ok = p.recv_value_progress(child.fd(), &checked);
        return test::send_value(child.fd(), uint8_t(1)) && (child.wait() == 0) && ok;
    }

    ~initiator()
    {
        if (rkey != nullptr) {
            ucp_rkey_destroy(rkey);
        }
    }
};

} // namespace

TEST_CASE("put with completion: every remote id comes after its data, 1 B .. 16 MiB", "[ucp_pwc]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    const std::vector<placement> places = placements();
    const size_t count                  = places.size();
    test::child_process child([&](int fd) {
        return target_child(fd, tls, region_size(places), {}, [&](peer &t, rma_test::region &r) {
            /* Each id is checked the moment it is probed. */
            std::set<uint64_t> seen;
            for (const taken &c : probe_for(t.worker, UCP_PWC_PROBE_REMOTE, count)) {
                TEST_CHILD_CHECK(c.completion.flags == UCP_PWC_COMPLETION_REMOTE);
                TEST_CHILD_CHECK(c.completion.ep == t.ep);
                TEST_CHILD_CHECK(c.completion.status == UCS_OK);
                uint64_t index = c.completion.cid.u64;
                if (!c.id.empty()) {
                    TEST_CHILD_CHECK(c.id.size() == sizeof(id_bytes));
                    id_bytes id;
                    std::memcpy(&id, c.id.data(), sizeof(id));
                    TEST_CHILD_CHECK(id.tag == ~id.index);
                    index = id.index;
                }
                TEST_CHILD_CHECK(index < count);
                TEST_CHILD_CHECK(check_pattern(r.data() + places[index].offset, places[index].size,
                                               1000 + index));
                seen.insert(index);
            }
            TEST_CHILD_CHECK(seen.size() == count);
            return 0;
        });
    });
    initiator in;
    REQUIRE(in.setup(child.fd(), tls));
    std::vector<std::vector<uint8_t>> sources;
    std::vector<id_bytes> ids(count);
    for (size_t i = 0; i < count; ++i) {
        sources.emplace_back(places[i].size);
        fill_pattern(sources[i].data(), places[i].size, 1000 + i);
    }
    for (size_t i = 0; i < count; ++i) {
        const ucp_cid_t local = by_value(i);
        /* Odd ones carry an id of bytes, even ones one by value. */
        ids[i]                 = id_bytes{i, ~uint64_t(i), {}};
        const ucp_cid_t remote = (i % 2) ? ucp_cid_t{0, &ids[i], sizeof(ids[i])} : by_value(i);
        REQUIRE(ucp_pwc_put(in.p.ep, sources[i].data(), places[i].size,
                            in.address + places[i].offset, in.rkey, &local, &remote, 0) == UCS_OK);
    }
    std::set<uint64_t> local_ids;
    for (const taken &c : probe_for(in.p.worker, UCP_PWC_PROBE_LOCAL, count)) {
        CHECK(c.completion.flags == UCP_PWC_COMPLETION_LOCAL);
        CHECK(c.completion.status == UCS_OK);
        CHECK(c.completion.ep == in.p.ep);
        local_ids.insert(c.completion.cid.u64);
    }
    CHECK(local_ids.size() == count);
    CHECK(pending_of(in.p.worker) == 0);
    CHECK(in.finish(child));
}

TEST_CASE("put with completion: no local, no remote completion, and size 0", "[ucp_pwc]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    test::child_process child([&](int fd) {
        return target_child(fd, tls, 4096, {}, [&](peer &t, rma_test::region &r) {
            /* 199 is the last: the ones before it arrived by then (one lane). */
            std::vector<uint64_t> ids;
            while (ids.empty() || (ids.back() != 199)) {
                const std::vector<taken> got = probe_for(t.worker, UCP_PWC_PROBE_REMOTE, 1);
                TEST_CHILD_CHECK(got.size() == 1);
                ids.push_back(got[0].completion.cid.u64);
            }
            std::sort(ids.begin(), ids.end());
            TEST_CHILD_CHECK((ids == std::vector<uint64_t>{100, 102, 199}));
            /* The fire-and-forget put landed too. */
            TEST_CHILD_CHECK(check_pattern(r.data() + 256, 64, 4));
            TEST_CHILD_CHECK(check_pattern(r.data() + 128, 64, 2));
            return 0;
        });
    });
    initiator in;
    REQUIRE(in.setup(child.fd(), tls));
    std::vector<uint8_t> data(512);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        fill_pattern(data.data() + seed * 64, 64, seed);
    }
    ucp_ep_h ep          = in.p.ep;
    const ucp_cid_t l110 = by_value(110), l101 = by_value(101), l103 = by_value(103),
                    l120 = by_value(120);
    const ucp_cid_t r100 = by_value(100), r101 = by_value(101), r102 = by_value(102),
                    r199 = by_value(199), r9 = by_value(9);
    /* A pure notification: no data, no key. */
    CHECK(ucp_pwc_put(ep, nullptr, 0, 0, nullptr, &l110, &r100, 0) == UCS_OK);
    /* No remote completion: only ours. */
    CHECK(ucp_pwc_put(ep, data.data() + 64, 64, in.address + 64, in.rkey, &l101, &r101,
                      UCP_PWC_FLAG_NO_RCE) == UCS_OK);
    /* No local completion: only theirs. */
    CHECK(ucp_pwc_put(ep, data.data() + 128, 64, in.address + 128, in.rkey, &l103, &r102,
                      UCP_PWC_FLAG_NO_LCE) == UCS_OK);
    /* Neither. */
    CHECK(ucp_pwc_put(ep, data.data() + 256, 64, in.address + 256, in.rkey, nullptr, &r9,
                      UCP_PWC_FLAG_NO_LCE | UCP_PWC_FLAG_NO_RCE) == UCS_OK);
    /* Size 0 without a remote completion: a no-op that reports ours. */
    CHECK(ucp_pwc_put(ep, nullptr, 0, 0, nullptr, &l103, nullptr, UCP_PWC_FLAG_NO_RCE) == UCS_OK);
    /* The last notification, once everything before has gone out. */
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((pending_of(in.p.worker) != 0) && (std::chrono::steady_clock::now() < deadline)) {
    }
    CHECK(ucp_pwc_put(ep, nullptr, 0, 0, nullptr, &l120, &r199, 0) == UCS_OK);
    std::vector<uint64_t> local;
    for (const taken &c : probe_for(in.p.worker, UCP_PWC_PROBE_LOCAL, 4)) {
        CHECK(c.completion.status == UCS_OK);
        local.push_back(c.completion.cid.u64);
    }
    std::sort(local.begin(), local.end());
    CHECK((local == std::vector<uint64_t>{101, 103, 110, 120}));
    CHECK(in.finish(child));
    /* Nothing more came than asked for. */
    size_t more = 1;
    ucp_pwc_completion_t extra[4];
    CHECK(ucp_pwc_probe(in.p.worker, nullptr, extra, 4, &more, nullptr) == UCS_OK);
    CHECK(more == 0);
}

TEST_CASE("get with completion: the local id when the data landed, the target's after", "[ucp_pwc]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    const size_t sizes[] = {8, 5000, 300000};
    test::child_process child([&](int fd) {
        return target_child(fd, tls, 3 * 300000, {}, [&](peer &t, rma_test::region &r) {
            for (size_t i = 0; i < std::size(sizes); ++i) {
                fill_pattern(r.data() + i * 300000, sizes[i], 50 + i);
            }
            TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1))); /* filled */
            std::set<uint64_t> ids;
            for (const taken &c : probe_for(t.worker, UCP_PWC_PROBE_REMOTE, std::size(sizes))) {
                TEST_CHILD_CHECK(c.completion.flags ==
                                 (UCP_PWC_COMPLETION_REMOTE | UCP_PWC_COMPLETION_GET));
                ids.insert(c.completion.cid.u64);
            }
            TEST_CHILD_CHECK((ids == std::set<uint64_t>{70, 71, 72}));
            return 0;
        });
    });
    initiator in;
    REQUIRE(in.setup(child.fd(), tls));
    uint8_t filled;
    REQUIRE(in.p.recv_value_progress(child.fd(), &filled));
    std::vector<std::vector<uint8_t>> dest;
    for (size_t i = 0; i < std::size(sizes); ++i) {
        dest.emplace_back(sizes[i]);
        const ucp_cid_t local = by_value(i), remote = by_value(70 + i);
        REQUIRE(ucp_pwc_get(in.p.ep, dest[i].data(), sizes[i], in.address + i * 300000, in.rkey,
                            &local, &remote, 0) == UCS_OK);
    }
    for (const taken &c : probe_for(in.p.worker, UCP_PWC_PROBE_LOCAL, std::size(sizes))) {
        CHECK(c.completion.flags == (UCP_PWC_COMPLETION_LOCAL | UCP_PWC_COMPLETION_GET));
        CHECK(c.completion.status == UCS_OK);
        const uint64_t i = c.completion.cid.u64;
        REQUIRE(i < std::size(sizes));
        /* Landed when reported. */
        CHECK(check_pattern(dest[i].data(), sizes[i], 50 + i));
    }
    CHECK(in.finish(child));
}

TEST_CASE("put with completion: a target that does not probe stops the initiator, and "
          "nothing is lost once it does",
          "[ucp_pwc]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    constexpr unsigned window = 4;
    constexpr unsigned total  = 200;
    const settings extra{{"PWC_CREDITS", "4"}};
    test::child_process child([&](int fd) {
        return target_child(fd, tls, total * 64, extra, [&](peer &t, rma_test::region &r) {
            /* Progress, without probing, until the initiator is stopped. */
            uint8_t stopped;
            TEST_CHILD_CHECK(t.recv_value_progress(fd, &stopped));
            /* Before we give any credit back, at most a window came. */
            const std::vector<taken> first = probe_for(t.worker, UCP_PWC_PROBE_REMOTE, window);
            TEST_CHILD_CHECK(first.size() == window);
            std::vector<taken> rest = probe_for(t.worker, UCP_PWC_PROBE_REMOTE, total - window);
            rest.insert(rest.begin(), first.begin(), first.end());
            std::set<uint64_t> ids;
            for (const taken &c : rest) {
                const uint64_t i = c.completion.cid.u64;
                TEST_CHILD_CHECK(i < total);
                TEST_CHILD_CHECK(check_pattern(r.data() + i * 64, 64, i));
                ids.insert(i);
            }
            TEST_CHILD_CHECK(ids.size() == total);
            return 0;
        });
    });
    initiator in;
    REQUIRE(in.setup(child.fd(), tls, extra));
    std::vector<uint8_t> data(total * 64);
    for (unsigned i = 0; i < total; ++i) {
        fill_pattern(&data[i * 64], 64, i);
    }
    auto put = [&](unsigned i) {
        const ucp_cid_t id = by_value(i);
        return ucp_pwc_put(in.p.ep, &data[i * 64], 64, in.address + i * 64, in.rkey, nullptr, &id,
                           UCP_PWC_FLAG_NO_LCE);
    };
    /* A window goes out, a window waits here, then the call says stop. */
    unsigned next = 0;
    while ((next < 2 * window) && (put(next) == UCS_OK)) {
        ++next;
    }
    CHECK(next == 2 * window);
    CHECK(put(next) == UCS_ERR_NO_RESOURCE);
    /* The window waiting is not complete; the one sent is once it went
     * out (tcp may still be connecting). */
    const size_t stopped_pending = pending_of(in.p.worker);
    CHECK(stopped_pending >= window);
    CHECK(stopped_pending <= 2 * window);
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    /* Only probing (which progresses) and calling again. */
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    unsigned refused    = 0;
    while ((next < total) && (std::chrono::steady_clock::now() < deadline)) {
        const ucs_status_t status = put(next);
        if (status == UCS_OK) {
            ++next;
            continue;
        }
        REQUIRE(status == UCS_ERR_NO_RESOURCE);
        ++refused;
        size_t count;
        REQUIRE(ucp_pwc_probe(in.p.worker, nullptr, nullptr, 0, &count, nullptr) == UCS_OK);
    }
    CHECK(next == total);
    INFO("calls refused after the first stop: " << refused);
    CHECK(in.finish(child));
    CHECK(pending_of(in.p.worker) == 0);
}

TEST_CASE("put with completion: remote completions counted on the target's counter", "[ucp_pwc]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    constexpr unsigned puts = 50;
    test::child_process child([&](int fd) {
        return target_child(fd, tls, puts * 1024, {}, [&](peer &t, rma_test::region &r) {
            ucp_cntr_h landed = new_cntr(t.worker);
            TEST_CHILD_CHECK(landed != nullptr);
            TEST_CHILD_CHECK(ucp_pwc_bind_cntr(t.worker, landed) == UCS_OK);
            TEST_CHILD_CHECK(ucp_cntr_destroy(landed) == UCS_ERR_BUSY);
            TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1))); /* bound */
            TEST_CHILD_CHECK(ucp_cntr_wait(landed, puts, 60000) == UCS_OK);
            /* The data is visible once counted. */
            for (unsigned i = 0; i < puts; ++i) {
                TEST_CHILD_CHECK(check_pattern(r.data() + i * 1024, 1024, i));
            }
            /* Nothing queued for them. */
            ucp_pwc_completion_t c[4];
            size_t n = 1;
            TEST_CHILD_CHECK(ucp_pwc_probe(t.worker, nullptr, c, 4, &n, nullptr) == UCS_OK);
            TEST_CHILD_CHECK(n == 0);
            /* Unbound: the next is queued as an id. */
            TEST_CHILD_CHECK(ucp_pwc_bind_cntr(t.worker, nullptr) == UCS_OK);
            TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
            const std::vector<taken> got = probe_for(t.worker, UCP_PWC_PROBE_REMOTE, 1);
            TEST_CHILD_CHECK((got.size() == 1) && (got[0].completion.cid.u64 == 777));
            TEST_CHILD_CHECK(ucp_cntr_read(landed) == puts);
            TEST_CHILD_CHECK(ucp_cntr_destroy(landed) == UCS_OK);
            return 0;
        });
    });
    initiator in;
    REQUIRE(in.setup(child.fd(), tls));
    uint8_t bound;
    REQUIRE(in.p.recv_value_progress(child.fd(), &bound));
    std::vector<uint8_t> data(puts * 1024);
    for (unsigned i = 0; i < puts; ++i) {
        fill_pattern(&data[i * 1024], 1024, i);
        const ucp_cid_t id = by_value(i);
        REQUIRE(ucp_pwc_put(in.p.ep, &data[i * 1024], 1024, in.address + i * 1024, in.rkey, nullptr,
                            &id, UCP_PWC_FLAG_NO_LCE | UCP_PWC_FLAG_REMOTE_CNTR) == UCS_OK);
    }
    uint8_t unbound;
    REQUIRE(in.p.recv_value_progress(child.fd(), &unbound));
    const ucp_cid_t id = by_value(777);
    REQUIRE(ucp_pwc_put(in.p.ep, nullptr, 0, 0, nullptr, nullptr, &id,
                        UCP_PWC_FLAG_NO_LCE | UCP_PWC_FLAG_REMOTE_CNTR) == UCS_OK);
    CHECK(in.finish(child));
}

TEST_CASE("put with completion: a peer killed with operations sent and waiting", "[ucp_pwc]")
{
    const char *tls = GENERATE("posix,self", "tcp,self");
    CAPTURE(tls);
    const settings extra{{"PWC_CREDITS", "2"}};
    test::child_process child([&](int fd) {
        peer t;
        TEST_CHILD_CHECK(t.init_with(tls, features, extra) == UCS_OK);
        rma_test::region r;
        TEST_CHILD_CHECK(r.map(t.context, rma_test::memory::registered, 4096) == UCS_OK);
        std::vector<uint8_t> remote;
        TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
        TEST_CHILD_CHECK(test::send_blob(fd, t.address()));
        TEST_CHILD_CHECK(t.connect(remote) == UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, r.key()));
        TEST_CHILD_CHECK(test::send_value(fd, r.address()));
        uint8_t never;
        TEST_CHILD_CHECK(t.recv_value_progress(fd, &never)); /* never probes */
        return 0;
    });
    ep_errors errors;
    initiator in;
    REQUIRE(in.setup(child.fd(), tls, extra, ep_errors::record, &errors));
    uint64_t value = 5;
    for (uint64_t i = 0; i < 4; ++i) {
        const ucp_cid_t local = by_value(i), remote = by_value(i);
        REQUIRE(ucp_pwc_put(in.p.ep, &value, sizeof(value), in.address, in.rkey, &local, &remote,
                            0) == UCS_OK);
    }
    /* Two went out (the window), two wait for credits that never come. */
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((pending_of(in.p.worker) > 2) && (std::chrono::steady_clock::now() < deadline)) {
    }
    REQUIRE(pending_of(in.p.worker) == 2);
    child.kill(SIGKILL);
    std::map<uint64_t, ucs_status_t> outcome;
    for (const taken &c : probe_for(in.p.worker, UCP_PWC_PROBE_LOCAL, 4)) {
        outcome[c.completion.cid.u64] = c.completion.status;
    }
    REQUIRE(outcome.size() == 4);
    CHECK(outcome[0] == UCS_OK);
    CHECK(outcome[1] == UCS_OK);
    CHECK(outcome[2] != UCS_OK);
    CHECK(outcome[3] != UCS_OK);
    CHECK(pending_of(in.p.worker) == 0);
    CHECK(errors.calls == 1);
    /* The failed ep refuses more. */
    const ucp_cid_t id = by_value(9);
    CHECK(ucp_pwc_put(in.p.ep, &value, sizeof(value), in.address, in.rkey, &id, &id, 0) != UCS_OK);
    CHECK(child.wait() == 128 + SIGKILL);
}

namespace {

constexpr unsigned group_size = 4;
constexpr unsigned group_puts = 40; /* per source */
constexpr size_t group_slot   = 256;

/* Rank `rank`: puts group_puts signalled blocks into each other rank's slot
 * for it; checks every block it receives when its id arrives; rank 0 first
 * probes rank 1's alone. */
int group_member(unsigned rank, int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, features) == UCS_OK);
    rma_test::region r;
    TEST_CHILD_CHECK(r.map(p.context, rma_test::memory::registered,
                           group_size * group_puts * group_slot) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, p.address()));
    TEST_CHILD_CHECK(test::send_blob(fd, r.key()));
    TEST_CHILD_CHECK(test::send_value(fd, r.address()));
    std::vector<ucp_ep_h> eps(group_size);
    std::vector<ucp_rkey_h> rkeys(group_size);
    std::vector<uint64_t> bases(group_size);
    for (unsigned q = 0; q < group_size; ++q) {
        std::vector<uint8_t> address, key;
        TEST_CHILD_CHECK(test::recv_blob(fd, &address) && test::recv_blob(fd, &key) &&
                         test::recv_value(fd, &bases[q]));
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t *>(address.data());
        TEST_CHILD_CHECK(ucp_ep_create(p.worker, &params, &eps[q]) == UCS_OK);
        TEST_CHILD_CHECK(ucp_ep_rkey_unpack(eps[q], key.data(), &rkeys[q]) == UCS_OK);
    }
    std::vector<uint8_t> out(group_puts * group_slot);
    for (unsigned k = 0; k < group_puts; ++k) {
        fill_pattern(&out[k * group_slot], group_slot, rank * 1000 + k);
    }
    for (unsigned k = 0; k < group_puts; ++k) {
        for (unsigned q = 0; q < group_size; ++q) {
            if (q == rank) {
                continue;
            }
            const size_t slot  = (rank * group_puts + k) * group_slot;
            const ucp_cid_t id = by_value((uint64_t(rank) << 32) | k);
            ucs_status_t status;
            while ((status = ucp_pwc_put(eps[q], &out[k * group_slot], group_slot, bases[q] + slot,
                                         rkeys[q], nullptr, &id, UCP_PWC_FLAG_NO_LCE)) ==
                   UCS_ERR_NO_RESOURCE) {
                size_t n;
                TEST_CHILD_CHECK(ucp_pwc_probe(p.worker, nullptr, nullptr, 0, &n, nullptr) ==
                                 UCS_OK);
            }
            TEST_CHILD_CHECK(status == UCS_OK);
        }
    }
    /* Who sent each id: the ep it names must be ours to that rank. */
    auto source_of = [&](ucp_ep_h ep) {
        return unsigned(std::find(eps.begin(), eps.end(), ep) - eps.begin());
    };
    unsigned received = 0;
    auto check        = [&](const taken &c) {
        const unsigned from = unsigned(c.completion.cid.u64 >> 32);
        const unsigned k    = unsigned(c.completion.cid.u64 & 0xffffffffu);
        if ((from >= group_size) || (from == rank) || (k >= group_puts) ||
            (source_of(c.completion.ep) != from)) {
            return false;
        }
        ++received;
        return check_pattern(r.data() + (from * group_puts + k) * group_slot, group_slot,
                                    from * 1000 + k);
    };
    if (rank == 0) {
        /* From rank 1 alone: its ids only, all of them. */
        for (const taken &c : probe_for(p.worker, UCP_PWC_PROBE_REMOTE, group_puts, eps[1])) {
            TEST_CHILD_CHECK(c.completion.ep == eps[1]);
            TEST_CHILD_CHECK(check(c));
        }
        TEST_CHILD_CHECK(received == group_puts);
    }
    const size_t expected = (group_size - 1) * group_puts;
    for (const taken &c : probe_for(p.worker, UCP_PWC_PROBE_REMOTE, expected - received)) {
        TEST_CHILD_CHECK(check(c));
    }
    TEST_CHILD_CHECK(received == expected);
    /* Our own operations done before anyone closes. */
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((pending_of(p.worker) != 0) && (std::chrono::steady_clock::now() < deadline)) {
    }
    TEST_CHILD_CHECK(pending_of(p.worker) == 0);
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    uint8_t go;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &go));
    for (unsigned q = 0; q < group_size; ++q) {
        ucp_rkey_destroy(rkeys[q]);
        p.wait(ucp_ep_close_nb(eps[q], UCP_EP_CLOSE_MODE_FORCE));
    }
    return 0;
}

} // namespace

TEST_CASE("put with completion: four processes, probed from one source and from any", "[ucp_pwc]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    std::vector<std::unique_ptr<test::child_process>> members;
    for (unsigned r = 0; r < group_size; ++r) {
        members.push_back(std::make_unique<test::child_process>([r, tls](int fd) {
            return group_member(r, fd, tls);
        }));
    }
    std::vector<std::vector<uint8_t>> addresses(group_size), keys(group_size);
    std::vector<uint64_t> bases(group_size);
    for (unsigned r = 0; r < group_size; ++r) {
        REQUIRE(test::recv_blob(members[r]->fd(), &addresses[r]));
        REQUIRE(test::recv_blob(members[r]->fd(), &keys[r]));
        REQUIRE(test::recv_value(members[r]->fd(), &bases[r]));
    }
    for (auto &m : members) {
        for (unsigned r = 0; r < group_size; ++r) {
            REQUIRE(test::send_blob(m->fd(), addresses[r]));
            REQUIRE(test::send_blob(m->fd(), keys[r]));
            REQUIRE(test::send_value(m->fd(), bases[r]));
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
}

namespace {

/* One process over self, an ep to itself, a region of 4 KiB and its key;
 * ids of bytes up to 16. */
void self_with_region(peer &p, rma_test::region &r, ucp_rkey_h *rkey)
{
    REQUIRE(p.init_with("self", features, {{"PWC_MAX_ID_SIZE", "16"}}) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    REQUIRE(r.map(p.context, rma_test::memory::registered, 4096) == UCS_OK);
    REQUIRE(ucp_ep_rkey_unpack(p.ep, r.key().data(), rkey) == UCS_OK);
}

} // namespace

TEST_CASE("put with completion: bad arguments are refused", "[ucp_pwc]")
{
    peer p;
    rma_test::region r;
    ucp_rkey_h rkey;
    self_with_region(p, r, &rkey);
    uint8_t data[64]      = {};
    const ucp_cid_t id    = by_value(1);
    const uint8_t big[17] = {};
    const ucp_cid_t too_big{0, big, sizeof(big)}, fits{0, big, 16}, at_null{0, nullptr, 4};
    CHECK(ucp_pwc_put(nullptr, data, 8, r.address(), rkey, &id, &id, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_put(p.ep, data, 8, r.address(), rkey, &id, &id, 1u << 7) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_put(p.ep, data, 8, r.address(), rkey, &id, &too_big, 0) == UCS_ERR_EXCEEDS_LIMIT);
    /* Without a remote completion the id is not sent: no limit. */
    CHECK(ucp_pwc_put(p.ep, data, 8, r.address(), rkey, &id, &too_big,
                      UCP_PWC_FLAG_NO_RCE | UCP_PWC_FLAG_NO_LCE) == UCS_OK);
    CHECK(ucp_pwc_put(p.ep, data, 8, r.address(), rkey, &id, &at_null, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_put(p.ep, nullptr, 8, r.address(), rkey, &id, &id, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_put(p.ep, data, 8, r.address(), nullptr, &id, &id, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_put(p.ep, data, 8, r.address() + 4090, rkey, &id, &id, 0) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_get(p.ep, data, 0, r.address(), rkey, &id, &id, 0) == UCS_ERR_INVALID_PARAM);
    /* Over self: the id of bytes and the data arrive as sent. */
    std::memset(data, 0x5c, sizeof(data));
    CHECK(ucp_pwc_put(p.ep, data, 64, r.address(), rkey, &id, &fits, UCP_PWC_FLAG_NO_LCE) ==
          UCS_OK);
    const std::vector<taken> got = probe_for(p.worker, UCP_PWC_PROBE_REMOTE, 1);
    REQUIRE(got.size() == 1);
    CHECK(got[0].id == std::vector<uint8_t>(big, big + 16));
    CHECK(std::all_of(r.data(), r.data() + 64, [](uint8_t b) { return b == 0x5c; }));
    ucp_rkey_destroy(rkey);
    /* The probe's own arguments. */
    size_t count;
    ucp_pwc_completion_t c;
    ucp_pwc_probe_params_t params{};
    CHECK(ucp_pwc_probe(nullptr, nullptr, &c, 1, &count, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_probe(p.worker, nullptr, &c, 1, nullptr, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_probe(p.worker, nullptr, nullptr, 1, &count, nullptr) == UCS_ERR_INVALID_PARAM);
    params.field_mask = 1u << 9;
    CHECK(ucp_pwc_probe(p.worker, &params, &c, 1, &count, nullptr) == UCS_ERR_INVALID_PARAM);
    params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS;
    params.flags      = 1u << 5;
    CHECK(ucp_pwc_probe(p.worker, &params, &c, 1, &count, nullptr) == UCS_ERR_INVALID_PARAM);
    params.field_mask = UCP_PWC_PROBE_FIELD_EP;
    params.ep         = nullptr;
    CHECK(ucp_pwc_probe(p.worker, &params, &c, 1, &count, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_pwc_bind_cntr(nullptr, nullptr) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("probe with a handler: called for each completion taken", "[ucp_pwc]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    std::vector<uint64_t> seen;
    for (uint64_t i = 0; i < 5; ++i) {
        const ucp_cid_t local = by_value(100 + i), remote = by_value(i);
        REQUIRE(ucp_pwc_put(p.ep, nullptr, 0, 0, nullptr, &local, &remote, 0) == UCS_OK);
    }
    ucp_pwc_probe_params_t params{};
    params.field_mask = UCP_PWC_PROBE_FIELD_HANDLER;
    params.handler    = [](const ucp_pwc_completion_t *c, void *arg) {
        static_cast<std::vector<uint64_t> *>(arg)->push_back(c->cid.u64);
    };
    params.arg          = &seen;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((seen.size() < 10) && (std::chrono::steady_clock::now() < deadline)) {
        size_t count;
        REQUIRE(ucp_pwc_probe(p.worker, &params, nullptr, 3, &count, nullptr) == UCS_OK);
        CHECK(count <= 3);
    }
    std::sort(seen.begin(), seen.end());
    CHECK((seen == std::vector<uint64_t>{0, 1, 2, 3, 4, 100, 101, 102, 103, 104}));
}

namespace {

/* An AM_PWC as a peer would send it: header, id bytes, data. */
std::vector<uint8_t> pwc_frame(const ucp::wire::pwc_hdr &hdr, const std::vector<uint8_t> &id,
                               const std::vector<uint8_t> &data)
{
    std::vector<uint8_t> bytes(sizeof(hdr) + id.size() + data.size());
    std::memcpy(bytes.data(), &hdr, sizeof(hdr));
    std::copy(id.begin(), id.end(), bytes.begin() + sizeof(hdr));
    std::copy(data.begin(), data.end(), bytes.begin() + sizeof(hdr) + id.size());
    return bytes;
}

size_t remote_queued(peer &p)
{
    ucp_pwc_probe_params_t params{};
    params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS;
    params.flags      = UCP_PWC_PROBE_REMOTE;
    ucp_pwc_completion_t c[16];
    size_t count = 0;
    return (ucp_pwc_probe(p.worker, &params, c, 16, &count, nullptr) == UCS_OK) ? count : SIZE_MAX;
}

} // namespace

TEST_CASE("forged AM_PWC and AM_PWC_CREDIT messages are dropped, and the region is untouched",
          "[ucp_pwc]")
{
    peer p;
    rma_test::region r;
    ucp_rkey_h rkey;
    self_with_region(p, r, &rkey);
    /* A real one first: the ep is wired up, its id known. */
    const uint64_t value = 0x1234;
    const ucp_cid_t id   = by_value(5);
    REQUIRE(ucp_pwc_put(p.ep, &value, sizeof(value), r.address(), rkey, nullptr, &id,
                        UCP_PWC_FLAG_NO_LCE) == UCS_OK);
    REQUIRE(probe_for(p.worker, UCP_PWC_PROBE_REMOTE, 1).size() == 1);

    ucp::wire::pwc_hdr good{};
    good.src_uuid = p.worker->uuid;
    good.ep_id    = p.ep->remote_id;
    good.address  = r.address() + 64;
    good.secret   = rkey->secret;
    good.cid      = 77;
    good.flags    = ucp::wire::pwc_flag::DATA;
    const std::vector<uint8_t> data(32, 0xee), none;
    log_capture capture;
    auto deliver = [&](const std::vector<uint8_t> &bytes) {
        std::vector<uint8_t> copy = bytes; /* the handler may not keep it */
        return ucp::pwc_handler(p.worker, copy.data(), copy.size(), 0);
    };
    std::vector<std::vector<uint8_t>> forged;
    /* Too short for the header. */
    forged.push_back(std::vector<uint8_t>(sizeof(good) - 1, 0));
    /* Another worker's uuid, or an ep id that names nothing. */
    auto hdr = good;
    hdr.src_uuid ^= 1;
    forged.push_back(pwc_frame(hdr, none, data));
    hdr = good;
    hdr.ep_id += 1000;
    forged.push_back(pwc_frame(hdr, none, data));
    /* An id longer than UCX_PWC_MAX_ID_SIZE, one longer than what came. */
    hdr         = good;
    hdr.id_size = 17;
    forged.push_back(pwc_frame(hdr, std::vector<uint8_t>(17, 1), data));
    hdr.id_size = 8;
    forged.push_back(pwc_frame(hdr, std::vector<uint8_t>(4, 1), none));
    /* Unknown flags; a notification with bytes after it. */
    hdr = good;
    hdr.flags |= 0x80;
    forged.push_back(pwc_frame(hdr, none, data));
    hdr.flags = 0;
    forged.push_back(pwc_frame(hdr, none, data));
    /* Outside the region, across its end, with another secret. */
    hdr         = good;
    hdr.address = r.address() + 8192;
    forged.push_back(pwc_frame(hdr, none, data));
    hdr.address = r.address() + 4096 - 16;
    forged.push_back(pwc_frame(hdr, none, data));
    hdr = good;
    hdr.secret ^= 1;
    forged.push_back(pwc_frame(hdr, none, data));
    for (const auto &bytes : forged) {
        CHECK(deliver(bytes) == UCS_OK);
    }
    CHECK(remote_queued(p) == 0);
    CHECK(std::all_of(r.data() + 64, r.data() + 4096, [](uint8_t b) { return b == 0; }));
    CHECK(capture.text().find("malformed") != std::string::npos);
    CHECK(capture.text().find("refused") != std::string::npos);
    /* The well-formed one lands. */
    CHECK(deliver(pwc_frame(good, none, data)) == UCS_OK);
    const std::vector<taken> got = probe_for(p.worker, UCP_PWC_PROBE_REMOTE, 1);
    REQUIRE(got.size() == 1);
    CHECK(got[0].completion.cid.u64 == 77);
    CHECK(std::equal(data.begin(), data.end(), r.data() + 64));

    /* Credit grants: short, from nobody, or more than a window (kept at one). */
    std::vector<uint8_t> short_grant(sizeof(ucp::wire::pwc_credit_hdr) - 1, 0);
    CHECK(ucp::pwc_credit_handler(p.worker, short_grant.data(), short_grant.size(), 0) == UCS_OK);
    ucp::wire::pwc_credit_hdr grant{p.worker->uuid, p.ep->remote_id + 1000, 5, 0};
    CHECK(ucp::pwc_credit_handler(p.worker, &grant, sizeof(grant), 0) == UCS_OK);
    grant = {p.worker->uuid, p.ep->remote_id, 1u << 30, 0};
    CHECK(ucp::pwc_credit_handler(p.worker, &grant, sizeof(grant), 0) == UCS_OK);
    /* Still a window: 128 go, 128 wait, then the call says stop. */
    unsigned accepted    = 0;
    const ucp_cid_t note = by_value(1);
    while ((accepted < 1000) && (ucp_pwc_put(p.ep, nullptr, 0, 0, nullptr, nullptr, &note,
                                             UCP_PWC_FLAG_NO_LCE) == UCS_OK)) {
        ++accepted; /* nobody probes meanwhile: over self they queue here */
    }
    CHECK(accepted == 256);
    CHECK(probe_for(p.worker, UCP_PWC_PROBE_REMOTE, 256).size() == 256);
    ucp_rkey_destroy(rkey);
}
