/*
 * Active messages end to end: v2 (header, reply ep, kept data, rendezvous
 * with ucp_am_recv_data_nbx, dropped rendezvous) and legacy (MPICH's use:
 * ucp_am_send_nb with contig and generic datatypes, callbacks only outside
 * the call) between two processes over every transport and in loopback;
 * unknown ids, malformed wire headers and bad arguments.
 */
#include "generic_dt_util.h"
#include "scoped_env.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/am/am.h>
#include <ucp/api/ucp_ext.h>
#include <ucp/proto/wire.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

using namespace ucp_test;

namespace {

const char *const transports[] = {"posix,cma", "sysv", "tcp"};

constexpr uint16_t data_id    = 7;
constexpr uint16_t reply_id   = 8;
constexpr uint16_t unknown_id = 99;

/* Around every protocol boundary: short, one fragment (8 KiB segments),
 * several fragments, eager zcopy on tcp, rendezvous (16 KiB on shm; on tcp
 * a message that fits one 4 MiB zcopy fragment goes eagerly, so there only
 * UCP_AM_SEND_FLAG_RNDV makes one). */
const size_t am_sizes[] = {0, 1, 8, 100, 4000, 8100, 8200, 20000, 65536, 200003, (1u << 20) + 5};
const size_t header_sizes[] = {0, 1, 16, 255, ucp::max_am_header};

/* What message i of a test run is: every pair of size class and flags. */
struct am_plan {
    size_t size;
    size_t header_length;
    uint32_t flags;
};

am_plan plan_of(size_t i)
{
    am_plan p;
    p.size          = am_sizes[i % std::size(am_sizes)];
    p.header_length = header_sizes[(i / 3) % std::size(header_sizes)];
    p.flags         = ((i % 3) == 0) ? UCP_AM_SEND_FLAG_REPLY : 0;
    if ((i % 5) == 1) {
        p.flags |= UCP_AM_SEND_FLAG_EAGER;
    } else if ((i % 5) == 2) {
        p.flags |= UCP_AM_SEND_FLAG_RNDV;
    }
    return p;
}

constexpr size_t am_count = 3 * 5 * std::size(am_sizes);

uint64_t header_seed(size_t i)
{
    return 100000 + i;
}

/* ---- the v2 receiver ---------------------------------------------------- */

struct kept_data {
    size_t index;
    void *data;
    size_t length;
    bool rndv;
};

struct am_receiver;

struct rndv_slot {
    am_receiver *owner = nullptr;
    std::vector<uint8_t> buffer;
    int state     = 0; /* 0 waiting, 1 received, -1 failed */
    size_t length = 0;
};

struct am_receiver {
    explicit am_receiver(size_t count) : slots(count), reply_values(count) {}

