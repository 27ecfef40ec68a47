/*
 * Writes the seed corpora of the fuzz targets from real traffic
 * (docs/fuzzing.md):
 *
 *     record_corpus OUTDIR      -> OUTDIR/<target>/<scenario>-<n>
 *
 * Two UCP workers in this process exchange the traffic of every protocol
 * (wireup, tag eager/sync/multi-fragment/rendezvous, stream, user AMs with
 * and without reply and rendezvous, emulated and transport RMA and
 * atomics, ep close, a client-server connection), once over tcp and once
 * over posix shared memory; a uct tcp pair exchanges the requests of
 * tcp_requests.h and a few AMs; workers on every transport give their
 * addresses, and memory mapped on every md its keys.
 *
 * The bytes are caught without any recording code in the libraries: what
 * they receive on sockets by record_sockets.h; the posix FIFOs by mapping
 * them like a peer and copying each element before its owner consumes it
 * (record_seeds.h); addresses and keys from ucp_worker_get_address,
 * ucp_rkey_pack and each md's mkey_pack on real mappings.
 */
#include "fuzz_common.h"
#include "record_seeds.h"
#include "record_sockets.h"
#include "tcp_requests.h"

#include <ucp/api/ucp.h>
#include <ucp/api/ucp_pwc.h>
#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_mm.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/select.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>
#include <uct/tcp/tcp_wire.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using record::bytes;
using record::check;
using record::put;

/* ---- the UCP scenarios ------------------------------------------------ */

struct pair {
    ucp_context_h context = nullptr;
    ucp_worker_h a = nullptr, b = nullptr;
    ucp_ep_h ab    = nullptr;
    ucp_ep_h ba    = nullptr; /* b's ep to a: adopts the wireup's */
    ucp_mem_h memh = nullptr; /* b's region */
    std::unique_ptr<record::fifo_tap> tap_a, tap_b;
    std::vector<void *> am_kept; /* b's kept AM data */
    bytes am_rndv = bytes(64 * 1024);

    void progress()
    {
        if (tap_b) {
            tap_b->look();
        }
        ucp_worker_progress(b);
        if (tap_a) {
            tap_a->look();
        }
        ucp_worker_progress(a);
    }

    /* Progresses until every request completed; frees them. */
    void wait(std::vector<ucs_status_ptr_t> requests)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (ucs_status_ptr_t r : requests) {
            check(!UCS_PTR_IS_ERR(r), ("an operation failed in " + record::scenario).c_str());
            while (UCS_PTR_IS_PTR(r) && (ucp_request_check_status(r) == UCS_INPROGRESS)) {
                check(std::chrono::steady_clock::now() < deadline,
                      ("an operation does not complete in " + record::scenario).c_str());
                progress();
            }
            if (UCS_PTR_IS_PTR(r)) {
                ucp_request_free(r);
            }
        }
    }

    void settle(unsigned n = 200)
    {
        for (unsigned i = 0; i < n; ++i) {
            progress();
        }
    }
};

ucs_status_ptr_t flush(ucp_ep_h ep)
{
    ucp_request_param_t p{};
    return ucp_ep_flush_nbx(ep, &p);
}

