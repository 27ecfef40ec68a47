/*
 * Fuzz target: a worker address from a peer (what ucp_ep_create gets, the
 * body of a wireup message or of a client-server frame).
 *
 * The input is the packed address. It goes through ucp::address_peek and
 * ucp::unpack_address, and, when accepted, through what ep creation does
 * next with it: ucp::select_lanes, which asks every transport's
 * is_reachable() about the entry's device and iface address bytes
 * (posix, sysv, cma, tcp and self ifaces of one worker).
 *
 * Properties checked besides the sanitizers: an accepted address is
 * canonical (it packs back to the bytes it was read from), and peek agrees
 * with unpack on the length and the uuid.
 */
#include "fuzz_common.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_address.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/wireup/lane_select.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

ucp_worker_h g_worker = nullptr;

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_address: %s\n", what);
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    fuzz::init_env("posix,sysv,cma,tcp,self");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AM;
    ucp_context_h context;
    check(ucp_init(&params, nullptr, &context) == UCS_OK, "ucp_init failed");
    ucp_worker_params_t wparams{};
    check(ucp_worker_create(context, &wparams, &g_worker) == UCS_OK, "ucp_worker_create failed");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t peek_length = 0;
    uint64_t peek_uuid = 0;
    const bool peeked  = ucp::address_peek(data, size, &peek_length, &peek_uuid) == UCS_OK;

    ucp::unpacked_address addr;
    if (ucp::unpack_address(data, size, &addr) != UCS_OK) {
        return 0;
    }
    check(peeked && (peek_uuid == addr.worker_uuid) && (peek_length <= size),
          "unpack_address accepted what address_peek refused");

    void *packed  = nullptr;
    size_t length = 0;
    check(ucp::pack_address(addr, &packed, &length) == UCS_OK, "an accepted address does not pack");
    check((length == peek_length) && (std::memcmp(packed, data, length) == 0),
          "an accepted address is not canonical");
    std::free(packed);

    ucp::lane_plan plan;
    if (ucp::select_lanes(*g_worker, addr, &plan) == UCS_OK) {
        for (const ucp::lane_candidate &lane : plan.lanes) {
            check(lane.iface_index < g_worker->ifaces.size(), "lane on no iface");
            check((lane.entry >= addr.entries.data()) &&
                      (lane.entry < addr.entries.data() + addr.entries.size()),
                  "lane on no address entry");
        }
        check(plan.am < plan.lanes.size(), "a plan without an AM lane");
    }
    return 0;
}