    ucp_worker_h worker    = nullptr;
    size_t next            = 0;
    size_t content_errors  = 0;
    size_t reply_errors    = 0;
    size_t protocol_errors = 0;
    size_t rndv_seen       = 0;
    size_t rndv_dropped    = 0;
    size_t data_flag_seen  = 0;
    bool expect_rndv       = true;
    std::vector<rndv_slot> slots;
    std::vector<uint64_t> reply_values;
    std::vector<kept_data> kept;
    std::vector<void *> requests;
};

void rndv_received(void *request, ucs_status_t status, size_t length, void *user_data)
{
    (void)request;
    auto *slot   = static_cast<rndv_slot *>(user_data);
    slot->state  = (status == UCS_OK) ? 1 : -1;
    slot->length = length;
}

/* Starts pulling rendezvous data of message i into its slot. */
void start_rndv_recv(am_receiver *r, size_t i, void *desc, size_t length)
{
    rndv_slot &slot = r->slots[i];
    slot.owner      = r;
    slot.buffer.assign(length + 1, 0xee);
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_RECV_INFO;
    param.cb.recv_am       = rndv_received;
    param.user_data        = &slot;
    param.recv_info.length = &slot.length;
    ucs_status_ptr_t req   = ucp_am_recv_data_nbx(r->worker, desc, slot.buffer.data(), length,
                                                  &param);
    if (req == nullptr) {
        slot.state = 1;
    } else if (UCS_PTR_IS_ERR(req)) {
        slot.state = -1;
    } else {
        r->requests.push_back(req);
    }
}

ucs_status_t v2_handler(void *arg, const void *header, size_t header_length, void *data,
                        size_t length, const ucp_am_recv_param_t *param)
{
    auto *r         = static_cast<am_receiver *>(arg);
    const size_t i  = r->next++;
    const am_plan p = plan_of(i);
    if ((header_length != p.header_length) || (length != p.size) ||
        ((header_length != 0) &&
         !check_pattern(static_cast<const uint8_t *>(header), header_length, header_seed(i)))) {
        ++r->content_errors;
    }
    const bool has_reply = param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP;
    if (has_reply != bool(p.flags & UCP_AM_SEND_FLAG_REPLY) ||
        (has_reply && (param->reply_ep == nullptr))) {
        ++r->reply_errors;
    } else if (has_reply) {
        r->reply_values[i] = i;
        ucp_request_param_t sparam{};
        ucs_status_ptr_t req = ucp_am_send_nbx(param->reply_ep, reply_id, nullptr, 0,
                                               &r->reply_values[i], sizeof(uint64_t), &sparam);
        if (UCS_PTR_IS_ERR(req)) {
            ++r->reply_errors;
        } else if (req != nullptr) {
            r->requests.push_back(req);
        }
    }

    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ++r->rndv_seen;
        if ((p.flags & UCP_AM_SEND_FLAG_EAGER) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA)) {
            ++r->protocol_errors;
        }
        switch (i % 4) {
        case 0: /* fetch inside the handler, done with it */
            start_rndv_recv(r, i, data, length);
            return UCS_OK;
        case 1: /* fetch inside, and say so by keeping it */
            start_rndv_recv(r, i, data, length);
            return UCS_INPROGRESS;
        case 2: /* fetch after the handler */
            r->kept.push_back({i, data, length, true});
            return UCS_INPROGRESS;
        default: /* not wanted: dropped now or released later */
            ++r->rndv_dropped;
            if ((i % 8) == 3) {
                return UCS_OK;
            }
            r->kept.push_back({i, data, length, true});
            return UCS_INPROGRESS;
        }
    }

    if ((length != 0) && !check_pattern(static_cast<uint8_t *>(data), length, i)) {
        ++r->content_errors;
    }
    if ((p.flags & UCP_AM_SEND_FLAG_RNDV) && r->expect_rndv && (length != 0)) {
        ++r->protocol_errors; /* a forced rendezvous of this size went eagerly */
    }
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) && ((i % 2) == 0)) {
        ++r->data_flag_seen;
        r->kept.push_back({i, data, length, false});
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

/* After every handler ran: verify and hand back what was kept. */
void process_kept(am_receiver &r)
{
    for (const kept_data &k : r.kept) {
        if (k.rndv && ((k.index % 4) == 2)) {
            start_rndv_recv(&r, k.index, k.data, k.length);
        } else if (k.rndv) {
            ucp_am_data_release(r.worker, k.data);
        } else {
            /* Still intact although many messages arrived since. */
            if ((k.length != 0) &&
                !check_pattern(static_cast<uint8_t *>(k.data), k.length, k.index)) {
                ++r.content_errors;
            }
            ucp_am_data_release(r.worker, k.data);
        }
    }
    r.kept.clear();
}

bool requests_done(am_receiver &r)
{
    for (void *&req : r.requests) {
        if ((req != nullptr) && (ucp_request_check_status(req) != UCS_INPROGRESS)) {
            ucp_request_free(req);
            req = nullptr;
        }
    }
    return std::all_of(r.requests.begin(), r.requests.end(),
                       [](void *req) { return req == nullptr; });
}

/* ---- the sender (child) ------------------------------------------------- */

struct reply_log {
    std::vector<int> seen;
    size_t errors = 0;
};

ucs_status_t reply_handler(void *arg, const void *, size_t, void *data, size_t length,
                           const ucp_am_recv_param_t *)
{
    auto *log = static_cast<reply_log *>(arg);
    uint64_t index;
    if ((length != sizeof(index))) {
        ++log->errors;
        return UCS_OK;
    }
    std::memcpy(&index, data, sizeof(index));
    if (index >= log->seen.size()) {
        ++log->errors;
    } else {
        ++log->seen[index];
    }
    return UCS_OK;
}

/* Connects to the parent only: the parent answers through the ep its
 * worker makes for us when our wireup arrives. */
bool connect_to_parent(peer &p, int fd)
{
    std::vector<uint8_t> remote;
    return test::recv_blob(fd, &remote) && (p.connect(remote) == UCS_OK);
}

bool wait_all(peer &p, std::vector<void *> &requests, ucs_status_t *first_error)
{
    *first_error = UCS_OK;
    for (void *req : requests) {
        ucs_status_t status = p.wait(req);
        if ((status != UCS_OK) && (*first_error == UCS_OK)) {
            *first_error = status;
        }
    }
    requests.clear();
    return *first_error == UCS_OK;
}

int v2_sender_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_AM) == UCS_OK);
    reply_log replies;
    replies.seen.assign(am_count, 0);
    TEST_CHILD_CHECK(ucp_test::set_am_handler(p.worker, reply_id, reply_handler, &replies) ==
                     UCS_OK);
    TEST_CHILD_CHECK(connect_to_parent(p, fd));

    std::vector<std::vector<uint8_t>> headers(am_count), buffers(am_count);
    std::vector<void *> requests;
    size_t expected_replies = 0;
    for (size_t i = 0; i < am_count; ++i) {
        const am_plan plan = plan_of(i);
        headers[i].resize(plan.header_length);
        fill_pattern(headers[i].data(), plan.header_length, header_seed(i));
        buffers[i].resize(std::max<size_t>(plan.size, 1));
        fill_pattern(buffers[i].data(), plan.size, i);
        ucp_request_param_t param{};
        param.op_attr_mask   = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags          = plan.flags;
        ucs_status_ptr_t req = ucp_am_send_nbx(p.ep, data_id, headers[i].data(), plan.header_length,
                                               buffers[i].data(), plan.size, &param);
        TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(req));
        if (req != nullptr) {
            requests.push_back(req);
        }
        expected_replies += (plan.flags & UCP_AM_SEND_FLAG_REPLY) ? 1 : 0;
    }
    /* Dropped and released rendezvous messages complete the send too. */
    ucs_status_t first_error;
    TEST_CHILD_CHECK(wait_all(p, requests, &first_error));
    TEST_CHILD_CHECK(test::poll_until(
        [&] {
        return size_t(std::count(replies.seen.begin(), replies.seen.end(), 1)) == expected_replies;
        },
        [&] { ucp_worker_progress(p.worker); }));
    for (size_t i = 0; i < am_count; ++i) {
        TEST_CHILD_CHECK(replies.seen[i] == ((plan_of(i).flags & UCP_AM_SEND_FLAG_REPLY) ? 1 : 0));
    }
    TEST_CHILD_CHECK(replies.errors == 0);
    TEST_CHILD_CHECK(test::send_value(fd, uint64_t(1)));
    uint64_t done;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &done));
    return 0;
}

