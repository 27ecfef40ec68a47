/*
 * Fuzz target: UCP's active messages from a peer (every ucp::wire::am_id:
 * tag eager and rendezvous, acks, streams, user AMs, emulated RMA and
 * atomics, wireup, ep close), fed to the handlers a real worker installed
 * on its transports, then the worker is progressed.
 *
 * Each input runs on a fresh worker (UCX_TLS=self,posix) whose uuid is
 * fuzz::worker_uuid and which has an ep to itself: messages naming that
 * uuid as their sender find an ep, so the replies they cause travel back
 * into the handlers. Before the messages arrive the worker has a tag
 * receive for fuzz::tag_expected, a wildcard tag receive, a stream receive on its
 * ep, user AM handlers (ids 0-2 with the recv callback, 3 legacy) and a
 * region mapped at fuzz::region_address for emulated RMA (every copy of
 * fuzz::secret_token in the input becomes its secret).
 *
 * Input: a sequence of messages, each
 *     u8 am_id, u8 how, u16 length (little-endian), `length` bytes
 *     (fewer when the input ends first)
 * how & 3 picks the delivery: 0 the self transport's am_bcopy (the handler
 * gets a descriptor it may keep), 1 self am_zcopy of one iov (data in
 * place, no descriptor), 2 the posix transport's am_bcopy (through the
 * worker's shared-memory FIFO). how & 0x80: progress the worker once
 * before the next message.
 *
 * After the last message the worker is progressed a fixed number of times,
 * receives still waiting are cancelled, the ep is closed and the worker
 * destroyed: every input starts from the same state, and libFuzzer's leak
 * check sees anything a message left behind.
 */
#include "fuzz_common.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_mm.h>
#include <ucp/core/ucp_worker.h>
#include <uct/base/uct_iface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr unsigned user_am_ids    = 3; /* recv-callback handlers: ids 0..2 */
constexpr unsigned legacy_am_id   = 3;
constexpr unsigned progress_after = 64; /* worker progress calls per input */
constexpr size_t rndv_buffer      = 64 * 1024;

ucp_context_h g_context = nullptr;
void *g_region          = nullptr;

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_ucp_am: %s\n", what);
        std::abort();
    }
}

/* What one input created; all of it goes away before the next. */
struct session {
    ucp_worker_h worker = nullptr;
    ucp_ep_h ep         = nullptr;
    ucp_mem_h memh      = nullptr;
    uct::ep *self_ep    = nullptr; /* worker's self iface to itself */
    uct::ep *posix_ep   = nullptr; /* worker's posix iface to itself */
    std::vector<void *> requests;  /* receives to cancel and free */
    std::vector<void *> kept_data; /* AM data handlers kept */
    uint8_t tag_buffer[4096];
    uint8_t wild_buffer[64];
    uint8_t stream_buffer[256];
    std::vector<uint8_t> rndv; /* AM rendezvous data lands here */
};

void add_request(session &s, ucs_status_ptr_t request)
{
    if (UCS_PTR_IS_PTR(request)) {
        s.requests.push_back(request);
    }
}

