/* Address handles: a copy of the route, checked against the target QP's
 * port when a datagram is sent. */
#include "objects.h"

#include <cerrno>
#include <cstring>

#include <endian.h>

using namespace verbs_emu;

struct ibv_ah *ibv_create_ah(struct ibv_pd *ibv_pd, struct ibv_ah_attr *attr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_pd *pd = lookup<emu_pd>(ibv_pd);
    if (pd == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    emu_context *ctx = lookup<emu_context>(pd->ibv.context);
    if (ctx == nullptr || attr->port_num < 1 || attr->port_num > ctx->cfg.ports_per_device) {
        errno = EINVAL;
        return nullptr;
    }
    /* RoCE has no LIDs: every route is a GRH route */
    if (ctx->cfg.ethernet && !attr->is_global) {
        errno = EINVAL;
        return nullptr;
    }
    if (attr->is_global && attr->grh.sgid_index >= port_gid_count(ctx->cfg)) {
        errno = EINVAL;
        return nullptr;
    }
    auto *ah = new (std::nothrow) emu_ah();
    if (ah == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    static uint32_t next_handle = 1;
    ah->pd                      = pd;
    ah->attr                    = *attr;
    ah->ibv.context             = pd->ibv.context;
    ah->ibv.pd                  = ibv_pd;
    ah->ibv.handle              = next_handle++;
    ++pd->users;
    register_object(ah);
    return &ah->ibv;
}

int ibv_destroy_ah(struct ibv_ah *ibv_ah)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_ah *ah = lookup<emu_ah>(ibv_ah);
    if (ah == nullptr) {
        return EINVAL;
    }
    --ah->pd->users;
    unregister_object(ah);
    delete ah;
    return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
                        struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = lookup<emu_context>(context);
    if (ctx == nullptr || wc == nullptr || ah_attr == nullptr) {
        return EINVAL;
    }
    *ah_attr               = ibv_ah_attr();
    ah_attr->dlid          = wc->slid;
    ah_attr->sl            = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num      = port_num;
    if ((wc->wc_flags & IBV_WC_GRH) && grh != nullptr) {
        ah_attr->is_global         = 1;
        ah_attr->grh.dgid          = grh->sgid;
        ah_attr->grh.flow_label    = be32toh(grh->version_tclass_flow) & 0xfffff;
        ah_attr->grh.hop_limit     = 0xff;
        ah_attr->grh.traffic_class = uint8_t(be32toh(grh->version_tclass_flow) >> 20);
        /* answer from the GID the request was sent to */
        for (int i = 0; i < port_gid_count(ctx->cfg); ++i) {
            union ibv_gid own;
            if (port_gid(ctx->cfg, ctx->device_index, port_num, i, &own) &&
                std::memcmp(own.raw, grh->dgid.raw, sizeof(own.raw)) == 0) {
                ah_attr->grh.sgid_index = uint8_t(i);
            }
        }
    }
    return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
                                     uint8_t port_num)
{
    struct ibv_ah_attr attr;
    int rc = ibv_init_ah_from_wc(pd != nullptr ? pd->context : nullptr, port_num, wc, grh, &attr);
    if (rc != 0) {
        errno = rc;
        return nullptr;
    }
    return ibv_create_ah(pd, &attr);
}