bool has_rndv(const char *tls)
{
    return std::strcmp(tls, "sysv") != 0; /* sysv alone has no get_zcopy lane */
}

/* Every size class, header and flag from a child over `tls`: contents,
 * replies and rendezvous fetches checked. */
void check_v2_exchange(const char *tls)
{
    {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_AM) == UCS_OK);
        am_receiver r(am_count);
        r.worker      = p.worker;
        r.expect_rndv = has_rndv(tls);
        REQUIRE(ucp_test::set_am_handler(p.worker, data_id, v2_handler, &r) == UCS_OK);
        test::child_process child([tls](int fd) { return v2_sender_child(fd, tls); });
        REQUIRE(test::send_blob(child.fd(), p.address()));

        REQUIRE(test::poll_until([&] { return r.next == am_count; },
                                 [&] { ucp_worker_progress(p.worker); }));
        process_kept(r);
        REQUIRE(test::poll_until([&] { return requests_done(r); },
                                 [&] { ucp_worker_progress(p.worker); }));

        CHECK(r.content_errors == 0);
        CHECK(r.reply_errors == 0);
        CHECK(r.protocol_errors == 0);
        CHECK(r.data_flag_seen > 0); /* reassembled messages can be kept */
        if (has_rndv(tls)) {
            CHECK(r.rndv_seen > 0);
            CHECK(r.rndv_dropped > 0);
        }
        size_t fetched = 0;
        for (size_t i = 0; i < am_count; ++i) {
            const rndv_slot &slot = r.slots[i];
            if (slot.owner == nullptr) {
                continue;
            }
            INFO("message " << i << " of " << plan_of(i).size << " bytes");
            CHECK(slot.state == 1);
            CHECK(slot.length == plan_of(i).size);
            CHECK(check_pattern(slot.buffer.data(), plan_of(i).size, i));
            CHECK(slot.buffer[plan_of(i).size] == 0xee);
            ++fetched;
        }
        if (has_rndv(tls)) {
            CHECK(fetched > 0);
        }
        uint64_t sent;
        REQUIRE(p.recv_value_progress(child.fd(), &sent));
        REQUIRE(test::send_value(child.fd(), uint64_t(1)));
        CHECK(child.wait() == 0);
    }
}

} // namespace

TEST_CASE("v2 active messages of every size class with header, reply ep and rendezvous", "[ucp_am]")
{
    for (const char *tls : transports) {
        check_v2_exchange(tls);
    }
}

/* Rendezvous offers with a user header and keys of two mds (the sender's
 * buffer on both adapters; ucp/tag/rndv_keys.cc), pulled over both. */
TEST_CASE("v2 active messages over two verbs adapters", "[ucp_rc_verbs]")
{
    UCP_TEST_SKIP_WITHOUT_RC_VERBS();
    test::scoped_env devices("VERBS_EMU_DEVICES", "2");
    test::scoped_env chunk("UCX_MIN_RNDV_CHUNK_SIZE", "4096");
    check_v2_exchange("rc_verbs,tcp");
}

/* ---- legacy API, the way MPICH's ch4 uses it ------------------------------ */

namespace {

/* Callbacks must run outside the call that started the send. */
struct legacy_send_log {
    bool in_call  = false;
    size_t inside = 0;
    size_t calls  = 0;
    size_t errors = 0;
};

legacy_send_log g_send_log;

void legacy_send_cb(void *request, ucs_status_t status)
{
    (void)request;
    if (g_send_log.in_call) {
        ++g_send_log.inside;
    }
    if (status != UCS_OK) {
        ++g_send_log.errors;
    }
    ++g_send_log.calls;
}

constexpr size_t legacy_count = 2 * std::size(am_sizes) * 2;

struct legacy_plan {
    size_t size;
    bool generic;
    bool reply;
};

legacy_plan legacy_plan_of(size_t i)
{
    return {am_sizes[i % std::size(am_sizes)], ((i / std::size(am_sizes)) % 2) == 1, (i % 2) == 0};
}

struct legacy_receiver {
    ucp_worker_h worker = nullptr;
    size_t next         = 0;
    size_t errors       = 0;
    size_t kept_count   = 0;
    std::vector<kept_data> kept;
    std::vector<uint64_t> reply_values = std::vector<uint64_t>(legacy_count);
    std::vector<void *> requests;
};

ucs_status_t legacy_handler(void *arg, void *data, size_t length, ucp_ep_h reply_ep, unsigned flags)
{
    auto *r                = static_cast<legacy_receiver *>(arg);
    const size_t i         = r->next++;
    const legacy_plan plan = legacy_plan_of(i);
    if ((length != plan.size) ||
        ((length != 0) && !check_pattern(static_cast<uint8_t *>(data), length, i)) ||
        ((reply_ep != nullptr) != plan.reply)) {
        ++r->errors;
    }
    if (reply_ep != nullptr) {
        r->reply_values[i]   = i;
        ucs_status_ptr_t req = ucp_am_send_nb(reply_ep, reply_id, &r->reply_values[i],
                                              sizeof(uint64_t), ucp_dt_make_contig(1), nullptr, 0);
        if (UCS_PTR_IS_ERR(req)) {
            ++r->errors;
        } else if (req != nullptr) {
            r->requests.push_back(req);
        }
    }
    if ((flags & UCP_CB_PARAM_FLAG_DATA) && (i % 2 == 1)) {
        r->kept.push_back({i, data, length, false});
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

ucs_status_t legacy_reply_handler(void *arg, void *data, size_t length, ucp_ep_h, unsigned)
{
    auto *log = static_cast<reply_log *>(arg);
    uint64_t index;
    if (length != sizeof(index)) {
        ++log->errors;
        return UCS_OK;
    }
    std::memcpy(&index, data, sizeof(index));
    if (index < log->seen.size()) {
        ++log->seen[index];
    } else {
        ++log->errors;
    }
    return UCS_OK;
}

int legacy_sender_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_AM) == UCS_OK);
    reply_log replies;
    replies.seen.assign(legacy_count, 0);
    TEST_CHILD_CHECK(ucp_worker_set_am_handler(p.worker, reply_id, legacy_reply_handler, &replies,
                                               UCP_AM_FLAG_WHOLE_MSG) == UCS_OK);
    TEST_CHILD_CHECK(connect_to_parent(p, fd));
    const ucp_datatype_t generic = make_identity_generic();
    TEST_CHILD_CHECK(generic != 0);

