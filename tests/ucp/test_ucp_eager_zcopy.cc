/*
 * Eager zero-copy between two processes: tag (one and several fragments,
 * sync), active messages and stream at the bcopy/zcopy/rendezvous
 * boundaries, with the thresholds forced through ucp_config_modify and the
 * protocol each send really used read from its request; posix (no
 * am_zcopy) falls back to bcopy. A zcopy send to a peer that does not read
 * completes only once the transport is done with the buffer; iov datatypes
 * go zero-copy when they fit max_iov and by copy otherwise; MPI order holds
 * across zcopy, bcopy and short sends queued behind each other; an ep
 * closed or failed with fragments in flight completes its sends;
 * ucp_ep_print_info shows the zcopy range.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_request.h>
#include <ucp/proto/select.h>

#include <catch2/catch.hpp>

#include <poll.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

using namespace ucp_test;

namespace {

constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);
constexpr uint16_t am_id      = 5;

/* The protocol a send used, from its request: 'z' eager zcopy, 'r'
 * rendezvous (non-sync sends only: it marks them SYNC), 'e' eager by copy. */
char proto_of(void *request)
{
    const uint32_t flags = ucp::request::from_user(request)->flags;
    if (flags & ucp::request_flag::ZCOPY) {
        return 'z';
    }
    return (flags & ucp::request_flag::SYNC) ? 'r' : 'e';
}

char expected_proto(size_t size, bool zcopy_lane, size_t zcopy, size_t rndv)
{
    if (size >= rndv) {
        return 'r';
    }
    return (zcopy_lane && (size >= zcopy)) ? 'z' : 'e';
}

/* Waits for a send made with NO_IMM_CMPL; returns its status and protocol. */
ucs_status_t finish(peer &p, ucs_status_ptr_t request, char *proto)
{
    if (UCS_PTR_IS_ERR(request) || (request == nullptr)) {
        *proto = '?';
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(p.worker);
    }
    *proto = proto_of(request);
    ucp_request_free(request);
    return status;
}

/* Child side: waits for every send, hands the parent their protocols in
 * order, then waits for it to finish checking. */
int finish_and_report(peer &p, const std::vector<ucs_status_ptr_t> &requests, int fd)
{
    std::vector<uint8_t> protos;
    for (ucs_status_ptr_t req : requests) {
        char proto;
        TEST_CHILD_CHECK(finish(p, req, &proto) == UCS_OK);
        protos.push_back(uint8_t(proto));
    }
    TEST_CHILD_CHECK(test::send_blob(fd, protos));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

ucp_request_param_t send_param(ucp_datatype_t dt = ucp_dt_make_contig(1))
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.datatype     = dt;
    return param;
}

/* ---- the transports and thresholds of the boundary tests ---------------- */

struct transport_case {
    const char *tls;
    bool zcopy; /* the AM lane has am_zcopy */
};

const transport_case transports[] = {{"tcp", true}, {"posix,cma", false}};

constexpr size_t zcopy_thresh = 4096;
constexpr size_t rndv_thresh  = 300000;
constexpr size_t tcp_frag     = 32768; /* UCX_TCP_MAX_ZCOPY: several fragments */

const settings boundary_settings = {{"ZCOPY_THRESH", "4096"}, {"RNDV_THRESH", "300000"}};

const size_t boundary_sizes[] = {100,   4095,  4096,  4097,   8191,   8192,   8193,   32767,
                                 32768, 32769, 65536, 131077, 200003, 299999, 300000, 300001};

/* Keeps zcopy fragments small, so messages below rndv_thresh need several. */
struct small_tcp_fragments {
    env_guard env;
    small_tcp_fragments() { env.set("UCX_TCP_MAX_ZCOPY", std::to_string(tcp_frag)); }
};

/* ---- tag ---------------------------------------------------------------- */

uint64_t tag_of(size_t i, bool sync)
{
    return 1000 + 2 * i + (sync ? 1 : 0);
}

/* Child: sends every size, plain and sync, all in flight at once; reports
 * the protocols they used. */
int tag_sender_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with(tls, UCP_FEATURE_TAG, boundary_settings) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<ucs_status_ptr_t> requests;
    for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
        for (bool sync : {false, true}) {
            const size_t size = boundary_sizes[i];
            buffers.emplace_back(size);
            fill_pattern(buffers.back().data(), size, tag_of(i, sync));
            ucp_request_param_t param = send_param();
            const void *buf           = buffers.back().data();
            requests.push_back(sync ?
                                   ucp_tag_send_sync_nbx(p.ep, buf, size, tag_of(i, sync), &param) :
                                   ucp_tag_send_nbx(p.ep, buf, size, tag_of(i, sync), &param));
        }
    }
    return finish_and_report(p, requests, fd);
}

} // namespace

