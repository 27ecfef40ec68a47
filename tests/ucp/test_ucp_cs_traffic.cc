/*
 * Traffic on client-server eps (a listener's accepted ep and the client's
 * ep created from a socket address): stream both ways in random pieces,
 * active messages whose reply ep must be the application's ep, tag sends
 * that need an answer (sync, rendezvous). Each side sends at once, the
 * server right after accepting and the client while still connecting, so
 * the server's first messages (on shared memory) overtake its answer on
 * the bootstrap socket. Each worker must end up with one ep per
 * connection: the one the application holds.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/stream/stream.h>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

using namespace ucp_test;

namespace {

const char *const transports[] = {"posix,cma", "sysv", "tcp"};
constexpr uint64_t features    = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM;
constexpr ucp_tag_t full_mask  = ~ucp_tag_t(0);

/* ---- connections (listening, accept_request, connect_client: ucp_test_util.h) */

/* The worker's eps, internal ones included. */
std::vector<ucp_ep *> eps_of(ucp_worker_h worker)
{
    std::vector<ucp_ep *> eps;
    worker->ep_ids.for_each([&](unsigned, ucp_ep *ep) { eps.push_back(ep); });
    return eps;
}

/* Progresses `worker` (and `other`, when in one process) until `req` is done. */
ucs_status_t finish(ucs_status_ptr_t req, ucp_worker_h worker, ucp_worker_h other = nullptr)
{
    if ((req == nullptr) || UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    const bool done =
        test::poll_until([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
                         [&] {
        ucp_worker_progress(worker);
        if (other != nullptr) {
            ucp_worker_progress(other);
        }
        });
    if (!done) {
        return UCS_ERR_TIMED_OUT;
    }
    ucs_status_t status = ucp_request_check_status(req);
    ucp_request_free(req);
    return status;
}

/* ---- stream in random pieces -------------------------------------------- */

std::vector<size_t> random_pieces(uint64_t seed, size_t total)
{
    std::mt19937_64 rng(seed);
    std::vector<size_t> pieces;
    for (size_t done = 0; done < total;) {
        size_t size = 1 + rng() % (((rng() % 4) == 0) ? 70000 : 500);
        size        = std::min(size, total - done);
        pieces.push_back(size);
        done += size;
    }
    return pieces;
}

/* Posts the sends of `data` in the pieces of `seed`; the requests to wait for. */
bool post_stream(ucp_ep_h ep, const std::vector<uint8_t> &data, uint64_t seed,
                 std::vector<ucs_status_ptr_t> *requests)
{
    size_t offset = 0;
    for (size_t size : random_pieces(seed, data.size())) {
        ucp_request_param_t param{};
        ucs_status_ptr_t req = ucp_stream_send_nbx(ep, data.data() + offset, size, &param);
        if (UCS_PTR_IS_ERR(req)) {
            return false;
        }
        if (req != nullptr) {
            requests->push_back(req);
        }
        offset += size;
    }
    return true;
}

bool wait_all(std::vector<ucs_status_ptr_t> *requests, ucp_worker_h worker,
              ucp_worker_h other = nullptr)
{
    bool ok = true;
    for (ucs_status_ptr_t req : *requests) {
        ok &= (finish(req, worker, other) == UCS_OK);
    }
    requests->clear();
    return ok;
}

/*
 * Receives `total` bytes from `ep` in the pieces of `seed`: receives with
 * and without WAITALL and ucp_stream_recv_data_nb. Returns "" or what
 * went wrong.
 */
std::string recv_stream(ucp_worker_h worker, ucp_ep_h ep, size_t total, uint64_t seed,
                        std::vector<uint8_t> *out, ucp_worker_h other = nullptr)
{
    out->assign(total, 0);
    std::mt19937_64 rng(seed);
    size_t offset       = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (offset < total) {
        if (std::chrono::steady_clock::now() > deadline) {
            return "timed out after " + std::to_string(offset) + " bytes";
        }
        const size_t room = std::min<size_t>(1 + rng() % 20000, total - offset);
        if ((rng() % 5) == 0) {
            size_t length         = 0;
            ucs_status_ptr_t data = ucp_stream_recv_data_nb(ep, &length);
            if (UCS_PTR_IS_ERR(data)) {
                return "recv_data_nb failed";
            }
            if (data == nullptr) {
                ucp_worker_progress(worker);
                if (other != nullptr) {
                    ucp_worker_progress(other);
                }
                continue;
            }
            if ((length == 0) || (length > total - offset)) {
                return "recv_data_nb returned a bad length";
            }
            std::memcpy(out->data() + offset, data, length);
            ucp_stream_data_release(ep, data);
            offset += length;
            continue;
        }
        const bool waitall = (rng() % 2) == 0;
        ucp_request_param_t param{};
        param.op_attr_mask   = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags          = waitall ? UCP_STREAM_RECV_FLAG_WAITALL : 0;
        size_t got           = 0;
        ucs_status_ptr_t req = ucp_stream_recv_nbx(ep, out->data() + offset, room, &got, &param);
        if (UCS_PTR_IS_ERR(req)) {
            return "a stream receive failed at once";
        }
        if (req != nullptr) {
            ucs_status_t status;
            const bool done = test::poll_until(
                [&] {
                status = ucp_stream_recv_request_test(req, &got);
                return status != UCS_INPROGRESS;
                },
                [&] {
                ucp_worker_progress(worker);
                if (other != nullptr) {
                    ucp_worker_progress(other);
                }
            });
            if (!done) {
                return "a stream receive never completed (" + std::to_string(offset) + " of " +
                       std::to_string(total) + " bytes received)";
            }
            ucp_request_free(req);
            if (status != UCS_OK) {
                return std::string("a stream receive failed: ") + ucs_status_string(status);
            }
        }
        if ((got == 0) || (got > room) || (waitall && (got != room))) {
            return "a stream receive completed with " + std::to_string(got) + " of " +
                   std::to_string(room);
        }
        offset += got;
    }
    return "";
}

/* Polls until the worker reports an ep with stream data; that ep, or nullptr. */
ucp_stream_poll_ep_t poll_ready(ucp_worker_h worker, ucp_worker_h other = nullptr)
{
    ucp_stream_poll_ep_t eps[4] = {};
    ssize_t n                   = 0;
    test::poll_until(
        [&] {
        n = ucp_stream_worker_poll(worker, eps, 4, 0);
        return n != 0;
        },
        [&] {
        ucp_worker_progress(worker);
        if (other != nullptr) {
            ucp_worker_progress(other);
        }
    });
    return (n == 1) ? eps[0] : ucp_stream_poll_ep_t{};
}

constexpr size_t client_bytes = 700001; /* client -> server */
constexpr size_t server_bytes = 900007; /* server -> client */
constexpr size_t tail_bytes   = 333;

int stream_client(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init(tls, features) == UCS_OK);
    uint16_t port;
    TEST_CHILD_CHECK(test::recv_value(fd, &port));
    int mark = 0;
    TEST_CHILD_CHECK(connect_client(c.worker, port, &mark, &c.ep) == UCS_OK);

    /* While connecting: a receive posted and everything sent. */
    std::vector<uint8_t> first(100);
    size_t got = 0;
    ucp_request_param_t rparam{};
    rparam.op_attr_mask        = UCP_OP_ATTR_FIELD_FLAGS;
    rparam.flags               = UCP_STREAM_RECV_FLAG_WAITALL;
    ucs_status_ptr_t first_req = ucp_stream_recv_nbx(c.ep, first.data(), first.size(), &got,
                                                     &rparam);
    TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(first_req));
    std::vector<uint8_t> out(client_bytes);
    fill_pattern(out.data(), out.size(), 71);
    std::vector<ucs_status_ptr_t> sends;
    TEST_CHILD_CHECK(post_stream(c.ep, out, 72, &sends));

    TEST_CHILD_CHECK(finish(first_req, c.worker) == UCS_OK);
    std::vector<uint8_t> rest;
    const std::string error = recv_stream(c.worker, c.ep, server_bytes - first.size(), 73, &rest);
    if (!error.empty()) {
        std::fprintf(stderr, "client: %s\n", error.c_str());
        return 1;
    }
    first.insert(first.end(), rest.begin(), rest.end());
    TEST_CHILD_CHECK(check_pattern(first.data(), first.size(), 81));
    TEST_CHILD_CHECK(wait_all(&sends, c.worker));

    /* A tail from the server: ucp_stream_worker_poll names our ep. */
    TEST_CHILD_CHECK(test::sync_peer(fd));
    const ucp_stream_poll_ep_t ready = poll_ready(c.worker);
    TEST_CHILD_CHECK(ready.ep == c.ep);
    TEST_CHILD_CHECK(ready.user_data == &mark);
    std::vector<uint8_t> tail;
    TEST_CHILD_CHECK(recv_stream(c.worker, c.ep, tail_bytes, 74, &tail).empty());
    TEST_CHILD_CHECK(check_pattern(tail.data(), tail.size(), 82));

    /* One ep to the server: the one we created. */
    TEST_CHILD_CHECK(eps_of(c.worker) == std::vector<ucp_ep *>{c.ep});
    tail.assign(tail_bytes, 0);
    fill_pattern(tail.data(), tail.size(), 75);
    TEST_CHILD_CHECK(post_stream(c.ep, tail, 76, &sends));
    TEST_CHILD_CHECK(wait_all(&sends, c.worker));
    uint64_t done;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("client-server eps carry stream data both ways, sent while connecting",
          "[ucp_cs_traffic]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer s;
        REQUIRE(s.init(tls, features) == UCS_OK);
        listening l;
        REQUIRE(l.listen(s.worker) == UCS_OK);
        test::child_process child([tls](int fd) { return stream_client(fd, tls); });
        REQUIRE(test::send_value(child.fd(), l.port()));
        REQUIRE(test::poll_until([&] { return !l.requests.empty(); },
                                 [&] { ucp_worker_progress(s.worker); }));
        int mark = 0;
        REQUIRE(accept_request(s.worker, l.requests[0], &mark, &s.ep) == UCS_OK);

        /* At once: this data overtakes our answer to the client on shm. */
        std::vector<uint8_t> out(server_bytes);
        fill_pattern(out.data(), out.size(), 81);
        std::vector<ucs_status_ptr_t> sends;
        REQUIRE(post_stream(s.ep, out, 82, &sends));
        std::vector<uint8_t> in;
        CHECK(recv_stream(s.worker, s.ep, client_bytes, 83, &in) == "");
        CHECK(check_pattern(in.data(), in.size(), 71));
        CHECK(wait_all(&sends, s.worker));

        REQUIRE(test::sync_peer(child.fd()));
        std::vector<uint8_t> tail(tail_bytes);
        fill_pattern(tail.data(), tail.size(), 82);
        REQUIRE(post_stream(s.ep, tail, 84, &sends));
        CHECK(wait_all(&sends, s.worker));
        const ucp_stream_poll_ep_t ready = poll_ready(s.worker);
        CHECK(ready.ep == s.ep);
        CHECK(ready.user_data == &mark);
        CHECK(recv_stream(s.worker, s.ep, tail_bytes, 85, &tail) == "");
        CHECK(check_pattern(tail.data(), tail.size(), 75));
        CHECK(eps_of(s.worker) == std::vector<ucp_ep *>{s.ep});
        REQUIRE(test::send_value(child.fd(), uint64_t(1)));
        CHECK(child.wait() == 0);
    }
}