    std::vector<std::vector<uint8_t>> buffers(legacy_count);
    std::vector<void *> requests;
    size_t expected_replies = 0;
    g_send_log              = {};
    for (size_t i = 0; i < legacy_count; ++i) {
        const legacy_plan plan = legacy_plan_of(i);
        buffers[i].resize(std::max<size_t>(plan.size, 1));
        fill_pattern(buffers[i].data(), plan.size, i);
        g_send_log.in_call   = true;
        ucs_status_ptr_t req = ucp_am_send_nb(p.ep, data_id, buffers[i].data(), plan.size,
                                              plan.generic ? generic : ucp_dt_make_contig(1),
                                              legacy_send_cb, plan.reply ? UCP_AM_SEND_REPLY : 0);
        g_send_log.in_call   = false;
        TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(req));
        if (req != nullptr) {
            requests.push_back(req);
        }
        expected_replies += plan.reply ? 1 : 0;
    }
    const size_t returned = requests.size();
    ucs_status_t first_error;
    TEST_CHILD_CHECK(wait_all(p, requests, &first_error));
    /* Exactly the requests returned got a callback, none inside a call. */
    TEST_CHILD_CHECK(g_send_log.calls == returned);
    TEST_CHILD_CHECK(g_send_log.inside == 0);
    TEST_CHILD_CHECK(g_send_log.errors == 0);
    TEST_CHILD_CHECK(g_generic.packs > 0);
    TEST_CHILD_CHECK(test::poll_until(
        [&] {
        return size_t(std::count(replies.seen.begin(), replies.seen.end(), 1)) == expected_replies;
        },
        [&] { ucp_worker_progress(p.worker); }));
    TEST_CHILD_CHECK(replies.errors == 0);
    ucp_dt_destroy(generic);
    TEST_CHILD_CHECK(test::send_value(fd, uint64_t(1)));
    uint64_t done;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("legacy active messages with contig and generic datatypes (MPICH style)", "[ucp_am]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_AM) == UCS_OK);
        legacy_receiver r;
        r.worker = p.worker;
        REQUIRE(ucp_worker_set_am_handler(p.worker, data_id, legacy_handler, &r,
                                          UCP_AM_FLAG_WHOLE_MSG) == UCS_OK);
        test::child_process child([tls](int fd) { return legacy_sender_child(fd, tls); });
        REQUIRE(test::send_blob(child.fd(), p.address()));
        REQUIRE(test::poll_until([&] { return r.next == legacy_count; },
                                 [&] { ucp_worker_progress(p.worker); }));
        CHECK(r.errors == 0);
        CHECK(!r.kept.empty()); /* multi-fragment messages come with DATA */
        for (const kept_data &k : r.kept) {
            CHECK(check_pattern(static_cast<uint8_t *>(k.data), k.length, k.index));
            ucp_am_data_release(p.worker, k.data);
        }
        uint64_t sent;
        REQUIRE(p.recv_value_progress(child.fd(), &sent));
        for (void *req : r.requests) {
            CHECK(p.wait(req) == UCS_OK);
        }
        REQUIRE(test::send_value(child.fd(), uint64_t(1)));
        CHECK(child.wait() == 0);
    }
}

/* ---- one process ---------------------------------------------------------- */

namespace {

/* Records every message a loopback handler gets. */
struct loop_log {
    std::vector<size_t> lengths;
    std::vector<uint64_t> attrs;
    std::vector<bool> intact;
    std::vector<void *> kept; /* kept data or rendezvous descriptor */
    size_t misaligned = 0;
    size_t alignment  = 1;
    bool keep         = false;
};

ucs_status_t loop_handler(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    auto *log        = static_cast<loop_log *>(arg);
    const uint64_t i = log->lengths.size();
    log->lengths.push_back(length);
    log->attrs.push_back(param->recv_attr);
    const bool header_ok = (header_length == sizeof(i)) &&
                           (std::memcmp(header, &i, sizeof(i)) == 0);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        log->intact.push_back(header_ok);
        log->kept.push_back(data);
        return UCS_INPROGRESS;
    }
    if ((length != 0) && (reinterpret_cast<uintptr_t>(data) % log->alignment != 0)) {
        ++log->misaligned;
    }
    log->intact.push_back(header_ok && check_pattern(static_cast<uint8_t *>(data), length, i));
    if (log->keep && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA)) {
        log->kept.push_back(data);
        return UCS_INPROGRESS;
    }
    log->kept.push_back(nullptr);
    return UCS_OK;
}