TEST_CASE("eager zcopy: tag sends at the bcopy/zcopy/rndv boundaries", "[ucp_zcopy]")
{
    small_tcp_fragments frags;
    for (const transport_case &tc : transports) {
        for (bool unexpected : {false, true}) {
            INFO("UCX_TLS=" << tc.tls << (unexpected ? ", unexpected" : ", expected"));
            peer p;
            REQUIRE(p.init_with(tc.tls, UCP_FEATURE_TAG, boundary_settings) == UCS_OK);
            const char *tls = tc.tls;
            test::child_process child([tls](int fd) { return tag_sender_child(fd, tls); });
            REQUIRE(p.connect_over(child.fd()));
            const size_t last = std::size(boundary_sizes) - 1;
            if (unexpected) {
                /* Every message arrives (the last as a rendezvous offer)
                 * before any receive is posted. */
                REQUIRE(test::poll_until(
                    [&] {
                    ucp_tag_recv_info_t info;
                    return ucp_tag_probe_nb(p.worker, tag_of(last, true), full_mask, 0, &info) !=
                           nullptr;
                    },
                    [&] { ucp_worker_progress(p.worker); }));
            }
            std::vector<uint8_t> buffer;
            for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
                for (bool sync : {false, true}) {
                    const size_t size = boundary_sizes[i];
                    INFO("size " << size << (sync ? " sync" : ""));
                    buffer.assign(size + 8, 0xee);
                    ucp_tag_recv_info_t info{};
                    REQUIRE(p.recv(buffer.data(), size + 8, tag_of(i, sync), full_mask, &info) ==
                            UCS_OK);
                    CHECK(info.length == size);
                    CHECK(check_pattern(buffer.data(), size, tag_of(i, sync)));
                    CHECK(buffer[size] == 0xee);
                }
            }
            std::vector<uint8_t> protos;
            REQUIRE(test::recv_blob(child.fd(), &protos));
            REQUIRE(protos.size() == 2 * std::size(boundary_sizes));
            for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
                const size_t size = boundary_sizes[i];
                INFO("size " << size);
                const char want = expected_proto(size, tc.zcopy, zcopy_thresh, rndv_thresh);
                CHECK(char(protos[2 * i]) == want);
                /* Sync sends: zcopy or not (both other kinds carry SYNC). */
                CHECK((char(protos[2 * i + 1]) == 'z') == (want == 'z'));
            }
            REQUIRE(test::sync_peer(child.fd()));
            CHECK(child.wait() == 0);
        }
    }
}

/* ---- active messages ---------------------------------------------------- */

namespace {

/* Header lengths: one that fits tcp's 128-byte zcopy header, one that does
 * not (those messages go by copy). */
const size_t am_header_sizes[] = {16, 200};

struct am_message {
    std::vector<uint8_t> header;
    std::vector<uint8_t> data;
    bool done = false;
    bool ok   = true;
};

struct am_inbox {
    ucp_worker_h worker = nullptr;
    std::vector<am_message> messages;
};

void am_data_arrived(void *request, ucs_status_t status, size_t, void *user_data)
{
    auto *msg = static_cast<am_message *>(user_data);
    msg->ok   = (status == UCS_OK);
    msg->done = true;
    ucp_request_free(request);
}

ucs_status_t am_arrived(void *arg, const void *header, size_t header_length, void *data,
                        size_t length, const ucp_am_recv_param_t *param)
{
    auto *inbox = static_cast<am_inbox *>(arg);
    inbox->messages.emplace_back();
    am_message &msg = inbox->messages.back();
    msg.header.assign(static_cast<const uint8_t *>(header),
                      static_cast<const uint8_t *>(header) + header_length);
    msg.data.resize(length);
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        std::memcpy(msg.data.data(), data, length);
        msg.done = true;
        return UCS_OK;
    }
    ucp_request_param_t rparam{};
    rparam.op_attr_mask  = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rparam.cb.recv_am    = am_data_arrived;
    rparam.user_data     = &msg;
    ucs_status_ptr_t req = ucp_am_recv_data_nbx(inbox->worker, data, msg.data.data(), length,
                                                &rparam);
    if (!UCS_PTR_IS_PTR(req) || (req == nullptr)) {
        msg.ok   = !UCS_PTR_IS_ERR(req);
        msg.done = true;
    }
    return UCS_OK;
}

bool set_am_inbox(peer &p, am_inbox *inbox)
{
    inbox->worker = p.worker;
    inbox->messages.reserve(256); /* the rendezvous callbacks keep pointers */
    return ucp_test::set_am_handler(p.worker, am_id, am_arrived, inbox) == UCS_OK;
}

uint64_t am_seed(size_t i, size_t h)
{
    return 5000 + 10 * i + h;
}

int am_sender_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with(tls, UCP_FEATURE_AM, boundary_settings) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<ucs_status_ptr_t> requests;
    for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
        for (size_t h = 0; h < std::size(am_header_sizes); ++h) {
            const size_t size = boundary_sizes[i];
            buffers.emplace_back(am_header_sizes[h]);
            fill_pattern(buffers.back().data(), am_header_sizes[h], am_seed(i, h) + 1);
            const void *header = buffers.back().data();
            buffers.emplace_back(size);
            fill_pattern(buffers.back().data(), size, am_seed(i, h));
            ucp_request_param_t param = send_param();
            requests.push_back(ucp_am_send_nbx(p.ep, am_id, header, am_header_sizes[h],
                                               buffers.back().data(), size, &param));
        }
    }
    return finish_and_report(p, requests, fd);
}

} // namespace