namespace {

/* ---- active messages and tag sends --------------------------------------- */

constexpr uint16_t ping_id = 3;
constexpr uint16_t pong_id = 4;
constexpr size_t big_tag   = (1u << 20) + 3; /* rendezvous on every transport */

/* Records the active messages of one id and answers pings on their reply ep. */
struct am_log {
    unsigned count             = 0;
    ucp_ep_h reply_ep          = nullptr;
    bool had_reply_field       = false;
    uint64_t value             = 0;
    bool answer                = false; /* answer with a pong on reply_ep */
    ucs_status_t answer_status = UCS_OK;
    std::vector<ucs_status_ptr_t> requests;

    static ucs_status_t handler(void *arg, const void *, size_t, void *data, size_t length,
                                const ucp_am_recv_param_t *param)
    {
        auto *self = static_cast<am_log *>(arg);
        ++self->count;
        self->had_reply_field = param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP;
        self->reply_ep        = self->had_reply_field ? param->reply_ep : nullptr;
        if (length == sizeof(uint64_t)) {
            std::memcpy(&self->value, data, sizeof(uint64_t));
        }
        if (self->answer && (self->reply_ep != nullptr)) {
            static const uint64_t pong = 0x90e6;
            ucp_request_param_t sparam{};
            sparam.op_attr_mask  = UCP_OP_ATTR_FIELD_FLAGS;
            sparam.flags         = UCP_AM_SEND_FLAG_REPLY;
            ucs_status_ptr_t req = ucp_am_send_nbx(self->reply_ep, pong_id, nullptr, 0, &pong,
                                                   sizeof(pong), &sparam);
            if (UCS_PTR_IS_ERR(req)) {
                self->answer_status = UCS_PTR_STATUS(req);
            } else if (req != nullptr) {
                self->requests.push_back(req);
            }
        }
        return UCS_OK;
    }