/* A worker on `tls` with an ep to itself and the given am_alignment. */
void loopback(peer &p, const char *tls, size_t am_alignment)
{
    ucp_config_t *config;
    REQUIRE(ucp_config_read(nullptr, nullptr, &config) == UCS_OK);
    REQUIRE(ucp_config_modify(config, "TLS", tls) == UCS_OK);
    ucp_params_t params{};
    params.field_mask   = UCP_PARAM_FIELD_FEATURES;
    params.features     = UCP_FEATURE_AM | UCP_FEATURE_STREAM;
    ucs_status_t status = ucp_init(&params, config, &p.context);
    ucp_config_release(config);
    REQUIRE(status == UCS_OK);
    ucp_worker_params_t wparams{};
    wparams.field_mask   = UCP_WORKER_PARAM_FIELD_AM_ALIGNMENT;
    wparams.am_alignment = am_alignment;
    REQUIRE(ucp_worker_create(p.context, &wparams, &p.worker) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
}

} // namespace

TEST_CASE("persistent data, am_alignment and rendezvous in loopback", "[ucp_am]")
{
    const size_t count = std::size(am_sizes);
    for (const char *tls : {"self", "posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        loopback(p, tls, 64);
        loop_log log;
        log.alignment = 64;
        log.keep      = true;
        REQUIRE(ucp_test::set_am_handler(p.worker, data_id, loop_handler, &log,
                                         UCP_AM_FLAG_PERSISTENT_DATA) == UCS_OK);
        std::vector<std::vector<uint8_t>> buffers(count);
        std::vector<uint64_t> headers(count);
        std::vector<void *> requests;
        for (size_t i = 0; i < count; ++i) {
            buffers[i].resize(am_sizes[i] + 1);
            fill_pattern(buffers[i].data(), am_sizes[i], i);
            headers[i] = i;
            ucp_request_param_t param{};
            if (i == count - 1) {
                /* At least one rendezvous on every transport. */
                param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
                param.flags        = UCP_AM_SEND_FLAG_RNDV;
            }
            ucs_status_ptr_t req = ucp_am_send_nbx(p.ep, data_id, &headers[i], sizeof(uint64_t),
                                                   buffers[i].data(), am_sizes[i], &param);
            REQUIRE(!UCS_PTR_IS_ERR(req));
            if (req != nullptr) {
                requests.push_back(req);
            }
        }
        REQUIRE(test::poll_until([&] { return log.lengths.size() == count; },
                                 [&] { ucp_worker_progress(p.worker); }));
        CHECK(log.misaligned == 0);
        size_t fetched = 0;
        for (size_t i = 0; i < count; ++i) {
            INFO("size " << am_sizes[i]);
            CHECK(log.lengths[i] == am_sizes[i]);
            CHECK(log.intact[i]);
            REQUIRE(log.kept[i] != nullptr);
            if (!(log.attrs[i] & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
                /* Persistent: kept until now, intact after later messages. */
                CHECK((log.attrs[i] & UCP_AM_RECV_ATTR_FLAG_DATA) != 0);
                CHECK(check_pattern(static_cast<uint8_t *>(log.kept[i]), am_sizes[i], i));
                ucp_am_data_release(p.worker, log.kept[i]);
                continue;
            }
            /* A kept rendezvous descriptor, fetched now into an iov. */
            std::vector<uint8_t> out(am_sizes[i]);
            const size_t half   = out.size() / 2;
            ucp_dt_iov_t iov[2] = {{out.data(), half}, {out.data() + half, out.size() - half}};
            ucp_request_param_t param{};
            param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
            param.datatype     = ucp_dt_make_iov();
            CHECK(p.wait(ucp_am_recv_data_nbx(p.worker, log.kept[i], iov, 2, &param)) == UCS_OK);
            CHECK(check_pattern(out.data(), out.size(), i));
            ++fetched;
        }
        CHECK(fetched > 0);
        for (void *req : requests) {
            CHECK(p.wait(req) == UCS_OK);
        }
    }
}

TEST_CASE("legacy handler gets rendezvous data whole; v2 handler drops unfetched data", "[ucp_am]")
{
    for (const char *tls : {"self", "posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        loopback(p, tls, 1);
        legacy_receiver r;
        r.worker = p.worker;
        REQUIRE(ucp_worker_set_am_handler(p.worker, data_id, legacy_handler, &r, 0) == UCS_OK);
        /* A v2 rendezvous send to the legacy handler: pulled before it runs. */
        const size_t size  = (1u << 20) + 5;
        const size_t index = 2 * std::size(am_sizes) - 1; /* that size, no reply */
        REQUIRE(legacy_plan_of(index).size == size);
        REQUIRE(!legacy_plan_of(index).reply);
        std::vector<uint8_t> data(size);
        r.next = index;
        fill_pattern(data.data(), size, index);
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_AM_SEND_FLAG_RNDV;
        CHECK(p.wait(ucp_am_send_nbx(p.ep, data_id, nullptr, 0, data.data(), size, &param)) ==
              UCS_OK);
        REQUIRE(test::poll_until([&] { return r.next == index + 1; },
                                 [&] { ucp_worker_progress(p.worker); }));
        CHECK(r.errors == 0);
        REQUIRE(r.kept.size() == 1); /* pulled into a descriptor: DATA */
        CHECK(check_pattern(static_cast<uint8_t *>(r.kept[0].data), size, index));
        ucp_am_data_release(p.worker, r.kept[0].data);
        r.kept.clear();

        /* A v2 handler that neither fetches nor keeps: the send completes. */
        loop_log log;
        CHECK(r.kept.empty());
        REQUIRE(ucp_test::set_am_handler(
                    p.worker, data_id,
                    [](void *arg, const void *, size_t, void *, size_t length,
                       const ucp_am_recv_param_t *prm) {
            auto *l = static_cast<loop_log *>(arg);
            l->lengths.push_back(length);
            l->attrs.push_back(prm->recv_attr);
            return UCS_OK;
                    },
                    &log) == UCS_OK);
        CHECK(p.wait(ucp_am_send_nbx(p.ep, data_id, nullptr, 0, data.data(), size, &param)) ==
              UCS_OK);
        REQUIRE(log.lengths.size() == 1);
        CHECK(log.lengths[0] == size);
        if (std::strcmp(tls, "self") != 0) {
            CHECK((log.attrs[0] & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0);
        }
    }
}

/* ---- unknown ids, malformed headers, bad arguments ----------------------- */

namespace {

int unknown_id_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_AM) == UCS_OK);
    TEST_CHILD_CHECK(connect_to_parent(p, fd));
    std::vector<uint8_t> data(300000);
    fill_pattern(data.data(), data.size(), 1);
    const size_t sizes[] = {10, 20000, 300000};
    for (size_t size : sizes) {
        for (uint32_t flags : {uint32_t(UCP_AM_SEND_FLAG_EAGER), uint32_t(UCP_AM_SEND_FLAG_RNDV)}) {
            ucp_request_param_t param{};
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = flags;
            /* Completes (an unknown id's rendezvous is refused), never hangs. */
            ucs_status_t status = p.wait(ucp_am_send_nbx(p.ep, unknown_id, nullptr, 0, data.data(),
                                                         size, &param));
            TEST_CHILD_CHECK((status == UCS_OK) || (status == UCS_ERR_INVALID_PARAM));
        }
    }
    uint64_t marker = 0x1234;
    ucp_request_param_t param{};
    TEST_CHILD_CHECK(p.wait(ucp_am_send_nbx(p.ep, data_id, nullptr, 0, &marker, sizeof(marker),
                                            &param)) == UCS_OK);
    uint64_t done;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("active messages to an unknown id are logged and dropped", "[ucp_am]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        log_capture capture;
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_AM) == UCS_OK);
        std::vector<uint64_t> got;
        REQUIRE(ucp_test::set_am_handler(
                    p.worker, data_id,
                    [](void *arg, const void *, size_t, void *data, size_t length,
                       const ucp_am_recv_param_t *) {
            uint64_t v = 0;
            std::memcpy(&v, data, std::min(length, sizeof(v)));
            static_cast<std::vector<uint64_t> *>(arg)->push_back(v);
            return UCS_OK;
                    },
                    &got) == UCS_OK);
        test::child_process child([tls](int fd) { return unknown_id_child(fd, tls); });
        REQUIRE(test::send_blob(child.fd(), p.address()));
        REQUIRE(test::poll_until([&] { return !got.empty(); },
                                 [&] { ucp_worker_progress(p.worker); }));
        CHECK(got == std::vector<uint64_t>{0x1234});
        REQUIRE(test::send_value(child.fd(), uint64_t(1)));
        CHECK(child.wait() == 0);
        CHECK(capture.text().find("id 99") != std::string::npos);
    }
}