TEST_CASE("eager zcopy: active messages at the bcopy/zcopy/rndv boundaries", "[ucp_zcopy]")
{
    small_tcp_fragments frags;
    for (const transport_case &tc : transports) {
        INFO("UCX_TLS=" << tc.tls);
        peer p;
        REQUIRE(p.init_with(tc.tls, UCP_FEATURE_AM, boundary_settings) == UCS_OK);
        am_inbox inbox;
        REQUIRE(set_am_inbox(p, &inbox));
        const char *tls = tc.tls;
        test::child_process child([tls](int fd) { return am_sender_child(fd, tls); });
        REQUIRE(p.connect_over(child.fd()));
        const size_t count = std::size(boundary_sizes) * std::size(am_header_sizes);
        REQUIRE(test::poll_until(
            [&] {
            if (inbox.messages.size() < count) {
                return false;
            }
            for (const am_message &m : inbox.messages) {
                if (!m.done) {
                    return false;
                }
            }
            return true;
            },
            [&] { ucp_worker_progress(p.worker); }));
        std::vector<uint8_t> protos;
        REQUIRE(test::recv_blob(child.fd(), &protos));
        REQUIRE(protos.size() == count);
        for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
            for (size_t h = 0; h < std::size(am_header_sizes); ++h) {
                const size_t size = boundary_sizes[i];
                INFO("size " << size << ", header " << am_header_sizes[h]);
                const am_message &m = inbox.messages[i * std::size(am_header_sizes) + h];
                CHECK(m.ok);
                CHECK(m.data.size() == size);
                CHECK(check_pattern(m.data.data(), m.data.size(), am_seed(i, h)));
                CHECK(m.header.size() == am_header_sizes[h]);
                CHECK(check_pattern(m.header.data(), m.header.size(), am_seed(i, h) + 1));
                /* A header longer than the transport's inline zcopy header
                 * makes the message go by copy. */
                const bool header_fits = (am_header_sizes[h] < 100);
                CHECK(char(protos[i * std::size(am_header_sizes) + h]) ==
                      expected_proto(size, tc.zcopy && header_fits, zcopy_thresh, rndv_thresh));
            }
        }
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

namespace {

/* UCX_RNDV_THRESH=auto over tcp: an active message that fits one zcopy
 * fragment (4 MiB) goes eagerly, a larger one by rendezvous. */
const size_t am_auto_sizes[] = {100000, 1u << 20, 4u << 20, (4u << 20) + 1, 5u << 20};
const char am_auto_protos[]  = {'z', 'z', 'z', 'r', 'r'};

int am_auto_sender_child(int fd)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with("tcp", UCP_FEATURE_AM, {}) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<uint8_t> protos;
    for (size_t i = 0; i < std::size(am_auto_sizes); ++i) {
        std::vector<uint8_t> data(am_auto_sizes[i]);
        fill_pattern(data.data(), data.size(), 900 + i);
        ucp_request_param_t param = send_param();
        char proto;
        ucs_status_ptr_t req = ucp_am_send_nbx(p.ep, am_id, nullptr, 0, data.data(), data.size(),
                                               &param);
        TEST_CHILD_CHECK(finish(p, req, &proto) == UCS_OK);
        protos.push_back(uint8_t(proto));
    }
    TEST_CHILD_CHECK(test::send_blob(fd, protos));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("eager zcopy: active messages over tcp go eagerly up to one AM fragment", "[ucp_zcopy]")
{
    peer p;
    REQUIRE(p.init_with("tcp", UCP_FEATURE_AM, {}) == UCS_OK);
    am_inbox inbox;
    REQUIRE(set_am_inbox(p, &inbox));
    test::child_process child([](int fd) { return am_auto_sender_child(fd); });
    REQUIRE(p.connect_over(child.fd()));
    std::vector<uint8_t> protos;
    REQUIRE(test::poll_until(
        [&] {
        struct pollfd pfd = {child.fd(), POLLIN, 0};
        return ::poll(&pfd, 1, 0) > 0;
        },
        [&] { ucp_worker_progress(p.worker); }));
    REQUIRE(test::recv_blob(child.fd(), &protos));
    REQUIRE(protos.size() == std::size(am_auto_sizes));
    REQUIRE(inbox.messages.size() == std::size(am_auto_sizes));
    for (size_t i = 0; i < std::size(am_auto_sizes); ++i) {
        INFO("size " << am_auto_sizes[i]);
        CHECK(char(protos[i]) == am_auto_protos[i]);
        const am_message &m = inbox.messages[i];
        CHECK(m.done);
        CHECK(m.ok);
        CHECK(m.data.size() == am_auto_sizes[i]);
        CHECK(check_pattern(m.data.data(), m.data.size(), 900 + i));
    }
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

/* ---- stream ------------------------------------------------------------- */

namespace {

/* One byte sequence of every boundary size in turn. */
size_t stream_total()
{
    size_t total = 0;
    for (size_t size : boundary_sizes) {
        total += size;
    }
    return total;
}

int stream_sender_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with(tls, UCP_FEATURE_STREAM, boundary_settings) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<uint8_t> data(stream_total());
    fill_pattern(data.data(), data.size(), 77);
    std::vector<ucs_status_ptr_t> requests;
    size_t offset = 0;
    for (size_t size : boundary_sizes) {
        ucp_request_param_t param = send_param();
        requests.push_back(ucp_stream_send_nbx(p.ep, data.data() + offset, size, &param));
        offset += size;
    }
    return finish_and_report(p, requests, fd);
}

/* Receives `length` stream bytes (WAITALL) into `buffer`. */
ucs_status_t stream_recv_all(peer &p, uint8_t *buffer, size_t length)
{
    ucp_request_param_t param{};
    param.op_attr_mask   = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags          = UCP_STREAM_RECV_FLAG_WAITALL;
    size_t received      = 0;
    ucs_status_ptr_t req = ucp_stream_recv_nbx(p.ep, buffer, length, &received, &param);
    if (req == nullptr) {
        return (received == length) ? UCS_OK : UCS_ERR_IO_ERROR;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    ucs_status_t status;
    while ((status = ucp_stream_recv_request_test(req, &received)) == UCS_INPROGRESS) {
        ucp_worker_progress(p.worker);
    }
    ucp_request_free(req);
    return ((status == UCS_OK) && (received != length)) ? UCS_ERR_IO_ERROR : status;
}

} // namespace

TEST_CASE("eager zcopy: stream sends at the bcopy/zcopy boundary", "[ucp_zcopy]")
{
    small_tcp_fragments frags;
    for (const transport_case &tc : transports) {
        INFO("UCX_TLS=" << tc.tls);
        peer p;
        REQUIRE(p.init_with(tc.tls, UCP_FEATURE_STREAM, boundary_settings) == UCS_OK);
        const char *tls = tc.tls;
        test::child_process child([tls](int fd) { return stream_sender_child(fd, tls); });
        REQUIRE(p.connect_over(child.fd()));
        std::vector<uint8_t> data(stream_total(), 0);
        REQUIRE(stream_recv_all(p, data.data(), data.size()) == UCS_OK);
        CHECK(check_pattern(data.data(), data.size(), 77));
        std::vector<uint8_t> protos;
        REQUIRE(test::recv_blob(child.fd(), &protos));
        REQUIRE(protos.size() == std::size(boundary_sizes));
        for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
            INFO("size " << boundary_sizes[i]);
            /* Streams go by rendezvous from stream_rndv_min at the earliest. */
            CHECK(char(protos[i]) ==
                  expected_proto(boundary_sizes[i], tc.zcopy, zcopy_thresh,
                                 std::max(rndv_thresh, ucp::proto::stream_rndv_min)));
        }
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

/* ---- completion only when the transport is done ------------------------- */

namespace {

enum class api { TAG, AM, STREAM };

/* More than loopback socket buffers hold: a peer that does not read leaves
 * most of it in the sender's zero-copy queue. */
constexpr size_t big_message = 48u << 20;

const settings eager_only_settings = {{"ZCOPY_THRESH", "4096"}, {"RNDV_THRESH", "inf"}};

uint64_t features_of(api a)
{
    return (a == api::TAG) ? UCP_FEATURE_TAG : (a == api::AM) ? UCP_FEATURE_AM : UCP_FEATURE_STREAM;
}

/* Child receiver: connects, then reads nothing until told, then receives
 * the big message and checks it. */
int lazy_receiver_child(int fd, api a)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with("tcp", features_of(a), eager_only_settings) == UCS_OK);
    am_inbox inbox;
    TEST_CHILD_CHECK((a != api::AM) || set_am_inbox(p, &inbox));
    TEST_CHILD_CHECK(p.connect_over(fd));
    uint8_t go;
    TEST_CHILD_CHECK(test::recv_value(fd, &go)); /* no progress meanwhile */
    std::vector<uint8_t> data(big_message, 0);
    if (a == api::TAG) {
        ucp_tag_recv_info_t info{};
        TEST_CHILD_CHECK(p.recv(data.data(), data.size(), 9, full_mask, &info) == UCS_OK);
        TEST_CHILD_CHECK(info.length == big_message);
    } else if (a == api::STREAM) {
        TEST_CHILD_CHECK(stream_recv_all(p, data.data(), data.size()) == UCS_OK);
    } else {
        TEST_CHILD_CHECK(test::poll_until([&] { return !inbox.messages.empty(); },
                                          [&] { ucp_worker_progress(p.worker); }));
        TEST_CHILD_CHECK(inbox.messages[0].data.size() == big_message);
        data = inbox.messages[0].data;
    }
    TEST_CHILD_CHECK(check_pattern(data.data(), data.size(), 31));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

ucs_status_ptr_t send_big(peer &p, api a, const std::vector<uint8_t> &data)
{
    ucp_request_param_t param = send_param();
    switch (a) {
    case api::TAG:
        return ucp_tag_send_nbx(p.ep, data.data(), data.size(), 9, &param);
    case api::AM:
        return ucp_am_send_nbx(p.ep, am_id, nullptr, 0, data.data(), data.size(), &param);
    default:
        return ucp_stream_send_nbx(p.ep, data.data(), data.size(), &param);
    }
}

} // namespace

TEST_CASE("eager zcopy: a send completes only when the transport is done with it", "[ucp_zcopy]")
{
    for (api a : {api::TAG, api::AM, api::STREAM}) {
        INFO("api " << int(a));
        peer p;
        REQUIRE(p.init_with("tcp", features_of(a), eager_only_settings) == UCS_OK);
        test::child_process child([a](int fd) { return lazy_receiver_child(fd, a); });
        REQUIRE(p.connect_over(child.fd()));
        std::vector<uint8_t> data(big_message);
        fill_pattern(data.data(), data.size(), 31);
        ucs_status_ptr_t req = send_big(p, a, data);
        REQUIRE(UCS_PTR_IS_PTR(req));
        REQUIRE(req != nullptr);
        CHECK(proto_of(req) == 'z');
        /* The peer reads nothing: however long we progress, the transport
         * still sends from our buffer, so the send is not complete. */
        CHECK_FALSE(test::poll_until(
            [&] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
            [&] { ucp_worker_progress(p.worker); }, std::chrono::milliseconds(300)));
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        REQUIRE(test::poll_until([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
                                 [&] { ucp_worker_progress(p.worker); }));
        CHECK(ucp_request_check_status(req) == UCS_OK);
        ucp_request_free(req);
        /* Keep progressing until the child checked the data. */
        REQUIRE(test::poll_until(
            [&] {
            struct pollfd pfd = {child.fd(), POLLIN, 0};
            return ::poll(&pfd, 1, 0) > 0;
            },
            [&] { ucp_worker_progress(p.worker); }));
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

/* ---- iov datatypes ------------------------------------------------------- */

namespace {

/* Entries of the iov sends: one that fits tcp's max_iov (6) with entries
 * split across 32 KiB fragments and an empty one, one that does not. */
std::vector<size_t> iov_layout(bool fits)
{
    if (fits) {
        return {10000, 0, 70001, 1, 33333, 90000};
    }
    return std::vector<size_t>(20, 3000);
}

std::vector<ucp_dt_iov_t> make_iov(std::vector<uint8_t> &data, const std::vector<size_t> &layout)
{
    std::vector<ucp_dt_iov_t> iov;
    size_t offset = 0;
    for (size_t len : layout) {
        iov.push_back({data.data() + offset, len});
        offset += len;
    }
    return iov;
}

size_t layout_total(const std::vector<size_t> &layout)
{
    size_t total = 0;
    for (size_t len : layout) {
        total += len;
    }
    return total;
}

const settings iov_settings = {{"ZCOPY_THRESH", "1024"}, {"RNDV_THRESH", "inf"}};

/* Child: sends the two layouts by tag, active message and stream; reports
 * the protocols. */
int iov_sender_child(int fd)
{
    peer p;
    constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_STREAM;
    TEST_CHILD_CHECK(p.init_with("tcp", features, iov_settings) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<uint8_t> protos;
    for (bool fits : {true, false}) {
        const std::vector<size_t> layout = iov_layout(fits);
        std::vector<uint8_t> data(layout_total(layout));
        fill_pattern(data.data(), data.size(), fits ? 41 : 42);
        std::vector<ucp_dt_iov_t> iov = make_iov(data, layout);
        ucp_request_param_t param     = send_param(ucp_dt_make_iov());
        char proto;
        ucs_status_ptr_t req = ucp_tag_send_nbx(p.ep, iov.data(), iov.size(), 3, &param);
        TEST_CHILD_CHECK(finish(p, req, &proto) == UCS_OK);
        protos.push_back(uint8_t(proto));
        req = ucp_am_send_nbx(p.ep, am_id, nullptr, 0, iov.data(), iov.size(), &param);
        TEST_CHILD_CHECK(finish(p, req, &proto) == UCS_OK);
        protos.push_back(uint8_t(proto));
        req = ucp_stream_send_nbx(p.ep, iov.data(), iov.size(), &param);
        TEST_CHILD_CHECK(finish(p, req, &proto) == UCS_OK);
        protos.push_back(uint8_t(proto));
    }
    TEST_CHILD_CHECK(test::send_blob(fd, protos));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("eager zcopy: iov datatypes within max_iov go zero-copy, longer ones by copy",
          "[ucp_zcopy]")
{
    small_tcp_fragments frags;
    peer p;
    REQUIRE(p.init_with("tcp", UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_STREAM,
                        iov_settings) == UCS_OK);
    am_inbox inbox;
    REQUIRE(set_am_inbox(p, &inbox));
    test::child_process child([](int fd) { return iov_sender_child(fd); });
    REQUIRE(p.connect_over(child.fd()));
    for (bool fits : {true, false}) {
        INFO((fits ? "iov within max_iov" : "iov longer than max_iov"));
        const size_t total  = layout_total(iov_layout(fits));
        const uint64_t seed = fits ? 41 : 42;
        std::vector<uint8_t> buffer(total + 8, 0xee);
        ucp_tag_recv_info_t info{};
        REQUIRE(p.recv(buffer.data(), buffer.size(), 3, full_mask, &info) == UCS_OK);
        CHECK(info.length == total);
        CHECK(check_pattern(buffer.data(), total, seed));
        const size_t am_index = fits ? 0 : 1;
        REQUIRE(test::poll_until([&] { return inbox.messages.size() > am_index; },
                                 [&] { ucp_worker_progress(p.worker); }));
        CHECK(inbox.messages[am_index].data.size() == total);
        CHECK(check_pattern(inbox.messages[am_index].data.data(), total, seed));
        buffer.assign(total, 0);
        REQUIRE(stream_recv_all(p, buffer.data(), total) == UCS_OK);
        CHECK(check_pattern(buffer.data(), total, seed));
    }
    std::vector<uint8_t> protos;
    REQUIRE(test::recv_blob(child.fd(), &protos));
    REQUIRE(protos.size() == 6);
    for (size_t i = 0; i < 3; ++i) {
        INFO("api " << i);
        CHECK(char(protos[i]) == 'z');
        CHECK(char(protos[3 + i]) == 'e');
    }
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

/* ---- MPI order across protocols, through the pending queue --------------- */

namespace {

constexpr size_t order_count = 60;

/* Zcopy, short and bcopy sizes in turn, all with the same tag. */
size_t order_size(size_t i)
{
    return ((i % 3) == 0) ? 200000 + i : ((i % 3) == 1) ? 40 + i : 6000 + i;
}

const settings order_settings = {{"ZCOPY_THRESH", "10000"}, {"RNDV_THRESH", "inf"}};

int order_receiver_child(int fd)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with("tcp", UCP_FEATURE_TAG, order_settings) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    uint8_t go;
    TEST_CHILD_CHECK(test::recv_value(fd, &go)); /* the sender's queues fill meanwhile */
    std::vector<uint8_t> buffer(order_size(0) + order_count);
    for (size_t i = 0; i < order_count; ++i) {
        ucp_tag_recv_info_t info{};
        TEST_CHILD_CHECK(p.recv(buffer.data(), buffer.size(), 4, full_mask, &info) == UCS_OK);
        TEST_CHILD_CHECK(info.length == order_size(i));
        TEST_CHILD_CHECK(check_pattern(buffer.data(), info.length, 600 + i));
    }
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("eager zcopy keeps MPI order with bcopy and short sends queued behind it", "[ucp_zcopy]")
{
    peer p;
    REQUIRE(p.init_with("tcp", UCP_FEATURE_TAG, order_settings) == UCS_OK);
    test::child_process child([](int fd) { return order_receiver_child(fd); });
    REQUIRE(p.connect_over(child.fd()));
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<ucs_status_ptr_t> requests;
    std::string protos;
    for (size_t i = 0; i < order_count; ++i) {
        buffers.emplace_back(order_size(i));
        fill_pattern(buffers.back().data(), buffers.back().size(), 600 + i);
        ucp_request_param_t param = send_param();
        requests.push_back(ucp_tag_send_nbx(p.ep, buffers.back().data(), buffers.back().size(), 4,
                                            &param));
        REQUIRE(UCS_PTR_IS_PTR(requests.back()));
        protos += proto_of(requests.back());
    }
    /* 20 zcopy sends of 200 KB to a peer that reads nothing: some wait. */
    CHECK(ucp_request_check_status(requests.back()) == UCS_INPROGRESS);
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    for (size_t i = 0; i < order_count; ++i) {
        char proto;
        CHECK(finish(p, requests[i], &proto) == UCS_OK);
    }
    for (size_t i = 0; i < order_count; ++i) {
        CHECK(protos[i] == (((i % 3) == 0) ? 'z' : 'e'));
    }
    REQUIRE(test::poll_until(
        [&] {
        struct pollfd pfd = {child.fd(), POLLIN, 0};
        return ::poll(&pfd, 1, 0) > 0;
        },
        [&] { ucp_worker_progress(p.worker); }));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

/* ---- an ep that goes away with fragments in flight ---------------------- */

namespace {

/* Child: connects and then never progresses until the parent is done. */
int idle_child(int fd)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with("tcp", UCP_FEATURE_TAG, eager_only_settings) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    uint8_t done;
    TEST_CHILD_CHECK(test::recv_value(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("eager zcopy sends in flight complete when their ep is closed or its peer dies",
          "[ucp_zcopy]")
{
    for (bool kill_peer : {false, true}) {
        INFO((kill_peer ? "peer killed" : "ep force-closed"));
        peer p;
        REQUIRE(p.init_with("tcp", UCP_FEATURE_TAG, eager_only_settings) == UCS_OK);
        test::child_process child([](int fd) { return idle_child(fd); });
        std::vector<uint8_t> remote;
        REQUIRE(test::send_blob(child.fd(), p.address()));
        REQUIRE(test::recv_blob(child.fd(), &remote));
        ucp_test::ep_errors seen;
        REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, ucp_test::ep_errors::record, &seen) ==
                UCS_OK);
        std::vector<uint8_t> data(big_message);
        ucp_request_param_t param = send_param();
        ucs_status_ptr_t req      = ucp_tag_send_nbx(p.ep, data.data(), data.size(), 1, &param);
        REQUIRE(UCS_PTR_IS_PTR(req));
        REQUIRE(req != nullptr);
        CHECK(proto_of(req) == 'z');
        if (kill_peer) {
            child.kill();
            /* The lost connection fails the fragments still queued. */
            REQUIRE(
                test::poll_until([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
                                 [&] { ucp_worker_progress(p.worker); }));
            CHECK(ucp_request_check_status(req) != UCS_OK);
        } else {
            ucp_request_param_t cparam{};
            cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            CHECK(p.wait(ucp_ep_close_nbx(p.ep, &cparam)) == UCS_OK);
            p.ep = nullptr;
            /* Its lanes are gone: the send completed, canceled. */
            CHECK(ucp_request_check_status(req) == UCS_ERR_CANCELED);
            REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        }
        ucp_request_free(req);
        child.wait();
    }
}

/* ---- ucp_ep_print_info --------------------------------------------------- */

namespace {

std::string ep_info_of(const char *tls, const settings &extra)
{
    peer p;
    if (p.init_with(tls, UCP_FEATURE_TAG, extra) != UCS_OK) {
        return "init failed";
    }
    if (p.connect(p.address()) != UCS_OK) {
        return "connect failed";
    }
    return print_to_string([&](FILE *f) { ucp_ep_print_info(p.ep, f); });
}

} // namespace

TEST_CASE("ucp_ep_print_info shows the eager zcopy range", "[ucp_zcopy]")
{
    small_tcp_fragments frags;
    const std::string tcp = ep_info_of("tcp",
                                       {{"ZCOPY_THRESH", "5000"}, {"RNDV_THRESH", "300000"}});
    INFO(tcp);
    CHECK(tcp.find("5000 .. 32768      eager zcopy on tcp, one fragment") != std::string::npos);
    CHECK(tcp.find("32769 .. 299999     eager zcopy on tcp, fragments of 32768") !=
          std::string::npos);
    /* Active messages: the same ranges, in their own table. */
    const size_t am = tcp.find("am_send, contiguous data");
    REQUIRE(am != std::string::npos);
    CHECK(tcp.find("5000 .. 32768      eager zcopy on tcp, one fragment", am) != std::string::npos);
    CHECK(tcp.find("300000 .. inf        rendezvous", am) != std::string::npos);
    CHECK(tcp.find("eager bcopy, one fragment") != std::string::npos);
    CHECK(tcp.find("300000 .. inf        rendezvous") != std::string::npos);

    const std::string off = ep_info_of("tcp", {{"ZCOPY_THRESH", "inf"}});
    INFO(off);
    CHECK(off.find("eager zcopy on") == std::string::npos);

    const std::string shm = ep_info_of("posix", {{"ZCOPY_THRESH", "5000"}});
    INFO(shm);
    CHECK(shm.find("eager zcopy on") == std::string::npos);
    CHECK(shm.find("posix has no zero-copy active messages") != std::string::npos);
}

/* ---- an md that needs a memory handle ----------------------------------- */

namespace {

/* The eager zcopy threshold ucp_ep_print_info reports. */
size_t printed_zcopy_thresh(const std::string &info)
{
    const std::string key = "eager zcopy from ";
    const size_t at       = info.find(key);
    return (at == std::string::npos) ? 0 : std::stoul(info.substr(at + key.size()));
}

struct fake_zc_scope {
    fake_zc_scope() { fake_zc_enabled = true; }
    ~fake_zc_scope() { fake_zc_enabled = false; }
};

ucs_status_ptr_t send_tag(peer &p, const void *buffer, size_t count, ucp_tag_t tag,
                          ucp_datatype_t dt = ucp_dt_make_contig(1))
{
    ucp_request_param_t param = send_param(dt);
    return ucp_tag_send_nbx(p.ep, buffer, count, tag, &param);
}

ucs_status_ptr_t post_recv(peer &p, void *buffer, size_t length, ucp_tag_t tag)
{
    ucp_request_param_t param{};
    return ucp_tag_recv_nbx(p.worker, buffer, length, tag, full_mask, &param);
}

} // namespace

/* Without the registration cache (see test_ucp_rcache.cc for it): a
 * registration per send, released when the send is done. */
TEST_CASE("eager zcopy registers the send buffer where the md needs a memory handle", "[ucp_zcopy]")
{
    fake_zc_scope scope;
    peer p;
    REQUIRE(p.init_with(fake_zc_tl, UCP_FEATURE_TAG | UCP_FEATURE_STREAM,
                        {{"RCACHE_ENABLE", "no"}}) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    const std::string info = print_to_string([&](FILE *f) { ucp_ep_print_info(p.ep, f); });
    INFO(info);
    REQUIRE(info.find("eager zcopy on ucp_test_zc") != std::string::npos);
    /* auto: the registration cost moves the threshold above tcp's (no memh). */
    const size_t thresh        = printed_zcopy_thresh(info);
    const std::string tcp_info = ep_info_of("tcp", {});
    CHECK(thresh > printed_zcopy_thresh(tcp_info));
    CHECK(printed_zcopy_thresh(tcp_info) > 0);

    const long regs         = fake_zc_registrations;
    const unsigned long bad = fake_zc_bad_memh;
    const size_t size       = std::max<size_t>(thresh, 3 * fake_zc_max_bcopy);

    SECTION("one send: registered while the transport holds it") {
        std::vector<uint8_t> out(size), in(size, 0);
        fill_pattern(out.data(), size, 1);
        ucs_status_ptr_t rreq = post_recv(p, in.data(), size, 1);
        ucs_status_ptr_t sreq = send_tag(p, out.data(), size, 1);
        REQUIRE(UCS_PTR_IS_PTR(sreq));
        REQUIRE(sreq != nullptr);
        CHECK(proto_of(sreq) == 'z');
        CHECK(fake_zc_registrations == regs + 1);
        /* The transport reads the buffer from progress: not done before. */
        CHECK(ucp_request_check_status(sreq) == UCS_INPROGRESS);
        char proto;
        CHECK(finish(p, sreq, &proto) == UCS_OK);
        CHECK(p.wait(rreq) == UCS_OK);
        CHECK(check_pattern(in.data(), size, 1));
        CHECK(fake_zc_registrations == regs);
    }

    SECTION("more sends than the transport queues: pending, in order") {
        constexpr size_t count = 3 * fake_zc_queue_max;
        std::vector<std::vector<uint8_t>> out(count), in(count);
        std::vector<ucs_status_ptr_t> rreqs, sreqs;
        for (size_t i = 0; i < count; ++i) {
            out[i].resize(size + i);
            in[i].assign(size + i, 0);
            fill_pattern(out[i].data(), out[i].size(), 10 + i);
            rreqs.push_back(post_recv(p, in[i].data(), in[i].size(), 2));
        }
        for (size_t i = 0; i < count; ++i) {
            sreqs.push_back(send_tag(p, out[i].data(), out[i].size(), 2));
            REQUIRE(UCS_PTR_IS_PTR(sreqs.back()));
        }
        CHECK(fake_zc_registrations == regs + long(count));
        for (size_t i = 0; i < count; ++i) {
            char proto;
            CHECK(finish(p, sreqs[i], &proto) == UCS_OK);
            CHECK(proto == 'z');
            CHECK(p.wait(rreqs[i]) == UCS_OK);
            CHECK(check_pattern(in[i].data(), in[i].size(), 10 + i));
        }
        CHECK(fake_zc_registrations == regs);
    }

    SECTION("iov data on such an md goes by copy") {
        std::vector<uint8_t> out(size), in(size, 0);
        fill_pattern(out.data(), size, 3);
        const size_t half     = size / 2;
        ucp_dt_iov_t iov[2]   = {{out.data(), half}, {out.data() + half, size - half}};
        ucs_status_ptr_t rreq = post_recv(p, in.data(), size, 3);
        char proto;
        CHECK(finish(p, send_tag(p, iov, 2, 3, ucp_dt_make_iov()), &proto) == UCS_OK);
        CHECK(proto == 'e');
        CHECK(p.wait(rreq) == UCS_OK);
        CHECK(check_pattern(in.data(), size, 3));
        CHECK(fake_zc_registrations == regs);
    }

    SECTION("stream") {
        std::vector<uint8_t> out(size), in(size, 0);
        fill_pattern(out.data(), size, 4);
        ucp_request_param_t param = send_param();
        char proto;
        CHECK(finish(p, ucp_stream_send_nbx(p.ep, out.data(), size, &param), &proto) == UCS_OK);
        CHECK(proto == 'z');
        REQUIRE(stream_recv_all(p, in.data(), size) == UCS_OK);
        CHECK(check_pattern(in.data(), size, 4));
        CHECK(fake_zc_registrations == regs);
    }

    SECTION("force close with sends queued: canceled, registrations released") {
        std::vector<uint8_t> out(size);
        std::vector<ucs_status_ptr_t> sreqs;
        for (size_t i = 0; i < 2 * fake_zc_queue_max; ++i) {
            sreqs.push_back(send_tag(p, out.data(), size, 5));
            REQUIRE(UCS_PTR_IS_PTR(sreqs.back()));
        }
        ucp_request_param_t cparam{};
        cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        CHECK(p.wait(ucp_ep_close_nbx(p.ep, &cparam)) == UCS_OK);
        p.ep = nullptr;
        for (ucs_status_ptr_t req : sreqs) {
            CHECK(ucp_request_check_status(req) == UCS_ERR_CANCELED);
            ucp_request_free(req);
        }
        CHECK(fake_zc_registrations == regs);
    }
    CHECK(fake_zc_bad_memh == bad);
}