ucs_status_t am_recv_cb(void *arg, const void *header, size_t header_length, void *data,
                        size_t length, const ucp_am_recv_param_t *param)
{
    auto &s = *static_cast<session *>(arg);
    fuzz::touch(header, header_length);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        if (length > rndv_buffer) {
            return UCS_OK; /* not fetched: dropped, the sender completes */
        }
        ucp_request_param_t rp{};
        add_request(s, ucp_am_recv_data_nbx(s.worker, data, s.rndv.data(), length, &rp));
        return UCS_INPROGRESS;
    }
    fuzz::touch(data, length);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) {
        s.kept_data.push_back(data);
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

ucs_status_t legacy_am_cb(void *arg, void *data, size_t length, ucp_ep_h, unsigned flags)
{
    auto &s = *static_cast<session *>(arg);
    fuzz::touch(data, length);
    if (flags & UCP_CB_PARAM_FLAG_DATA) {
        s.kept_data.push_back(data);
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

/* A uct ep from the worker's iface of transport `tl` to that same iface. */
uct::ep *loopback_ep(ucp_worker_h worker, const char *tl)
{
    for (unsigned i = 0; i < worker->ifaces.size(); ++i) {
        const ucp::worker_iface &wi = worker->ifaces[i];
        if (std::strcmp(worker->context.tls[wi.tl_index].resource.tl_name, tl) != 0) {
            continue;
        }
        const uct::iface_attr &attr = wi.iface->attr();
        std::vector<uint8_t> dev(attr.device_addr_len), iface(attr.iface_addr_len);
        check((wi.iface->get_device_address(dev.data()) == UCS_OK) &&
                  (wi.iface->get_address(iface.data()) == UCS_OK),
              "iface address");
        uct::ep *ep = nullptr;
        check(wi.iface->ep_create_connected(dev.data(), dev.size(), iface.data(), iface.size(),
                                            &ep) == UCS_OK,
              "loopback uct ep");
        worker->activate_iface(i); /* progressed on every call, as with a peer */
        return ep;
    }
    check(false, "transport missing");
    return nullptr;
}

void open_session(session &s)
{
    ucp_worker_params_t wparams{};
    check(ucp_worker_create(g_context, &wparams, &s.worker) == UCS_OK, "worker");
    /* Before anything packs an address: recorded messages name this uuid. */
    s.worker->uuid        = fuzz::worker_uuid;
    s.worker->next_msg_id = fuzz::worker_uuid * 0x9e3779b97f4a7c15ull;

    ucp_address_t *address;
    size_t address_length;
    check(ucp_worker_get_address(s.worker, &address, &address_length) == UCS_OK, "worker address");
    ucp_ep_params_t eparams{};
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = address;
    check(ucp_ep_create(s.worker, &eparams, &s.ep) == UCS_OK, "ep to itself");
    ucp_worker_release_address(s.worker, address);

    ucp_mem_map_params_t map{};
    map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    map.address    = g_region;
    map.length     = fuzz::region_length;
    check(ucp_mem_map(g_context, &map, &s.memh) == UCS_OK, "mem map");

    for (unsigned id = 0; id < user_am_ids; ++id) {
        ucp_am_handler_param_t hp{};
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                        UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
        hp.id    = id;
        hp.cb    = am_recv_cb;
        hp.arg   = &s;
        hp.flags = (id == 1) ? UCP_AM_FLAG_PERSISTENT_DATA : (id == 2) ? UCP_AM_FLAG_WHOLE_MSG : 0;
        check(ucp_worker_set_am_recv_handler(s.worker, &hp) == UCS_OK, "am handler");
    }
    check(ucp_worker_set_am_handler(s.worker, legacy_am_id, legacy_am_cb, &s,
                                    UCP_AM_FLAG_WHOLE_MSG) == UCS_OK,
          "legacy handler");

    ucp_request_param_t rp{};
    add_request(s, ucp_tag_recv_nbx(s.worker, s.tag_buffer, sizeof(s.tag_buffer),
                                    fuzz::tag_expected, ~ucp_tag_t(0), &rp));
    add_request(s, ucp_tag_recv_nbx(s.worker, s.wild_buffer, sizeof(s.wild_buffer), 0, 0, &rp));
    size_t stream_length;
    add_request(s, ucp_stream_recv_nbx(s.ep, s.stream_buffer, sizeof(s.stream_buffer),
                                       &stream_length, &rp));

    s.self_ep  = loopback_ep(s.worker, "self");
    s.posix_ep = loopback_ep(s.worker, "posix");
    s.rndv.resize(rndv_buffer);
}

void close_session(session &s)
{
    for (unsigned i = 0; i < progress_after; ++i) {
        ucp_worker_progress(s.worker);
    }
    for (void *request : s.requests) {
        if (ucp_request_check_status(request) == UCS_INPROGRESS) {
            ucp_request_cancel(s.worker, request);
        }
    }
    for (void *data : s.kept_data) {
        ucp_am_data_release(s.worker, data);
    }
    delete s.self_ep;
    delete s.posix_ep;

    ucp_request_param_t cp{};
    cp.op_attr_mask        = UCP_OP_ATTR_FIELD_FLAGS;
    cp.flags               = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t close = ucp_ep_close_nbx(s.ep, &cp);
    for (unsigned i = 0; (i < progress_after) && UCS_PTR_IS_PTR(close) &&
                         (ucp_request_check_status(close) == UCS_INPROGRESS);
         ++i) {
        ucp_worker_progress(s.worker);
    }
    if (UCS_PTR_IS_PTR(close)) {
        ucp_request_free(close);
    }
    for (void *request : s.requests) {
        ucp_request_free(request);
    }
    check(ucp_mem_unmap(g_context, s.memh) == UCS_OK, "mem unmap");
    ucp_worker_destroy(s.worker);
}

struct packed_payload {
    const uint8_t *data;
    size_t length;
};

size_t pack_payload(void *dest, void *arg)
{
    const auto *p = static_cast<const packed_payload *>(arg);
    if (p->length != 0) {
        std::memcpy(dest, p->data, p->length);
    }
    return p->length;
}

void deliver(session &s, uint8_t am_id, uint8_t how, const uint8_t *data, size_t length)
{
    /* The bytes come from an exact-size copy, so a handler reading past
     * `length` reads past an allocation. */
    std::vector<uint8_t> copy(data, data + length);
    packed_payload payload{copy.data(), copy.size()};
    switch (how & 3) {
    case 1: {
        const uct::iface_attr &attr = s.self_ep->owner().attr();
        if (length <= attr.am.max_zcopy) {
            uct::iov iov{copy.data(), copy.size(), nullptr};
            (void)s.self_ep->am_zcopy(am_id, nullptr, 0, &iov, 1, 0, nullptr);
        }
        break;
    }
    case 2:
        if (length <= s.posix_ep->owner().attr().am.max_bcopy) {
            (void)s.posix_ep->am_bcopy(am_id, pack_payload, &payload, 0);
        }
        break;
    default:
        if (length <= s.self_ep->owner().attr().am.max_bcopy) {
            (void)s.self_ep->am_bcopy(am_id, pack_payload, &payload, 0);
        }
        break;
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    fuzz::init_env("self,posix");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM | UCP_FEATURE_RMA |
                      UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    check(ucp_init(&params, nullptr, &g_context) == UCS_OK, "ucp_init");
    g_region = fuzz::map_region();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    session s;
    open_session(s);

    /* The region's secret is random per mapping: recorded messages carry
     * fuzz::secret_token where the recorder's was. */
    std::vector<uint8_t> input(data, data + size);
    const uint64_t token = fuzz::secret_token;
    fuzz::replace_all(input, &token, &s.memh->secret, sizeof(token));
    fuzz::cursor in(input.data(), input.size());
    uint8_t am_id, how;
    uint16_t length;
    while (in.get(&am_id) && in.get(&how) && in.get(&length)) {
        const uint8_t *payload;
        size_t got = in.take(length, &payload);
        deliver(s, am_id, how, payload, got);
        if (how & 0x80) {
            ucp_worker_progress(s.worker);
        }
    }

    close_session(s);
    return 0;
}