TEST_CASE("malformed active-message headers are dropped", "[ucp_am]")
{
    peer p;
    loopback(p, "self", 1);
    loop_log log;
    REQUIRE(ucp_test::set_am_handler(p.worker, data_id, loop_handler, &log) == UCS_OK);
    log_capture capture;

    std::vector<uint8_t> msg(1024, 0);
    auto put_hdr = [&](uint16_t id, uint8_t flags, uint32_t header_length) {
        ucp::wire::am_hdr hdr{id, flags, 0, header_length};
        std::memcpy(msg.data(), &hdr, sizeof(hdr));
    };
    for (size_t length = 0; length < sizeof(ucp::wire::am_hdr); ++length) {
        CHECK(ucp::am_single_handler(p.worker, msg.data(), length, 0) == UCS_OK);
    }
    put_hdr(data_id, 0, 100); /* header longer than the message */
    CHECK(ucp::am_single_handler(p.worker, msg.data(), 50, 0) == UCS_OK);
    put_hdr(data_id, 0, ucp::max_am_header + 1);
    CHECK(ucp::am_single_handler(p.worker, msg.data(), msg.size(), 0) == UCS_OK);
    put_hdr(data_id, ucp::wire::am_hdr_flag::REPLY, 0); /* no uuid after it */
    CHECK(ucp::am_single_handler(p.worker, msg.data(), sizeof(ucp::wire::am_hdr) + 4, 0) == UCS_OK);
    put_hdr(data_id, ucp::wire::am_hdr_flag::REPLY, 0); /* a uuid and ep nobody knows */
    CHECK(ucp::am_single_handler(p.worker, msg.data(), 64, 0) == UCS_OK);
    CHECK(p.worker->dropped_bad_ep_ids == 1);

    ucp::wire::am_first_hdr first{{data_id, 0, 0, 0}, 1, 2, 10, 0}; /* fragment > total */
    std::memcpy(msg.data(), &first, sizeof(first));
    CHECK(ucp::am_first_handler(p.worker, msg.data(), sizeof(first) + 20, 0) == UCS_OK);
    first.am.header_length = 5000;
    std::memcpy(msg.data(), &first, sizeof(first));
    CHECK(ucp::am_first_handler(p.worker, msg.data(), sizeof(first) + 20, 0) == UCS_OK);
    CHECK(ucp::am_first_handler(p.worker, msg.data(), 3, 0) == UCS_OK);

    /* A first fragment, then middles outside the message and of no message. */
    first = {{data_id, 0, 0, 0}, 1, 3, 100, 0};
    std::memcpy(msg.data(), &first, sizeof(first));
    CHECK(ucp::am_first_handler(p.worker, msg.data(), sizeof(first) + 40, 0) == UCS_OK);
    ucp::wire::eager_middle_hdr middle{1, 3, 90};
    std::memcpy(msg.data(), &middle, sizeof(middle));
    CHECK(ucp::am_middle_handler(p.worker, msg.data(), sizeof(middle) + 20, 0) == UCS_OK);
    middle = {1, 4, 0};
    std::memcpy(msg.data(), &middle, sizeof(middle));
    CHECK(ucp::am_middle_handler(p.worker, msg.data(), sizeof(middle) + 20, 0) == UCS_OK);
    CHECK(ucp::am_middle_handler(p.worker, msg.data(), 5, 0) == UCS_OK);

    ucp::wire::am_rts_hdr rts{};
    rts.am          = {data_id, 0, 0, 0};
    rts.rkey_length = 1000; /* longer than the message */
    std::memcpy(msg.data(), &rts, sizeof(rts));
    CHECK(ucp::am_rts_handler(p.worker, msg.data(), sizeof(rts) + 10, 0) == UCS_OK);
    rts.rkey_length = 0;
    std::memset(rts.md_name, 'x', sizeof(rts.md_name)); /* no terminating NUL */
    std::memcpy(msg.data(), &rts, sizeof(rts));
    CHECK(ucp::am_rts_handler(p.worker, msg.data(), sizeof(rts), 0) == UCS_OK);
    CHECK(ucp::am_rts_handler(p.worker, msg.data(), 10, 0) == UCS_OK);

    for (int i = 0; i < 100; ++i) {
        ucp_worker_progress(p.worker);
    }
    CHECK(log.lengths.empty());
    CHECK(capture.text().find("malformed") != std::string::npos);
    CHECK(capture.text().find("not an ep of ours to it (stale or forged)") != std::string::npos);
}