ucs_status_t am_handler(void *arg, const void *, size_t, void *data, size_t length,
                        const ucp_am_recv_param_t *param)
{
    auto *p = static_cast<pair *>(arg);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ucp_request_param_t rp{};
        ucs_status_ptr_t r = ucp_am_recv_data_nbx(p->b, data, p->am_rndv.data(),
                                                  std::min(length, p->am_rndv.size()), &rp);
        if (UCS_PTR_IS_PTR(r)) {
            ucp_request_free(r); /* completes on its own */
        }
        return UCS_INPROGRESS;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) {
        p->am_kept.push_back(data);
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

ucp_worker_h new_worker(ucp_context_h context, uint64_t uuid)
{
    ucp_worker_params_t params{};
    ucp_worker_h worker;
    check(ucp_worker_create(context, &params, &worker) == UCS_OK, "worker");
    worker->uuid        = uuid; /* as the fuzz targets' workers (fuzz_common.h) */
    worker->next_msg_id = uuid * 0x9e3779b97f4a7c15ull;
    return worker;
}

void emit_worker_address(ucp_worker_h worker, const std::string &name)
{
    ucp_address_t *address;
    size_t length;
    check(ucp_worker_get_address(worker, &address, &length) == UCS_OK, "address");
    const auto *p = reinterpret_cast<const uint8_t *>(address);
    record::emit("fuzz_address", name, record::bytes(p, p + length));
    ucp_worker_release_address(worker, address);
}

void run_scenarios(pair &p, bool over_tcp)
{
    ucp_request_param_t none{};
    uint8_t send_buf[24 * 1024], recv_buf[24 * 1024];
    for (size_t i = 0; i < sizeof(send_buf); ++i) {
        send_buf[i] = uint8_t(i * 7);
    }

    record::scenario = "wireup";
    ucp_address_t *b_address;
    size_t b_length;
    check(ucp_worker_get_address(p.b, &b_address, &b_length) == UCS_OK, "b address");
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = b_address;
    check(ucp_ep_create(p.a, &ep_params, &p.ab) == UCS_OK, "ep a->b");
    ucp_worker_release_address(p.b, b_address);
    p.wait({ucp_tag_send_nbx(p.ab, send_buf, 8, 1, &none),
            ucp_tag_recv_nbx(p.b, recv_buf, sizeof(recv_buf), 1, ~ucp_tag_t(0), &none)});
    ucp_address_t *a_address;
    size_t a_length;
    check(ucp_worker_get_address(p.a, &a_address, &a_length) == UCS_OK, "a address");
    ep_params.address = a_address;
    check(ucp_ep_create(p.b, &ep_params, &p.ba) == UCS_OK, "ep b->a");
    ucp_worker_release_address(p.a, a_address);

    struct tag_case {
        const char *name;
        size_t length;
        bool sync;
        bool expected; /* receive posted before the send */
    };
    for (const tag_case &c :
         {tag_case{"tag_eager", 100, false, true}, tag_case{"tag_unexpected", 64, false, false},
          tag_case{"tag_sync", 32, true, true}, tag_case{"tag_multi", 12000, false, true},
          tag_case{"tag_multi_unexpected", 12000, false, false},
          tag_case{"tag_sync_multi", 12000, true, false},
          tag_case{"tag_rndv", 20000, false, true}}) {
        record::scenario      = c.name;
        ucs_status_ptr_t recv = nullptr;
        if (c.expected) {
            recv = ucp_tag_recv_nbx(p.b, recv_buf, sizeof(recv_buf), fuzz::tag_expected,
                                    ~ucp_tag_t(0), &none);
        }
        ucs_status_ptr_t send = c.sync ? ucp_tag_send_sync_nbx(p.ab, send_buf, c.length,
                                                               fuzz::tag_expected, &none) :
                                         ucp_tag_send_nbx(p.ab, send_buf, c.length,
                                                          fuzz::tag_expected, &none);
        if (!c.expected) {
            p.settle(50);
            recv = ucp_tag_recv_nbx(p.b, recv_buf, sizeof(recv_buf), fuzz::tag_expected,
                                    ~ucp_tag_t(0), &none);
        }
        p.wait({send, recv});
    }

    record::scenario = "stream";
    size_t stream_length;
    p.wait({ucp_stream_send_nbx(p.ab, send_buf, 100, &none),
            ucp_stream_recv_nbx(p.ba, recv_buf, 100, &stream_length, &none)});
    record::scenario = "stream_rndv";
    std::vector<uint8_t> stream_out(ucp::proto::stream_rndv_min, 5), stream_in(stream_out.size());
    p.wait({ucp_stream_send_nbx(p.ab, stream_out.data(), stream_out.size(), &none),
            ucp_stream_recv_nbx(p.ba, stream_in.data(), stream_in.size(), &stream_length, &none)});

    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.cb  = am_handler;
    hp.arg = &p;
    for (unsigned id = 0; id < 3; ++id) {
        hp.id = id;
        check(ucp_worker_set_am_recv_handler(p.b, &hp) == UCS_OK, "am handler");
    }
    struct am_case {
        const char *name;
        unsigned id;
        size_t header, length;
        uint32_t flags;
    };
    for (const am_case &c : {am_case{"am_short", 0, 0, 40, 0}, am_case{"am_header", 1, 16, 200, 0},
                             am_case{"am_reply", 2, 8, 64, UCP_AM_SEND_FLAG_REPLY},
                             am_case{"am_multi", 0, 8, 12000, UCP_AM_SEND_FLAG_EAGER},
                             am_case{"am_rndv", 1, 8, 20000, UCP_AM_SEND_FLAG_RNDV}}) {
        record::scenario = c.name;
        ucp_request_param_t ap{};
        ap.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        ap.flags        = c.flags;
        p.wait({ucp_am_send_nbx(p.ab, c.id, send_buf, c.header, send_buf, c.length, &ap)});
        p.settle(100);
    }
    for (void *data : p.am_kept) {
        ucp_am_data_release(p.b, data);
    }
    p.am_kept.clear();

    /* RMA: emulated with UCX's empty key (active messages), then with b's
     * own key (the transport's RMA: tcp's internal ops, shm copies). */
    void *rkey_buffer;
    size_t rkey_length;
    check(ucp_rkey_pack(p.context, p.memh, &rkey_buffer, &rkey_length) == UCS_OK, "rkey pack");
    for (const char *kind : {"rma_emulated", "rma"}) {
        record::scenario = kind;
        ucp_rkey_h rkey;
        const void *key = (std::strcmp(kind, "rma") == 0) ? rkey_buffer : ucp::ucx_empty_key;
        check(ucp_ep_rkey_unpack(p.ab, key, &rkey) == UCS_OK, "rkey unpack");
        const uint64_t base = fuzz::region_address;
        uint64_t result = 0, compare = 0;
        ucp_request_param_t fetch{};
        fetch.op_attr_mask = UCP_OP_ATTR_FIELD_REPLY_BUFFER | UCP_OP_ATTR_FIELD_DATATYPE;
        fetch.reply_buffer = &result;
        fetch.datatype     = ucp_dt_make_contig(8);
        ucp_request_param_t post{};
        post.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        post.datatype     = ucp_dt_make_contig(8);
        uint64_t one      = 1;
        check(ucp_put_nbi(p.ab, send_buf, 64, base, rkey) >= 0, "put");
        check(ucp_put_nbi(p.ab, send_buf, 3000, base + 1024, rkey) >= 0, "large put");
        p.wait({flush(p.ab)});
        check(ucp_get_nbi(p.ab, recv_buf, 64, base + 64, rkey) >= 0, "get");
        check(ucp_get_nbi(p.ab, recv_buf, 3000, base + 4096, rkey) >= 0, "large get");
        p.wait({ucp_atomic_op_nbx(p.ab, UCP_ATOMIC_OP_ADD, &one, 1, base + 128, rkey, &fetch),
                ucp_atomic_op_nbx(p.ab, UCP_ATOMIC_OP_ADD, &one, 1, base + 136, rkey, &post),
                ucp_atomic_op_nbx(p.ab, UCP_ATOMIC_OP_CSWAP, &compare, 1, base + 144, rkey, &fetch),
                flush(p.ab)});
        ucp_rkey_destroy(rkey);
    }

    /* Put and get with completion ids: a packed put with an id by value, a
     * larger one with an id of bytes, a get, then enough notifications that
     * b's probe gives credits back (AM_PWC_CREDIT). */
    record::scenario = "pwc";
    {
        ucp_rkey_h rkey;
        check(ucp_ep_rkey_unpack(p.ab, rkey_buffer, &rkey) == UCS_OK, "rkey unpack");
        const uint64_t base        = fuzz::region_address;
        const uint8_t id_bytes[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
        const ucp_cid_t by_value{7, nullptr, 0}, of_bytes{0, id_bytes, sizeof(id_bytes)};
        check(ucp_pwc_put(p.ab, send_buf, 64, base + 256, rkey, nullptr, &by_value, 0) == UCS_OK,
              "pwc put");
        check(ucp_pwc_put(p.ab, send_buf, 3000, base + 4096, rkey, nullptr, &of_bytes, 0) == UCS_OK,
              "large pwc put");
        check(ucp_pwc_get(p.ab, recv_buf, 64, base + 64, rkey, nullptr, &by_value, 0) == UCS_OK,
              "pwc get");
        constexpr unsigned notes = 70; /* more than half of UCX_PWC_CREDITS */
        unsigned sent = 0, taken = 0;
        size_t pending      = 1;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while ((taken < notes + 3) || (pending != 0)) {
            check(std::chrono::steady_clock::now() < deadline, "pwc does not complete");
            if ((sent < notes) && (ucp_pwc_put(p.ab, nullptr, 0, 0, nullptr, nullptr, &by_value,
                                               UCP_PWC_FLAG_NO_LCE) == UCS_OK)) {
                ++sent;
            }
            size_t count;
            ucp_pwc_completion_t out[16];
            if (p.tap_b) {
                p.tap_b->look();
            }
            check(ucp_pwc_probe(p.b, nullptr, out, 16, &count, nullptr) == UCS_OK, "probe b");
            taken += unsigned(count);
            if (p.tap_a) {
                p.tap_a->look();
            }
            check(ucp_pwc_probe(p.a, nullptr, out, 16, &count, &pending) == UCS_OK, "probe a");
        }
        ucp_rkey_destroy(rkey);
    }
    ucp_rkey_buffer_release(rkey_buffer);

    record::scenario = "ep_close";
    ucp_request_param_t close{};
    p.wait({ucp_ep_close_nbx(p.ab, &close)});
    p.ab = nullptr;
    p.settle();
    /* b's ep failed when a closed its end: forced, its status does not matter. */
    ucp_request_param_t force{};
    force.op_attr_mask       = UCP_OP_ATTR_FIELD_FLAGS;
    force.flags              = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t closing = ucp_ep_close_nbx(p.ba, &force);
    if (!UCS_PTR_IS_ERR(closing)) {
        p.wait({closing});
    }
    p.ba = nullptr;

    if (!over_tcp) {
        return;
    }
    /* A client-server connection: b listens, a connects. */
    record::scenario = "client_server";
    static ucp_conn_request_h request;
    request = nullptr;
    sockaddr_in any{};
    any.sin_family      = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ucp_listener_params_t lp{};
    lp.field_mask    = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr.addr = reinterpret_cast<const sockaddr *>(&any);
    lp.sockaddr.addrlen = sizeof(any);
    lp.conn_handler.cb  = [](ucp_conn_request_h r, void *) { request = r; };
    ucp_listener_h listener;
    check(ucp_listener_create(p.b, &lp, &listener) == UCS_OK, "listener");
    ucp_listener_attr_t la{};
    la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    check(ucp_listener_query(listener, &la) == UCS_OK, "listener query");
    ucp_ep_params_t cp{};
    cp.field_mask       = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS;
    cp.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    cp.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&la.sockaddr);
    cp.sockaddr.addrlen = sizeof(sockaddr_in);
    ucp_ep_h client;
    check(ucp_ep_create(p.a, &cp, &client) == UCS_OK, "client ep");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (request == nullptr) {
        check(std::chrono::steady_clock::now() < deadline, "no connection request");
        p.progress();
    }
    ucp_ep_params_t sp{};
    sp.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    sp.conn_request = request;
    ucp_ep_h server;
    check(ucp_ep_create(p.b, &sp, &server) == UCS_OK, "server ep");
    p.wait({ucp_tag_send_nbx(client, send_buf, 16, 2, &none),
            ucp_tag_recv_nbx(p.b, recv_buf, sizeof(recv_buf), 2, ~ucp_tag_t(0), &none)});
    p.wait({ucp_ep_close_nbx(client, &close)});
    p.wait({ucp_ep_close_nbx(server, &close)});
    ucp_listener_destroy(listener);
    p.settle();
}

/* The tcp md's id of the region in a packed key (tcp's entry, by its magic)
 * becomes fuzz::region_id_token in the inputs. */
void note_region_id(const void *rkey_buffer, size_t length)
{
    const auto *p        = static_cast<const uint8_t *>(rkey_buffer);
    const uint64_t magic = uct::tcp::RKEY_MAGIC;
    for (size_t i = 0; i + sizeof(uct::tcp::packed_rkey) <= length; ++i) {
        if (std::memcmp(p + i, &magic, sizeof(magic)) == 0) {
            uct::tcp::packed_rkey key;
            std::memcpy(&key, p + i, sizeof(key));
            record::replace_in_inputs(key.region_id, fuzz::region_id_token);
        }
    }
}

void record_ucp(const char *tls, void *region)
{
    setenv("UCX_TLS", tls, 1);
    pair p;
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM | UCP_FEATURE_RMA |
                      UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    check(ucp_init(&params, nullptr, &p.context) == UCS_OK, "ucp_init");
    p.a = new_worker(p.context, fuzz::worker_uuid);
    p.b = new_worker(p.context, fuzz::worker_uuid + 1);
    ucp_mem_map_params_t map{};
    map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    map.address    = region;
    map.length     = fuzz::region_length;
    check(ucp_mem_map(p.context, &map, &p.memh) == UCS_OK, "mem map");
    void *rkey_buffer;
    size_t rkey_length;
    check(ucp_rkey_pack(p.context, p.memh, &rkey_buffer, &rkey_length) == UCS_OK, "pack");
    note_region_id(rkey_buffer, rkey_length);
    ucp_rkey_buffer_release(rkey_buffer);
    record::replace_in_inputs(p.memh->secret, fuzz::secret_token);

    const bool over_tcp = std::strcmp(tls, "tcp") == 0;
    if (!over_tcp) {
        p.tap_a = record::fifo_tap::of(p.a, "a");
        p.tap_b = record::fifo_tap::of(p.b, "b");
    }
    run_scenarios(p, over_tcp);
    if (p.tap_a) {
        p.tap_a->emit_all();
        p.tap_b->emit_all();
    }
    record::scenario = "teardown";
    check(ucp_mem_unmap(p.context, p.memh) == UCS_OK, "unmap");
    ucp_worker_destroy(p.a);
    ucp_worker_destroy(p.b);
    ucp_cleanup(p.context);
}

/* Addresses of workers on every transport, and keys of every md. */
void record_addresses_and_keys(void *region)
{
    record::scenario = "keys";
    setenv("UCX_TLS", "posix,sysv,cma,tcp,self", 1);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
    ucp_context_h context;
    check(ucp_init(&params, nullptr, &context) == UCS_OK, "ucp_init");
    ucp_worker_h worker = new_worker(context, fuzz::worker_uuid);
    emit_worker_address(worker, "all-transports");

    /* Registered memory (cma, tcp, self) and memory allocated on the mds
     * that allocate (posix, sysv). */
    std::vector<ucp_mem_h> handles;
    ucp_mem_map_params_t reg{};
    reg.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    reg.address    = region;
    reg.length     = fuzz::region_length;
    ucp_mem_map_params_t alloc{};
    alloc.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    alloc.length     = 8192;
    alloc.flags      = UCP_MEM_MAP_ALLOCATE;
    for (const ucp_mem_map_params_t *mp : {&reg, &alloc}) {
        ucp_mem_h memh;
        check(ucp_mem_map(context, mp, &memh) == UCS_OK, "mem map");
        handles.push_back(memh);
        void *buffer;
        size_t length;
        check(ucp_rkey_pack(context, memh, &buffer, &length) == UCS_OK, "rkey pack");
        for (uint8_t mode : {0, 1}) {
            bytes seed{mode};
            put(seed, static_cast<const uint8_t *>(buffer), length);
            record::emit("fuzz_rkey", "ucp-key", seed);
        }
        ucp_rkey_buffer_release(buffer);
        /* Each md's own key (the component's unpack input). */
        for (unsigned i = 0; i < context->mds.size(); ++i) {
            if (memh->uct_memh(i) == nullptr) {
                continue;
            }
            bytes key(context->mds[i].md->attr().rkey_packed_size);
            if (context->mds[i].md->mkey_pack(memh->uct_memh(i), key.data()) != UCS_OK) {
                continue;
            }
            const char *names[] = {"posix", "sysv", "cma", "tcp", "self"};
            for (uint8_t k = 0; k < 5; ++k) {
                if (std::strcmp(context->mds[i].component->name(), names[k]) == 0) {
                    bytes seed{uint8_t(2 + k)};
                    put(seed, key.data(), key.size());
                    record::emit("fuzz_rkey", std::string("mkey-") + names[k], seed);
                }
            }
        }
    }
    bytes empty{1};
    put(empty, ucp::ucx_empty_key, sizeof(ucp::ucx_empty_key));
    record::emit("fuzz_rkey", "ucx-empty-key", empty);
    for (ucp_mem_h memh : handles) {
        ucp_mem_unmap(context, memh);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
}

/* A uct tcp pair: the requests of tcp_requests.h, AMs, an ep going away. */
void record_uct_tcp(void *region)
{
    record::scenario    = "uct_requests";
    uct::component *tcp = nullptr;
    for (uct::component *c : uct::components()) {
        if (std::strcmp(c->name(), "tcp") == 0) {
            tcp = c;
        }
    }
    uct::md *md = nullptr;
    check((tcp != nullptr) && (tcp->md_open("tcp", &md) == UCS_OK), "tcp md");
    uct::worker worker(nullptr, UCS_THREAD_MODE_SINGLE);
    uct::iface_params params;
    params.tl_name     = "tcp";
    params.dev_name    = "lo";
    uct::iface *target = nullptr, *initiator = nullptr;
    check((md->iface_open(worker, params, &target) == UCS_OK) &&
              (md->iface_open(worker, params, &initiator) == UCS_OK),
          "tcp ifaces");
    for (unsigned id = 0; id < uct::AM_ID_MAX; ++id) {
        target->set_am_handler(
            uct::am_id_t(id), [](void *, void *, size_t, unsigned) { return UCS_OK; }, nullptr, 0);
    }
    uct::mem_h memh;
    check(md->mem_reg(region, fuzz::region_length, 0, &memh) == UCS_OK, "mem_reg");
    uct::tcp::packed_rkey packed;
    check(md->mkey_pack(memh, &packed) == UCS_OK, "mkey_pack");
    record::replace_in_inputs(packed.region_id, fuzz::region_id_token);
    uct::rkey_bundle rkey;
    check(tcp->rkey_unpack(&packed, sizeof(packed), &rkey) == UCS_OK, "rkey");

    std::vector<uint8_t> dev(target->attr().device_addr_len), addr(target->attr().iface_addr_len);
    target->get_device_address(dev.data());
    target->get_address(addr.data());
    uct::ep *ep;
    check(initiator->ep_create_connected(dev.data(), dev.size(), addr.data(), addr.size(), &ep) ==
              UCS_OK,
          "tcp ep");
    fuzz::tcp_requests requests;
    check(requests.issue(*ep, rkey.rkey), "requests");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!requests.all_completed()) {
        check(std::chrono::steady_clock::now() < deadline, "tcp requests do not complete");
        worker.progress();
    }
    record::scenario = "uct_am";
    uint8_t data[3000];
    std::memset(data, 0x42, sizeof(data));
    check(ep->am_short(5, 0x0102030405060708ull, data, 16) == UCS_OK, "am_short");
    check(ep->am_bcopy(
              6,
              [](void *dest, void *) -> size_t {
                  std::memset(dest, 0x17, 200);
                  return 200;
              },
              nullptr, 0) == 200,
          "am_bcopy");
    uct::iov iov{data, sizeof(data), nullptr};
    uint64_t header = 0x1122334455667788ull;
    check(ep->am_zcopy(7, &header, sizeof(header), &iov, 1, 0, nullptr) >= UCS_OK, "am_zcopy");
    check(ep->atomic_post(uct::atomic_op::XOR, 4, 0xff, fuzz::region_address + 1000, rkey.rkey) ==
              UCS_OK,
          "atomic_post");
    fuzz::tcp_requests::comp flushed;
    if (ep->flush(0, &flushed) == UCS_INPROGRESS) {
        while (!flushed.fired) {
            check(std::chrono::steady_clock::now() < deadline, "flush does not complete");
            worker.progress();
        }
    }
    record::scenario = "uct_detach";
    delete ep;
    for (int i = 0; i < 2000; ++i) {
        worker.progress();
    }
    tcp->rkey_release(rkey);
    md->mem_dereg(memh);
    delete initiator;
    delete target;
    delete md;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    record::outdir                   = argv[1];
    static const char *const extra[] = {"UCX_NET_DEVICES=lo", "UCX_RNDV_THRESH=16k", nullptr};
    fuzz::init_env("tcp", extra);
    void *region = fuzz::map_region();

    record_uct_tcp(region);
    record_ucp("tcp", region);
    record_ucp("posix", region);
    record_addresses_and_keys(region);
    record::emit_streams();

    for (const auto &[target, count] : record::written()) {
        std::printf("%s: %u inputs\n", target.c_str(), count);
    }
    return 0;
}
