/*
 * Fuzz target: remote keys from a peer.
 *
 * Input: one mode byte, then the key bytes.
 *   mode 0: ucp::rkey_unpack(context, bytes, length), the packed UCP key of
 *           ucp_ep_rkey_unpack, rendezvous and RTR messages, which hands
 *           each entry to its component; then ucp_rkey_ptr at the key's
 *           bounds, and ucp_rkey_destroy.
 *   mode 1: the length-less entry of ucp_ep_rkey_unpack (reads the header,
 *           then the length it names; UCX's empty key), used only when the
 *           named length lies inside the input, as the API requires.
 *   mode 2 + k: the mkey alone, through the rkey_unpack of component k of
 *           posix, sysv, cma, tcp, self; then rkey_ptr and rkey_release.
 *
 * The context has every md (posix, sysv, cma, tcp, self), and one region
 * mapped at fuzz::region_address on each md that registers memory, so that
 * keys recorded from real traffic name existing memory.
 */
#include "fuzz_common.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_rkey.h>
#include <uct/base/uct_md.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr const char *component_names[] = {"posix", "sysv", "cma", "tcp", "self"};
constexpr unsigned num_components       = sizeof(component_names) / sizeof(component_names[0]);

ucp_context_h g_context                      = nullptr;
ucp_mem_h g_memh                             = nullptr; /* the region, kept for the whole run */
uct::component *g_components[num_components] = {};

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_rkey: %s\n", what);
        std::abort();
    }
}

void use_rkey(ucp_rkey_h rkey)
{
    void *local = nullptr;
    (void)ucp_rkey_ptr(rkey, rkey->address, &local);
    if (rkey->length > 0) {
        (void)ucp_rkey_ptr(rkey, rkey->address + rkey->length - 1, &local);
    }
    ucp_rkey_destroy(rkey);
}

void component_unpack(uct::component *component, const uint8_t *key, size_t length)
{
    uct::rkey_bundle bundle;
    if (component->rkey_unpack(key, length, &bundle) != UCS_OK) {
        return;
    }
    void *local = nullptr;
    (void)component->rkey_ptr(bundle, fuzz::region_address, &local);
    component->rkey_release(bundle);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    fuzz::init_env("posix,sysv,cma,tcp,self");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    check(ucp_init(&params, nullptr, &g_context) == UCS_OK, "ucp_init failed");

    ucp_mem_map_params_t map{};
    map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    map.address    = fuzz::map_region();
    map.length     = fuzz::region_length;
    check(ucp_mem_map(g_context, &map, &g_memh) == UCS_OK, "ucp_mem_map failed");

    for (unsigned i = 0; i < num_components; ++i) {
        for (uct::component *c : uct::components()) {
            if (std::strcmp(c->name(), component_names[i]) == 0) {
                g_components[i] = c;
            }
        }
        check(g_components[i] != nullptr, "a component is missing");
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    const uint8_t mode = data[0];
    /* An exact-size copy: a read past the key is a read past the allocation. */
    std::vector<uint8_t> key(data + 1, data + size);
    ucp_rkey_h rkey = nullptr;

    if (mode == 0) {
        if (ucp::rkey_unpack(*g_context, key.data(), key.size(), &rkey) == UCS_OK) {
            use_rkey(rkey);
        }
    } else if (mode == 1) {
        size_t total         = 0;
        const bool empty_key = (key.size() >= sizeof(ucp::ucx_empty_key)) &&
                               (std::memcmp(key.data(), ucp::ucx_empty_key,
                                            sizeof(ucp::ucx_empty_key)) == 0);
        const bool fits = (ucp::rkey_peek(key.data(), key.size(), &total) == UCS_OK) &&
                          (total <= key.size());
        if ((empty_key || fits) && (ucp::rkey_unpack(*g_context, key.data(), &rkey) == UCS_OK)) {
            use_rkey(rkey);
        }
    } else {
        component_unpack(g_components[(mode - 2) % num_components], key.data(), key.size());
    }
    return 0;
}