TEST_CASE("active-message calls refuse bad arguments", "[ucp_am]")
{
    peer p;
    loopback(p, "self", 1);
    log_capture capture;
    uint8_t byte = 0;
    ucp_request_param_t param{};
    uint8_t header[ucp::max_am_header + 1] = {};

    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(nullptr, 1, nullptr, 0, &byte, 1, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep, 1, nullptr, 0, &byte, 1, nullptr)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep, 70000, nullptr, 0, &byte, 1, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep, 1, header, sizeof(header), &byte, 1, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep, 1, nullptr, 4, &byte, 1, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep, 1, nullptr, 0, nullptr, 1, &param)) ==
          UCS_ERR_INVALID_PARAM);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_RNDV;
    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep, 1, nullptr, 0, &byte, 1, &param)) ==
          UCS_ERR_INVALID_PARAM);
    param.flags = 1u << 10;
    CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep, 1, nullptr, 0, &byte, 1, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_send_nb(p.ep, 1, &byte, 1, ucp_dt_make_contig(0), nullptr, 0)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_send_nb(p.ep, 1, &byte, 1, ucp_dt_make_contig(1), nullptr,
                                        1u << 7)) == UCS_ERR_INVALID_PARAM);

    CHECK(ucp_worker_set_am_handler(nullptr, 1, nullptr, nullptr, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_set_am_handler(p.worker, 1, nullptr, nullptr, 1u << 5) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_set_am_recv_handler(p.worker, nullptr) == UCS_ERR_INVALID_PARAM);
    ucp_am_handler_param_t hparam{};
    hparam.field_mask = UCP_AM_HANDLER_PARAM_FIELD_CB;
    CHECK(ucp_worker_set_am_recv_handler(p.worker, &hparam) == UCS_ERR_INVALID_PARAM);
    hparam.field_mask = UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ID;
    hparam.id         = 1u << 20;
    CHECK(ucp_worker_set_am_recv_handler(p.worker, &hparam) == UCS_ERR_INVALID_PARAM);
    hparam.id = 3;
    CHECK(ucp_worker_set_am_recv_handler(p.worker, &hparam) == UCS_OK); /* clears */

    /* Pointers that are no descriptor: refused, no crash. The lookup reads
     * the descriptor header in front of the data: `data` leaves room for it
     * inside the buffer. */
    alignas(64) uint8_t fake[sizeof(ucp::am_desc) + 256] = {};
    uint8_t *data = fake + (sizeof(ucp::am_desc) + 63) / 64 * 64; /* aligned */
    ucp_request_param_t rparam{};
    CHECK(UCS_PTR_STATUS(ucp_am_recv_data_nbx(p.worker, data, &byte, 1, &rparam)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(UCS_PTR_STATUS(ucp_am_recv_data_nbx(p.worker, nullptr, &byte, 1, &rparam)) ==
          UCS_ERR_INVALID_PARAM);
    ucp_am_data_release(p.worker, data);
    ucp_am_data_release(p.worker, fake + 3);
    CHECK(capture.text().find("not active message data") != std::string::npos);
}

TEST_CASE("active-message send completion: immediate, NO_IMM_CMPL, request memory", "[ucp_am]")
{
    peer p;
    loopback(p, "self", 1);
    size_t received = 0;
    REQUIRE(ucp_test::set_am_handler(
                p.worker, data_id,
                [](void *arg, const void *, size_t, void *, size_t, const ucp_am_recv_param_t *) {
        ++*static_cast<size_t *>(arg);
        return UCS_OK;
                },
                &received) == UCS_OK);

    struct cb_log {
        int calls = 0;
    } log;
    uint64_t value = 3;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = [](void *, ucs_status_t, void *user_data) {
        ++static_cast<cb_log *>(user_data)->calls;
    };
    param.user_data = &log;
    /* Done at once: NULL and no callback. */
    CHECK(ucp_am_send_nbx(p.ep, data_id, nullptr, 0, &value, sizeof(value), &param) == nullptr);
    CHECK(log.calls == 0);
    /* NO_IMM_CMPL: a completed request, callback run. */
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    void *req = ucp_am_send_nbx(p.ep, data_id, &value, sizeof(value), &value, sizeof(value),
                                &param);
    REQUIRE(req != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    CHECK(ucp_request_check_status(req) == UCS_OK);
    CHECK(log.calls == 1);
    ucp_request_free(req);
    REQUIRE(test::poll_until([&] { return received == 2; },
                             [&] { ucp_worker_progress(p.worker); }));
}

namespace {

/* Counts messages and their total size by handler. */
struct id_log {
    unsigned count      = 0;
    size_t bytes        = 0;
    bool rndv           = false;
    ucp_worker_h worker = nullptr;
};

ucs_status_t id_log_handler(void *arg, const void *, size_t, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    auto *log = static_cast<id_log *>(arg);
    ++log->count;
    log->bytes += length;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        log->rndv = true;
        ucp_am_data_release(log->worker, data);
    }
    return UCS_OK;
}

ucs_status_t set_handler_32(ucp_worker_h worker, unsigned id, id_log *log)
{
    ucp_am_handler_param_t param{};
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG;
    param.id  = id;
    param.cb  = id_log_handler;
    param.arg = log;
    return ucp_worker_set_am_recv_handler(worker, &param);
}

} // namespace

TEST_CASE("layered active-message ids reach only their own handlers", "[ucp_am]")
{
    for (const char *tls : {"self", "posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        loopback(p, tls, 1);
        id_log app, layered;
        app.worker = layered.worker = p.worker;
        const unsigned layered_id   = UCP_EXT_AM_ID_LAYERED + 7;
        REQUIRE(set_handler_32(p.worker, 7, &app) == UCS_OK);
        REQUIRE(set_handler_32(p.worker, layered_id, &layered) == UCS_OK);
        /* Past the layered range, and just before it past 16 bits: refused. */
        id_log none;
        CHECK(set_handler_32(p.worker, UCP_EXT_AM_ID_LAYERED + UCP_EXT_AM_ID_LAYERED_COUNT,
                             &none) == UCS_ERR_INVALID_PARAM);
        uint64_t value = 1;
        ucp_request_param_t param{};
        CHECK(UCS_PTR_STATUS(ucp_am_send_nbx(p.ep,
                                             UCP_EXT_AM_ID_LAYERED + UCP_EXT_AM_ID_LAYERED_COUNT,
                                             nullptr, 0, &value, sizeof(value), &param)) ==
              UCS_ERR_INVALID_PARAM);
        /* Short, with a header, and rendezvous, to each id. */
        std::vector<uint8_t> big(300000, 3);
        uint64_t header = 5;
        std::vector<void *> requests;
        for (unsigned id : {7u, layered_id}) {
            requests.push_back(ucp_am_send_nbx(p.ep, id, nullptr, 0, &value, sizeof(value),
                                               &param));
            requests.push_back(ucp_am_send_nbx(p.ep, id, &header, sizeof(header), &value,
                                               sizeof(value), &param));
            ucp_request_param_t rndv{};
            rndv.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            rndv.flags        = UCP_AM_SEND_FLAG_RNDV;
            requests.push_back(ucp_am_send_nbx(p.ep, id, nullptr, 0, big.data(), big.size(),
                                               &rndv));
        }
        REQUIRE(test::poll_until([&] { return (app.count == 3) && (layered.count == 3); },
                                 [&] { ucp_worker_progress(p.worker); }));
        for (void *req : requests) {
            CHECK(p.wait(static_cast<ucs_status_ptr_t>(req)) == UCS_OK);
        }
        CHECK(app.bytes == 2 * sizeof(value) + big.size());
        CHECK(layered.bytes == app.bytes);
        CHECK(app.rndv);
        CHECK(layered.rndv);
    }
}

TEST_CASE("worker callbacks run from progress when scheduled", "[ucp_am]")
{
    peer p;
    loopback(p, "self", 1);
    struct state {
        unsigned runs       = 0;
        unsigned again      = 0; /* schedule itself this many more times */
        ucp_worker_h worker = nullptr;
        unsigned id         = 0;
    } s;
    s.worker = p.worker;
    auto cb  = [](void *arg) -> unsigned {
        auto *st = static_cast<state *>(arg);
        ++st->runs;
        if (st->again > 0) {
            --st->again;
            ucp_worker_callback_schedule(st->worker, st->id);
        }
        return 1;
    };
    REQUIRE(ucp_worker_callback_add(p.worker, cb, &s, &s.id) == UCS_OK);
    ucp_worker_progress(p.worker);
    CHECK(s.runs == 0); /* registered, not scheduled */
    CHECK(ucp_worker_callback_schedule(p.worker, s.id) == UCS_OK);
    CHECK(ucp_worker_callback_schedule(p.worker, s.id) == UCS_OK);
    CHECK(ucp_worker_progress(p.worker) >= 1);
    CHECK(s.runs == 1); /* once, however often scheduled */
    s.again = 2;
    CHECK(ucp_worker_callback_schedule(p.worker, s.id) == UCS_OK);
    for (int i = 0; i < 5; ++i) {
        ucp_worker_progress(p.worker);
    }
    CHECK(s.runs == 4);
    /* Ids this API did not give are refused (the worker's own live there). */
    CHECK(ucp_worker_callback_schedule(p.worker, s.id + 100) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_callback_remove(p.worker, s.id + 100) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_callback_add(p.worker, nullptr, &s, &s.id) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_callback_schedule(p.worker, s.id) == UCS_OK);
    CHECK(ucp_worker_callback_remove(p.worker, s.id) == UCS_OK); /* drops the run */
    ucp_worker_progress(p.worker);
    CHECK(s.runs == 4);
    CHECK(ucp_worker_callback_remove(p.worker, s.id) == UCS_ERR_INVALID_PARAM);
}