    ucs_status_t install(ucp_worker_h worker, uint16_t id)
    {
        return ucp_test::set_am_handler(worker, id, handler, this);
    }
};

ucs_status_ptr_t send_ping(ucp_ep_h ep, const uint64_t *value)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    return ucp_am_send_nbx(ep, ping_id, nullptr, 0, value, sizeof(*value), &param);
}

/* Client: pings while connecting; answers the server's ping through the
 * reply ep, which must be our ep; receives the server's tag sends. */
int am_client(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init(tls, features) == UCS_OK);
    am_log pings, pongs;
    pings.answer = true;
    TEST_CHILD_CHECK(pings.install(c.worker, ping_id) == UCS_OK);
    TEST_CHILD_CHECK(pongs.install(c.worker, pong_id) == UCS_OK);
    uint16_t port;
    TEST_CHILD_CHECK(test::recv_value(fd, &port));
    TEST_CHILD_CHECK(connect_client(c.worker, port, nullptr, &c.ep) == UCS_OK);

    ucp_request_param_t param{};
    uint64_t small = 0;
    std::vector<uint8_t> big(big_tag);
    ucs_status_ptr_t rsmall = ucp_tag_recv_nbx(c.worker, &small, sizeof(small), 11, full_mask,
                                               &param);
    ucs_status_ptr_t rbig   = ucp_tag_recv_nbx(c.worker, big.data(), big.size(), 12, full_mask,
                                               &param);
    const uint64_t value    = 0xc11e;
    ucs_status_ptr_t ping   = send_ping(c.ep, &value);
    TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(ping));

    TEST_CHILD_CHECK(finish(rsmall, c.worker) == UCS_OK);
    TEST_CHILD_CHECK(small == 0x5a11);
    TEST_CHILD_CHECK(finish(rbig, c.worker) == UCS_OK);
    TEST_CHILD_CHECK(check_pattern(big.data(), big.size(), 91));
    TEST_CHILD_CHECK(finish(ping, c.worker) == UCS_OK);
    TEST_CHILD_CHECK(test::poll_until([&] { return (pings.count > 0) && (pongs.count > 0); },
                                      [&] { ucp_worker_progress(c.worker); }));
    TEST_CHILD_CHECK(pings.count == 1);
    TEST_CHILD_CHECK(pings.had_reply_field);
    TEST_CHILD_CHECK(pings.reply_ep == c.ep);
    TEST_CHILD_CHECK(pings.value == 0x5e4e);
    TEST_CHILD_CHECK(pings.answer_status == UCS_OK);
    TEST_CHILD_CHECK(pongs.count == 1);
    TEST_CHILD_CHECK(pongs.reply_ep == c.ep);
    TEST_CHILD_CHECK(pongs.value == 0x90e6);
    TEST_CHILD_CHECK(wait_all(&pings.requests, c.worker));
    TEST_CHILD_CHECK(eps_of(c.worker) == std::vector<ucp_ep *>{c.ep});
    TEST_CHILD_CHECK(test::sync_peer(fd));
    uint64_t done;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("client-server eps: active-message reply eps and tag sends that need answers",
          "[ucp_cs_traffic]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer s;
        REQUIRE(s.init(tls, features) == UCS_OK);
        am_log pings, pongs;
        pings.answer = true;
        REQUIRE(pings.install(s.worker, ping_id) == UCS_OK);
        REQUIRE(pongs.install(s.worker, pong_id) == UCS_OK);
        listening l;
        REQUIRE(l.listen(s.worker) == UCS_OK);
        test::child_process child([tls](int fd) { return am_client(fd, tls); });
        REQUIRE(test::send_value(child.fd(), l.port()));
        REQUIRE(test::poll_until([&] { return !l.requests.empty(); },
                                 [&] { ucp_worker_progress(s.worker); }));
        REQUIRE(accept_request(s.worker, l.requests[0], nullptr, &s.ep) == UCS_OK);

        /* At once, before the client can know us: each needs its reply ep. */
        const uint64_t value = 0x5e4e, small = 0x5a11;
        std::vector<uint8_t> big(big_tag);
        fill_pattern(big.data(), big.size(), 91);
        ucp_request_param_t param{};
        ucs_status_ptr_t ping  = send_ping(s.ep, &value);
        ucs_status_ptr_t ssync = ucp_tag_send_sync_nbx(s.ep, &small, sizeof(small), 11, &param);
        ucs_status_ptr_t sbig  = ucp_tag_send_nbx(s.ep, big.data(), big.size(), 12, &param);
        CHECK(finish(ping, s.worker) == UCS_OK);
        CHECK(finish(ssync, s.worker) == UCS_OK);
        CHECK(finish(sbig, s.worker) == UCS_OK);
        REQUIRE(test::poll_until([&] { return (pings.count > 0) && (pongs.count > 0); },
                                 [&] { ucp_worker_progress(s.worker); }));
        CHECK(pings.count == 1);
        CHECK(pings.reply_ep == s.ep);
        CHECK(pings.value == 0xc11e);
        CHECK(pings.answer_status == UCS_OK);
        CHECK(pongs.count == 1);
        CHECK(pongs.had_reply_field);
        CHECK(pongs.reply_ep == s.ep);
        CHECK(wait_all(&pings.requests, s.worker));
        CHECK(eps_of(s.worker) == std::vector<ucp_ep *>{s.ep});
        REQUIRE(test::sync_peer(child.fd()));
        REQUIRE(test::send_value(child.fd(), uint64_t(1)));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("a client-server ep and an ep by address to one peer each keep their own stream",
          "[ucp_cs_traffic]")
{
    for (const char *tls : {"posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer s, c;
        REQUIRE(s.init(tls, features) == UCS_OK);
        REQUIRE(c.init(tls, features) == UCS_OK);
        am_log pings;
        REQUIRE(pings.install(c.worker, ping_id) == UCS_OK);

        /* s reaches c by address first: its wireup request makes an ep of
         * c's nobody holds yet, paired with s.ep, which collects its stream. */
        REQUIRE(s.connect(c.address()) == UCS_OK);
        std::vector<uint8_t> before(5000);
        fill_pattern(before.data(), before.size(), 101);
        std::vector<ucs_status_ptr_t> sends;
        REQUIRE(post_stream(s.ep, before, 102, &sends));
        CHECK(wait_all(&sends, s.worker, c.worker));
        ucp_ep *internal = nullptr;
        ssize_t reported = 0;
        REQUIRE(test::poll_until(
            [&] {
            for (ucp_ep *ep : eps_of(c.worker)) {
                auto *se = static_cast<ucp::stream_ep *>(ep->stream);
                if ((se != nullptr) && !se->segs.empty()) {
                    internal = ep;
                }
            }
            return internal != nullptr;
            },
            [&] {
            ucp_worker_progress(c.worker);
            ucp_worker_progress(s.worker);
            /* An ep the application does not hold is not reported. */
            ucp_stream_poll_ep_t eps[2];
            reported += ucp_stream_worker_poll(c.worker, eps, 2, 0);
        }));
        CHECK(reported == 0);
        CHECK(!(internal->flags & ucp::ep_flag::USER));
        CHECK(internal->remote_id == s.ep->local_id);
        CHECK(s.ep->remote_id == internal->local_id);
        ucp_stream_poll_ep_t eps[2];

        /* Then c connects to s's listener: a pair of eps of its own. */
        listening l;
        REQUIRE(l.listen(s.worker) == UCS_OK);
        int mark = 0;
        REQUIRE(connect_client(c.worker, l.port(), &mark, &c.ep) == UCS_OK);
        REQUIRE(test::poll_until([&] { return !l.requests.empty(); },
                                 [&] {
            ucp_worker_progress(c.worker);
            ucp_worker_progress(s.worker);
        }));
        ucp_ep_h accepted;
        REQUIRE(accept_request(s.worker, l.requests[0], nullptr, &accepted) == UCS_OK);
        std::vector<uint8_t> after(70000);
        fill_pattern(after.data(), after.size(), 103);
        REQUIRE(post_stream(accepted, after, 104, &sends));
        CHECK(wait_all(&sends, s.worker, c.worker));
        CHECK(c.ep != internal);
        CHECK(c.ep->remote_id == accepted->local_id);

        const ucp_stream_poll_ep_t ready = poll_ready(c.worker, s.worker);
        CHECK(ready.ep == c.ep);
        CHECK(ready.user_data == &mark);
        std::vector<uint8_t> in;
        REQUIRE(recv_stream(c.worker, c.ep, after.size(), 105, &in, s.worker) == "");
        CHECK(check_pattern(in.data(), after.size(), 103));
        CHECK(ucp_stream_worker_poll(c.worker, eps, 2, 0) == 0);

        /* s.ep's active messages give the ep paired with it as reply ep. */
        const uint64_t value = 7;
        CHECK(finish(send_ping(s.ep, &value), s.worker, c.worker) == UCS_OK);
        REQUIRE(test::poll_until([&] { return pings.count > 0; },
                                 [&] {
            ucp_worker_progress(c.worker);
            ucp_worker_progress(s.worker);
        }));
        CHECK(pings.reply_ep == internal);

        /* c's first ep to s by address adopts that ep, with its stream. */
        ucp_ep_h by_address;
        ucp_ep_params_t params{};
        params.field_mask                    = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        const std::vector<uint8_t> s_address = s.address();
        params.address = reinterpret_cast<const ucp_address_t *>(s_address.data());
        REQUIRE(ucp_ep_create(c.worker, &params, &by_address) == UCS_OK);
        CHECK(by_address == internal);
        CHECK((internal->flags & ucp::ep_flag::USER) != 0);
        in.clear();
        REQUIRE(recv_stream(c.worker, by_address, before.size(), 106, &in, s.worker) == "");
        CHECK(check_pattern(in.data(), before.size(), 101));

        ucp_request_param_t cparam{};
        cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        CHECK(finish(ucp_ep_close_nbx(accepted, &cparam), s.worker, c.worker) == UCS_OK);
        CHECK(finish(ucp_ep_close_nbx(by_address, &cparam), s.worker, c.worker) == UCS_OK);
    }
}
