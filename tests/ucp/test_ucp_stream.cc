/*
 * Streams end to end: a byte sequence sent and received in random pieces
 * (contig, iov, generic, recv_data_nb) keeps its order over every transport
 * and in loopback; WAITALL and whole-element completion; data that arrives
 * before the receiver's ep; ucp_stream_worker_poll over two peers;
 * cancellation on close and bad arguments.
 */
#include "generic_dt_util.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/proto/select.h>
#include <ucp/proto/wire.h>
#include <ucp/stream/stream.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <set>
#include <cstring>
#include <random>

using namespace ucp_test;

namespace {

const char *const transports[] = {"posix,cma", "sysv", "tcp"};

/* ---- random pieces -------------------------------------------------------- */

enum piece_kind { CONTIG, IOV, GENERIC, RECV_DATA, KIND_COUNT };

struct piece {
    size_t size;
    piece_kind kind;
    bool waitall;
};

/* The pieces a side cuts `total` bytes into; receivers also use recv_data. */
std::vector<piece> make_pieces(uint64_t seed, size_t total, size_t max_piece, bool receiver)
{
    std::mt19937_64 rng(seed);
    std::vector<piece> pieces;
    for (size_t done = 0; done < total;) {
        size_t size = 1 + rng() % ((rng() % 4 == 0) ? max_piece : 300);
        size        = std::min(size, total - done);
        auto kind   = piece_kind(rng() % (receiver ? KIND_COUNT : RECV_DATA));
        pieces.push_back({size, kind, (rng() % 3) == 0});
        done += size;
    }
    return pieces;
}

/* Sends `data` in the pieces of `seed`; returns false on a failure. */
bool send_pieces(peer &p, const std::vector<uint8_t> &data, uint64_t seed, size_t max_piece,
                 ucp_datatype_t generic)
{
    const std::vector<piece> pieces = make_pieces(seed, data.size(), max_piece, false);
    std::vector<std::array<ucp_dt_iov_t, 3>> iovs(pieces.size());
    std::vector<void *> requests;
    size_t offset = 0;
    for (size_t n = 0; n < pieces.size(); ++n) {
        const piece &pc = pieces[n];
        auto *base      = const_cast<uint8_t *>(data.data()) + offset;
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        ucs_status_ptr_t req;
        if (pc.kind == IOV) {
            const size_t a = pc.size / 3;
            iovs[n]        = {{{base, a}, {base + a, 0}, {base + a, pc.size - a}}};
            param.datatype = ucp_dt_make_iov();
            req            = ucp_stream_send_nbx(p.ep, iovs[n].data(), iovs[n].size(), &param);
        } else {
            param.datatype = (pc.kind == GENERIC) ? generic : ucp_dt_make_contig(1);
            req            = ucp_stream_send_nbx(p.ep, base, pc.size, &param);
        }
        if (UCS_PTR_IS_ERR(req)) {
            return false;
        }
        if (req != nullptr) {
            requests.push_back(req);
        }
        offset += pc.size;
        if (requests.size() > 64) {
            for (void *r : requests) {
                if (p.wait(r) != UCS_OK) {
                    return false;
                }
            }
            requests.clear();
        }
    }
    for (void *r : requests) {
        if (p.wait(r) != UCS_OK) {
            return false;
        }
    }
    return true;
}

/* Waits for a stream receive; returns its status and length. */
ucs_status_t wait_stream(peer &p, ucs_status_ptr_t req, size_t immediate, size_t *length)
{
    if (req == nullptr) {
        *length = immediate;
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    ucs_status_t status;
    while ((status = ucp_stream_recv_request_test(req, length)) == UCS_INPROGRESS) {
        ucp_worker_progress(p.worker);
    }
    ucp_request_free(req);
    return status;
}

/*
 * Receives `total` bytes from p.ep in the pieces of `seed` into *out.
 * Returns an empty string on success, otherwise what went wrong.
 */
std::string recv_pieces(peer &p, size_t total, uint64_t seed, size_t max_piece,
                        ucp_datatype_t generic, std::vector<uint8_t> *out)
{
    out->assign(total, 0);
    const std::vector<piece> pieces = make_pieces(seed, total * 2, max_piece, true);
    size_t offset                   = 0;
    for (size_t n = 0; offset < total; ++n) {
        const piece &pc   = pieces[n % pieces.size()];
        uint8_t *base     = out->data() + offset;
        const size_t room = std::min(pc.size, total - offset);
        size_t got        = 0;
        if (pc.kind == RECV_DATA) {
            size_t length         = 0;
            ucs_status_ptr_t data = ucp_stream_recv_data_nb(p.ep, &length);
            if (UCS_PTR_IS_ERR(data)) {
                return "recv_data_nb failed";
            }
            if (data == nullptr) {
                ucp_worker_progress(p.worker);
                continue;
            }
            if ((length == 0) || (length > total - offset)) {
                return "recv_data_nb returned a bad length";
            }
            std::memcpy(base, data, length);
            ucp_stream_data_release(p.ep, data);
            offset += length;
            continue;
        }
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = pc.waitall ? UCP_STREAM_RECV_FLAG_WAITALL : 0;
        size_t immediate   = 0;
        ucs_status_ptr_t req;
        ucp_dt_iov_t iov[2];
        if (pc.kind == IOV) {
            iov[0]         = {base, room / 2};
            iov[1]         = {base + room / 2, room - room / 2};
            param.datatype = ucp_dt_make_iov();
            req            = ucp_stream_recv_nbx(p.ep, iov, 2, &immediate, &param);
        } else {
            param.datatype = (pc.kind == GENERIC) ? generic : ucp_dt_make_contig(1);
            req            = ucp_stream_recv_nbx(p.ep, base, room, &immediate, &param);
        }
        if (wait_stream(p, req, immediate, &got) != UCS_OK) {
            return "a stream receive failed";
        }
        if ((got == 0) || (got > room) || (pc.waitall && (got != room))) {
            return "a stream receive completed with " + std::to_string(got) + " of " +
                   std::to_string(room) + (pc.waitall ? " (WAITALL)" : "");
        }
        offset += got;
    }
    return "";
}

constexpr size_t stream_total = (3u << 20) / 2 + 7;
/* Below the stream rendezvous, and across it (proto::stream_rndv_min):
 * pulled pieces between eager ones, into receives and into segments. */
constexpr size_t max_pieces[] = {100000, 700000};

/* Rendezvous pulls of the worker's streams so far. */
uint64_t pulls(const peer &p)
{
    const ucp::stream_worker *sw = p.worker->stream_state;
    return (sw != nullptr) ? sw->pulls_direct + sw->pulls_staged : 0;
}

/* The rendezvous threshold of the tests below: under the largest pieces on
 * every transport (tcp's model puts its own above them). */
constexpr const char *rndv_thresh = "65536";

/* Whether pieces up to `max_piece` go by rendezvous: large enough, and the
 * ep has a lane to pull with (not sysv alone). */
bool pulled(const peer &p, size_t max_piece)
{
    return (max_piece >= ucp::proto::stream_rndv_min) && (p.ep->rndv_lane != ucp::no_lane);
}

int stream_child(int fd, const char *tls, size_t max_piece)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    const ucp_datatype_t generic = make_identity_generic();
    TEST_CHILD_CHECK(generic != 0);
    std::vector<uint8_t> data(stream_total);
    fill_pattern(data.data(), data.size(), 11);
    TEST_CHILD_CHECK(send_pieces(p, data, 21, max_piece, generic));
    TEST_CHILD_CHECK(g_generic.packs > 0);

    /* The other direction: the parent sends, we receive in pieces. */
    std::vector<uint8_t> in;
    const std::string error = recv_pieces(p, stream_total / 3, 31, max_piece, generic, &in);
    if (!error.empty()) {
        std::fprintf(stderr, "child: %s\n", error.c_str());
        return 1;
    }
    TEST_CHILD_CHECK(check_pattern(in.data(), in.size(), 12));
    ucp_dt_destroy(generic);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("stream bytes keep their order for any split of sends and receives", "[ucp_stream]")
{
    env_guard env;
    env.set("UCX_RNDV_THRESH", rndv_thresh);
    for (const char *tls : transports)
        for (size_t max_piece : max_pieces) {
            INFO("UCX_TLS=" << tls << ", pieces up to " << max_piece << " bytes");
            peer p;
            REQUIRE(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
            test::child_process child([tls, max_piece](int fd) {
                return stream_child(fd, tls, max_piece);
            });
            REQUIRE(p.connect_over(child.fd()));
            const ucp_datatype_t generic = make_identity_generic();
            REQUIRE(generic != 0);

            std::vector<uint8_t> in;
            CHECK(recv_pieces(p, stream_total, 22, max_piece, generic, &in) == "");
            CHECK(check_pattern(in.data(), in.size(), 11));
            CHECK((pulls(p) != 0) == pulled(p, max_piece));
            CHECK(g_generic.unpacks > 0);

            std::vector<uint8_t> out(stream_total / 3);
            fill_pattern(out.data(), out.size(), 12);
            CHECK(send_pieces(p, out, 32, max_piece, generic));
            ucp_dt_destroy(generic);
            REQUIRE(test::sync_peer(child.fd()));
            CHECK(child.wait() == 0);
        }
}

TEST_CASE("stream in loopback for any split", "[ucp_stream]")
{
    env_guard env;
    env.set("UCX_RNDV_THRESH", rndv_thresh);
    for (const char *tls : {"self", "posix,cma", "tcp"})
        for (size_t max_piece : max_pieces) {
            INFO("UCX_TLS=" << tls << ", pieces up to " << max_piece << " bytes");
            peer p;
            REQUIRE(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
            REQUIRE(p.connect(p.address()) == UCS_OK);
            const ucp_datatype_t generic = make_identity_generic();
            REQUIRE(generic != 0);
            /* Sends complete with no receive posted (a rendezvous once its wait
         * for one is over), so all of them go first, then the receives. */
            std::vector<uint8_t> out(3 * max_piece + 3);
            fill_pattern(out.data(), out.size(), 5);
            REQUIRE(send_pieces(p, out, 6, max_piece, generic));
            std::vector<uint8_t> in;
            CHECK(recv_pieces(p, out.size(), 7, max_piece, generic, &in) == "");
            CHECK((pulls(p) != 0) == pulled(p, max_piece));
            CHECK(in == out);
            ucp_dt_destroy(generic);
        }
}

namespace {

struct stream_cb_log {
    int calls           = 0;
    size_t length       = 0;
    ucs_status_t status = UCS_INPROGRESS;
};

void stream_recv_cb(void *, ucs_status_t status, size_t length, void *user_data)
{
    auto *log = static_cast<stream_cb_log *>(user_data);
    log->calls++;
    log->length = length;
    log->status = status;
}

stream_cb_log g_legacy_log;
bool g_in_call = false;
int g_inside   = 0;

void legacy_stream_cb(void *, ucs_status_t status, size_t length)
{
    g_inside += g_in_call ? 1 : 0;
    g_legacy_log.calls++;
    g_legacy_log.length = length;
    g_legacy_log.status = status;
}

ucs_status_ptr_t post_recv(peer &p, void *buffer, size_t count, ucp_datatype_t dt, uint32_t flags,
                           stream_cb_log *log, size_t *length)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS |
                         UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.datatype       = dt;
    param.flags          = flags;
    param.cb.recv_stream = stream_recv_cb;
    param.user_data      = log;
    return ucp_stream_recv_nbx(p.ep, buffer, count, length, &param);
}

ucs_status_t send_bytes(peer &p, const void *buffer, size_t length)
{
    ucp_request_param_t param{};
    return p.wait(ucp_stream_send_nbx(p.ep, buffer, length, &param));
}

void progress_some(peer &p)
{
    for (int i = 0; i < 200; ++i) {
        ucp_worker_progress(p.worker);
    }
}

} // namespace

TEST_CASE("stream receive completion: available bytes, WAITALL, whole elements", "[ucp_stream]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_STREAM) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    std::vector<uint8_t> out(4000);
    fill_pattern(out.data(), out.size(), 3);
    std::vector<uint8_t> in(4000, 0);
    size_t length = 0;

    /* Without WAITALL: completes with what arrived. */
    stream_cb_log log;
    ucs_status_ptr_t req = post_recv(p, in.data(), 1000, ucp_dt_make_contig(1), 0, &log, &length);
    REQUIRE(req != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    CHECK(log.calls == 0);
    REQUIRE(send_bytes(p, out.data(), 300) == UCS_OK);
    REQUIRE(test::poll_until([&] { return log.calls == 1; }, [&] { progress_some(p); }));
    CHECK(log.status == UCS_OK);
    CHECK(log.length == 300);
    CHECK(ucp_stream_recv_request_test(req, &length) == UCS_OK);
    CHECK(length == 300);
    ucp_request_free(req);

    /* WAITALL: stays until full, over several sends. */
    log = {};
    req = post_recv(p, in.data() + 300, 1000, ucp_dt_make_contig(1), UCP_STREAM_RECV_FLAG_WAITALL,
                    &log, &length);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    REQUIRE(send_bytes(p, out.data() + 300, 400) == UCS_OK);
    progress_some(p);
    CHECK(log.calls == 0);
    CHECK(ucp_stream_recv_request_test(req, &length) == UCS_INPROGRESS);
    REQUIRE(send_bytes(p, out.data() + 700, 1000) == UCS_OK);
    REQUIRE(test::poll_until([&] { return log.calls == 1; }, [&] { progress_some(p); }));
    CHECK(log.length == 1000);
    ucp_request_free(req);

    /* The 400 bytes beyond it wait: an immediate receive, no callback. */
    log = {};
    CHECK(post_recv(p, in.data() + 1300, 1000, ucp_dt_make_contig(1), 0, &log, &length) == nullptr);
    CHECK(length == 400);
    CHECK(log.calls == 0);
    CHECK(std::memcmp(in.data(), out.data(), 1700) == 0);

    /* contig(4): only whole elements complete a receive. */
    log                = {};
    uint32_t words[10] = {};
    req                = post_recv(p, words, 10, ucp_dt_make_contig(4), 0, &log, &length);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    REQUIRE(send_bytes(p, out.data() + 1700, 6) == UCS_OK);
    progress_some(p);
    CHECK(log.calls == 0);
    REQUIRE(send_bytes(p, out.data() + 1706, 2) == UCS_OK);
    REQUIRE(test::poll_until([&] { return log.calls == 1; }, [&] { progress_some(p); }));
    CHECK(log.length == 8);
    CHECK(std::memcmp(words, out.data() + 1700, 8) == 0);
    ucp_request_free(req);

    /* Nothing to receive into: done at once. */
    length = 77;
    CHECK(post_recv(p, in.data(), 0, ucp_dt_make_contig(1), 0, &log, &length) == nullptr);
    CHECK(length == 0);

    /* The old call: its callback only outside the call. */
    g_legacy_log = {};
    g_in_call    = true;
    req = ucp_stream_recv_nb(p.ep, in.data(), 100, ucp_dt_make_contig(1), legacy_stream_cb, &length,
                             0);
    g_in_call = false;
    REQUIRE(req != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    /* (self delivers inside the send call, completing the receive there.) */
    ucs_status_ptr_t sreq = ucp_stream_send_nb(p.ep, out.data(), 50, ucp_dt_make_contig(1), nullptr,
                                               0);
    REQUIRE(!UCS_PTR_IS_ERR(sreq));
    REQUIRE(p.wait(sreq) == UCS_OK);
    REQUIRE(test::poll_until([&] { return g_legacy_log.calls == 1; }, [&] { progress_some(p); }));
    CHECK(g_legacy_log.length == 50);
    CHECK(g_legacy_log.status == UCS_OK);
    CHECK(g_inside == 0);
    ucp_request_free(req);
}

TEST_CASE("stream recv_data_nb hands out UCP's buffers in order", "[ucp_stream]")
{
    for (const char *tls : {"self", "posix,cma"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        size_t length = 0;
        CHECK(ucp_stream_recv_data_nb(p.ep, &length) == nullptr); /* nothing yet */

        std::vector<uint8_t> out(50000);
        fill_pattern(out.data(), out.size(), 9);
        for (size_t offset = 0, size = 1; offset < out.size(); offset += size, size *= 3) {
            size = std::min(size, out.size() - offset);
            REQUIRE(send_bytes(p, out.data() + offset, size) == UCS_OK);
        }
        /* Once data is there, a receive takes 3 bytes (a whole first segment
         * and part of the next); recv_data_nb gets the rest. */
        ucp_stream_poll_ep_t eps[1];
        REQUIRE(test::poll_until([&] { return ucp_stream_worker_poll(p.worker, eps, 1, 0) == 1; },
                                 [&] { ucp_worker_progress(p.worker); }));
        uint8_t first[3];
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
        size_t immediate = 0, got = 0;
        ucs_status_ptr_t req = ucp_stream_recv_nbx(p.ep, first, 3, &immediate, &param);
        REQUIRE(wait_stream(p, req, immediate, &got) == UCS_OK);
        REQUIRE(got == 3);
        std::vector<uint8_t> in(first, first + 3);
        std::vector<void *> held;
        REQUIRE(test::poll_until(
            [&] {
            void *data = ucp_stream_recv_data_nb(p.ep, &length);
            if (UCS_PTR_IS_ERR(data)) {
                return true;
            }
            if (data != nullptr) {
                in.insert(in.end(), static_cast<uint8_t *>(data),
                          static_cast<uint8_t *>(data) + length);
                held.push_back(data);
            }
            return in.size() >= out.size();
            },
            [&] { ucp_worker_progress(p.worker); }));
        CHECK(in == out);
        CHECK(held.size() > 1);
        /* Released in any order, after more traffic. */
        std::reverse(held.begin(), held.end());
        for (void *data : held) {
            ucp_stream_data_release(p.ep, data);
        }
    }
}

namespace {

/* Sends `rounds` times as many bytes of `mark` as the parent says. */
int poll_child(int fd, const char *tls, uint8_t mark, int rounds)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    for (int round = 0; round < rounds; ++round) {
        uint64_t go;
        TEST_CHILD_CHECK(p.recv_value_progress(fd, &go));
        std::vector<uint8_t> data(go, mark);
        TEST_CHILD_CHECK(send_bytes(p, data.data(), data.size()) == UCS_OK);
    }
    uint64_t done;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &done));
    return 0;
}

/* Connects with user_data set, as a poll-driven server would. */
ucs_status_t connect_with_user_data(peer &p, int fd, void *user_data, ucp_ep_h *ep_p)
{
    std::vector<uint8_t> remote;
    if (!test::send_blob(fd, p.address()) || !test::recv_blob(fd, &remote)) {
        return UCS_ERR_IO_ERROR;
    }
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_USER_DATA;
    params.address    = reinterpret_cast<const ucp_address_t *>(remote.data());
    params.user_data  = user_data;
    return ucp_ep_create(p.worker, &params, ep_p);
}

/* Reads `length` bytes from ep that must all be `mark`. */
bool drain(peer &p, ucp_ep_h ep, size_t length, uint8_t mark)
{
    std::vector<uint8_t> in(length);
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
    size_t immediate = 0, got = 0;
    ucs_status_ptr_t req = ucp_stream_recv_nbx(ep, in.data(), length, &immediate, &param);
    ucs_status_t status  = wait_stream(p, req, immediate, &got);
    return (status == UCS_OK) && (got == length) &&
           std::all_of(in.begin(), in.end(), [mark](uint8_t b) { return b == mark; });
}

} // namespace

TEST_CASE("ucp_stream_worker_poll reports the eps with data and their user_data", "[ucp_stream]")
{
    for (const char *tls : {"posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer a; /* a.ep to the first child, ep_b to the second */
        REQUIRE(a.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
        test::child_process child_a([tls](int fd) { return poll_child(fd, tls, 0xaa, 2); });
        test::child_process child_b([tls](int fd) { return poll_child(fd, tls, 0xbb, 1); });
        int tag_a = 1, tag_b = 2;
        ucp_ep_h ep_b = nullptr;
        REQUIRE(connect_with_user_data(a, child_a.fd(), &tag_a, &a.ep) == UCS_OK);
        REQUIRE(connect_with_user_data(a, child_b.fd(), &tag_b, &ep_b) == UCS_OK);

        ucp_stream_poll_ep_t eps[4];
        CHECK(ucp_stream_worker_poll(a.worker, eps, 4, 0) == 0);

        /* Only a's peer sends: only a's ep shows up, once. */
        REQUIRE(test::send_value(child_a.fd(), uint64_t(5000)));
        ssize_t n = 0;
        REQUIRE(test::poll_until(
            [&] {
            n = ucp_stream_worker_poll(a.worker, eps, 4, 0);
            return n != 0;
            },
            [&] { ucp_worker_progress(a.worker); }));
        REQUIRE(n == 1);
        CHECK(eps[0].ep == a.ep);
        CHECK(eps[0].user_data == &tag_a);
        CHECK(ucp_stream_worker_poll(a.worker, eps, 4, 0) == 0);
        CHECK(drain(a, a.ep, 5000, 0xaa));

        /* Both send: both show up, max_eps bounds each call. */
        REQUIRE(test::send_value(child_a.fd(), uint64_t(100)));
        REQUIRE(test::send_value(child_b.fd(), uint64_t(100)));
        std::set<void *> seen;
        REQUIRE(test::poll_until(
            [&] {
            ssize_t k = ucp_stream_worker_poll(a.worker, eps, 1, 0);
            if (k > 1) {
                seen.insert(nullptr); /* more than max_eps: fails below */
            }
            for (ssize_t i = 0; i < k; ++i) {
                seen.insert(eps[i].user_data);
                CHECK(eps[i].ep == ((eps[i].user_data == &tag_a) ? a.ep : ep_b));
            }
            return seen.size() >= 2;
            },
            [&] { ucp_worker_progress(a.worker); }));
        CHECK(seen == std::set<void *>{&tag_a, &tag_b});
        CHECK(drain(a, a.ep, 100, 0xaa));
        CHECK(drain(a, ep_b, 100, 0xbb));

        REQUIRE(test::send_value(child_a.fd(), uint64_t(1)));
        REQUIRE(test::send_value(child_b.fd(), uint64_t(1)));
        CHECK(child_a.wait() == 0);
        CHECK(child_b.wait() == 0);
        ucp_request_param_t cparam{};
        cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        CHECK(a.wait(ucp_ep_close_nbx(ep_b, &cparam)) == UCS_OK);
    }
}

namespace {

/* Connects and sends at once; the parent makes its ep only afterwards. */
int early_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
    TEST_CHILD_CHECK(test::send_blob(fd, p.address()));
    TEST_CHILD_CHECK(p.connect(remote) == UCS_OK);
    std::vector<uint8_t> data(100000);
    fill_pattern(data.data(), data.size(), 44);
    TEST_CHILD_CHECK(send_pieces(p, data, 45, 30000, ucp_dt_make_contig(1)));
    TEST_CHILD_CHECK(test::send_value(fd, uint64_t(1)));
    uint64_t done;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("stream data that arrives before the receiver's ep is kept for it", "[ucp_stream]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
        test::child_process child([tls](int fd) { return early_child(fd, tls); });
        std::vector<uint8_t> remote;
        REQUIRE(test::send_blob(child.fd(), p.address()));
        REQUIRE(test::recv_blob(child.fd(), &remote));
        uint64_t sent;
        REQUIRE(p.recv_value_progress(child.fd(), &sent));
        progress_some(p);
        /* The data sits on an ep we do not have yet: not reported. */
        ucp_stream_poll_ep_t eps[2];
        CHECK(ucp_stream_worker_poll(p.worker, eps, 2, 0) == 0);

        int tag = 5;
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_USER_DATA;
        params.address    = reinterpret_cast<const ucp_address_t *>(remote.data());
        params.user_data  = &tag;
        REQUIRE(ucp_ep_create(p.worker, &params, &p.ep) == UCS_OK);
        ssize_t n = 0;
        REQUIRE(test::poll_until(
            [&] {
            n = ucp_stream_worker_poll(p.worker, eps, 2, 0);
            return n != 0;
            },
            [&] { ucp_worker_progress(p.worker); }));
        CHECK(n == 1);
        CHECK(eps[0].ep == p.ep);
        CHECK(eps[0].user_data == &tag);

        std::vector<uint8_t> in;
        CHECK(recv_pieces(p, 100000, 46, 30000, ucp_dt_make_contig(1), &in) == "");
        CHECK(check_pattern(in.data(), in.size(), 44));
        REQUIRE(test::send_value(child.fd(), uint64_t(1)));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("stream receives complete as canceled when their ep closes; bad arguments",
          "[ucp_stream]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_STREAM) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    log_capture capture;
    uint8_t buffer[64];
    size_t length = 0;
    ucp_request_param_t param{};

    CHECK(UCS_PTR_STATUS(ucp_stream_send_nbx(nullptr, buffer, 1, &param)) == UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_stream_send_nbx(p.ep, nullptr, 1, &param)) == UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_stream_send_nbx(p.ep, buffer, 1, nullptr)) == UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_stream_recv_nbx(nullptr, buffer, 1, &length, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_stream_recv_nbx(p.ep, nullptr, 1, &length, &param)) ==
          UCS_ERR_INVALID_PARAM);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = 1u << 9;
    CHECK(UCS_PTR_STATUS(ucp_stream_recv_nbx(p.ep, buffer, 1, &length, &param)) ==
          UCS_ERR_INVALID_PARAM);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(0);
    CHECK(UCS_PTR_STATUS(ucp_stream_recv_nbx(p.ep, buffer, 1, &length, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_stream_recv_data_nb(nullptr, &length)) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_stream_worker_poll(nullptr, nullptr, 0, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_stream_worker_poll(p.worker, nullptr, 1, 0) == UCS_ERR_INVALID_PARAM);
    alignas(64) uint8_t fake[128] = {};
    ucp_stream_data_release(p.ep, fake + 64);
    ucp_stream_data_release(p.ep, fake + 1);
    CHECK(capture.text().find("not stream data") != std::string::npos);

    /* A malformed stream message is dropped. */
    CHECK(ucp::stream_am_handler(p.worker, fake, sizeof(ucp::wire::stream_hdr) - 1, 0) == UCS_OK);
    CHECK(capture.text().find("malformed stream") != std::string::npos);

    /* Close with receives posted: they complete as canceled. */
    stream_cb_log log1, log2;
    ucs_status_ptr_t r1 = post_recv(p, buffer, 10, ucp_dt_make_contig(1), 0, &log1, &length);
    ucs_status_ptr_t r2 = post_recv(p, buffer, 10, ucp_dt_make_contig(1),
                                    UCP_STREAM_RECV_FLAG_WAITALL, &log2, &length);
    REQUIRE(r1 != nullptr);
    REQUIRE(r2 != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(r1));
    REQUIRE(!UCS_PTR_IS_ERR(r2));
    ucp_request_param_t cparam{};
    cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    CHECK(p.wait(ucp_ep_close_nbx(p.ep, &cparam)) == UCS_OK);
    p.ep = nullptr;
    CHECK(log1.calls == 1);
    CHECK(log1.status == UCS_ERR_CANCELED);
    CHECK(log2.status == UCS_ERR_CANCELED);
    CHECK(ucp_request_check_status(r1) == UCS_ERR_CANCELED);
    ucp_request_free(r1);
    ucp_request_free(r2);
}
