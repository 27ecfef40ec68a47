/* Devices, contexts and the queries about them. */
#include "objects.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <endian.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace verbs_emu {

int poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int req_notify_cq(struct ibv_cq *cq, int solicited_only);
int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

namespace {

struct emu_device {
    struct ibv_device ibv;
    int index;
};

emu_device g_devices[kMaxDevices];
config g_config; /* as of the latest ibv_get_device_list */

emu_device *find_device(struct ibv_device *device)
{
    for (emu_device &candidate : g_devices) {
        if (&candidate.ibv == device && candidate.index >= 0 &&
            candidate.index < g_config.device_count) {
            return &candidate;
        }
    }
    return nullptr;
}

emu_context *context_of(struct ibv_context *context)
{
    return lookup<emu_context>(context);
}

bool valid_port(const emu_context *ctx, int port_num)
{
    return port_num >= 1 && port_num <= ctx->cfg.ports_per_device;
}

void fill_port_attr(const emu_context *ctx, int port_num, struct ibv_port_attr *attr)
{
    std::memset(attr, 0, sizeof(*attr));
    attr->state          = IBV_PORT_ACTIVE;
    attr->max_mtu        = IBV_MTU_4096;
    attr->active_mtu     = IBV_MTU_4096;
    attr->gid_tbl_len    = port_gid_count(ctx->cfg);
    attr->port_cap_flags = ctx->cfg.ethernet ? uint32_t(IBV_PORT_IP_BASED_GIDS) :
                                               uint32_t(IBV_PORT_SM);
    attr->max_msg_sz     = uint32_t(kMaxMessageBytes);
    attr->pkey_tbl_len   = 1;
    attr->lid            = port_lid(ctx->cfg, ctx->device_index, port_num);
    attr->sm_lid         = ctx->cfg.ethernet ? 0 : 1;
    attr->max_vl_num     = 4;
    attr->subnet_timeout = 18;
    attr->active_width   = 2;  /* 4x */
    attr->active_speed   = 32; /* EDR */
    attr->phys_state     = 5;  /* LinkUp */
    attr->link_layer     = ctx->cfg.ethernet ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
}

} // namespace
} // namespace verbs_emu

using namespace verbs_emu;

struct ibv_device **(ibv_get_device_list)(int *num_devices)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    int rc = fabric_attach();
    if (rc != 0) {
        std::fprintf(stderr, "verbs_emu: cannot open the fabric table %s: %s\n",
                     fabric_name().c_str(), std::strerror(rc));
        errno = rc;
        return nullptr;
    }
    g_config    = read_config();
    auto **list = static_cast<struct ibv_device **>(std::calloc(size_t(g_config.device_count) + 1,
                                                                sizeof(struct ibv_device *)));
    if (list == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    for (int i = 0; i < g_config.device_count; ++i) {
        emu_device &device        = g_devices[i];
        device.index              = i;
        device.ibv.node_type      = IBV_NODE_CA;
        device.ibv.transport_type = IBV_TRANSPORT_IB;
        std::snprintf(device.ibv.name, sizeof(device.ibv.name), "emu%d", i);
        std::snprintf(device.ibv.dev_name, sizeof(device.ibv.dev_name), "uverbs%d", i);
        std::snprintf(device.ibv.dev_path, sizeof(device.ibv.dev_path),
                      "/sys/class/infiniband_verbs/uverbs%d", i);
        std::snprintf(device.ibv.ibdev_path, sizeof(device.ibv.ibdev_path),
                      "/sys/class/infiniband/emu%d", i);
        list[i] = &device.ibv;
    }
    if (num_devices != nullptr) {
        *num_devices = g_config.device_count;
    }
    return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
    std::free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_device *dev = find_device(device);
    if (dev == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    return dev->ibv.name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_device *dev = find_device(device);
    if (dev == nullptr) {
        errno = EINVAL;
        return 0;
    }
    return htobe64(node_guid(dev->index));
}

int ibv_get_device_index(struct ibv_device *device)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_device *dev = find_device(device);
    return (dev == nullptr) ? -1 : dev->index;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_device *dev = find_device(device);
    if (dev == nullptr) {
        errno = ENODEV;
        return nullptr;
    }
    auto *ctx = new (std::nothrow) emu_context();
    if (ctx == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    ctx->device_index       = dev->index;
    ctx->cfg                = g_config;
    struct ibv_context &ibv = ctx->ibv;
    ibv.device              = &dev->ibv;
    ibv.ops.poll_cq         = poll_cq;
    ibv.ops.req_notify_cq   = req_notify_cq;
    ibv.ops.post_send       = post_send;
    ibv.ops.post_recv       = post_recv;
    ibv.ops.post_srq_recv   = post_srq_recv;
    /* never readable: this HCA raises no asynchronous events */
    ibv.async_fd         = eventfd(0, EFD_CLOEXEC);
    ibv.cmd_fd           = open("/dev/null", O_RDWR | O_CLOEXEC);
    ibv.num_comp_vectors = 1;
    pthread_mutex_init(&ibv.mutex, nullptr);
    /* anything but __VERBS_ABI_IS_EXTENDED: the inline helpers then use the
     * exported functions, which are ours */
    ibv.abi_compat = nullptr;
    if (ibv.async_fd < 0 || ibv.cmd_fd < 0) {
        int err = errno;
        if (ibv.async_fd >= 0) {
            close(ibv.async_fd);
        }
        if (ibv.cmd_fd >= 0) {
            close(ibv.cmd_fd);
        }
        delete ctx;
        errno = err;
        return nullptr;
    }
    register_object(ctx);
    return &ctx->ibv;
}

int ibv_close_device(struct ibv_context *context)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = context_of(context);
    if (ctx == nullptr) {
        return EINVAL;
    }
    if (ctx->users > 0) {
        return EBUSY; /* its objects would point at freed memory */
    }
    unregister_object(ctx);
    close(ctx->ibv.async_fd);
    close(ctx->ibv.cmd_fd);
    pthread_mutex_destroy(&ctx->ibv.mutex);
    delete ctx;
    return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = context_of(context);
    if (ctx == nullptr || attr == nullptr) {
        return EINVAL;
    }
    std::memset(attr, 0, sizeof(*attr));
    std::snprintf(attr->fw_ver, sizeof(attr->fw_ver), "emulated");
    attr->node_guid           = htobe64(node_guid(ctx->device_index));
    attr->sys_image_guid      = attr->node_guid;
    attr->max_mr_size         = UINT64_MAX;
    attr->page_size_cap       = 0xfffff000;
    attr->vendor_id           = 0;
    attr->vendor_part_id      = 0;
    attr->hw_ver              = 0;
    attr->max_qp              = int(kQpSlots);
    attr->max_qp_wr           = 16384;
    attr->device_cap_flags    = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
    attr->max_sge             = 30;
    attr->max_sge_rd          = 30;
    attr->max_cq              = int(kCqNotifySlots);
    attr->max_cqe             = 4194303;
    attr->max_mr              = int(kMrSlots);
    attr->max_pd              = 1 << 24;
    attr->max_qp_rd_atom      = 16;
    attr->max_ee_rd_atom      = 0;
    attr->max_res_rd_atom     = 16 * int(kQpSlots);
    attr->max_qp_init_rd_atom = 16;
    attr->max_ee_init_rd_atom = 0;
    attr->atomic_cap          = IBV_ATOMIC_HCA;
    attr->max_ah              = 1 << 24;
    attr->max_srq             = 65536;
    attr->max_srq_wr          = 16384;
    attr->max_srq_sge         = 30;
    attr->max_pkeys           = 1;
    attr->local_ca_ack_delay  = 16;
    attr->phys_port_cnt       = uint8_t(ctx->cfg.ports_per_device);
    return 0;
}

int(ibv_query_port)(struct ibv_context *context, uint8_t port_num,
                    struct _compat_ibv_port_attr *port_attr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = context_of(context);
    if (ctx == nullptr || port_attr == nullptr || !valid_port(ctx, port_num)) {
        return EINVAL;
    }
    /* The caller's struct may be the old, shorter layout: write only the
     * fields that layout has (everything before port_cap_flags2). */
    struct ibv_port_attr attr;
    fill_port_attr(ctx, port_num, &attr);
    std::memcpy(port_attr, &attr, offsetof(struct ibv_port_attr, port_cap_flags2));
    return 0;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = context_of(context);
    if (ctx == nullptr || gid == nullptr || !valid_port(ctx, port_num) ||
        !port_gid(ctx->cfg, ctx->device_index, port_num, index, gid)) {
        return EINVAL;
    }
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = context_of(context);
    if (ctx == nullptr || entry == nullptr || flags != 0 ||
        entry_size < sizeof(struct ibv_gid_entry) || !valid_port(ctx, int(port_num))) {
        return EINVAL;
    }
    union ibv_gid gid;
    if (!port_gid(ctx->cfg, ctx->device_index, int(port_num), int(gid_index), &gid)) {
        return ENODATA;
    }
    std::memset(entry, 0, sizeof(*entry));
    entry->gid          = gid;
    entry->gid_index    = gid_index;
    entry->port_num     = port_num;
    entry->gid_type     = !ctx->cfg.ethernet ? IBV_GID_TYPE_IB :
                          (gid_index == 0)   ? IBV_GID_TYPE_ROCE_V1 :
                                               IBV_GID_TYPE_ROCE_V2;
    entry->ndev_ifindex = 0;
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
                             size_t max_entries, uint32_t flags, size_t entry_size)
{
    emu_context *ctx;
    int ports, gids;
    {
        std::lock_guard<std::mutex> guard(emu_lock());
        ctx = context_of(context);
        if (ctx == nullptr || flags != 0 || entry_size < sizeof(struct ibv_gid_entry)) {
            return -EINVAL;
        }
        ports = ctx->cfg.ports_per_device;
        gids  = port_gid_count(ctx->cfg);
    }
    size_t count = 0;
    for (int port = 1; port <= ports; ++port) {
        for (int index = 0; index < gids; ++index) {
            if (count >= max_entries) {
                return -EINVAL;
            }
            auto *entry = reinterpret_cast<struct ibv_gid_entry *>(
                reinterpret_cast<char *>(entries) + count * entry_size);
            int rc = _ibv_query_gid_ex(context, uint32_t(port), uint32_t(index), entry, 0,
                                       entry_size);
            if (rc != 0) {
                return -rc;
            }
            ++count;
        }
    }
    return ssize_t(count);
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = context_of(context);
    if (ctx == nullptr || pkey == nullptr || !valid_port(ctx, port_num) || index != 0) {
        return EINVAL;
    }
    *pkey = htobe16(0xffff);
    return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = context_of(context);
    if (ctx == nullptr || !valid_port(ctx, port_num)) {
        return -EINVAL;
    }
    return (be16toh(pkey) == 0xffff) ? 0 : -ENOENT;
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    int fd;
    {
        std::lock_guard<std::mutex> guard(emu_lock());
        emu_context *ctx = context_of(context);
        if (ctx == nullptr || event == nullptr) {
            errno = EINVAL;
            return -1;
        }
        fd = ctx->ibv.async_fd;
    }
    /* Blocks like an HCA with nothing to report (or EAGAIN if the caller
     * made the fd non-blocking). */
    uint64_t value;
    if (read(fd, &value, sizeof(value)) < 0) {
        return -1;
    }
    errno = EIO;
    return -1;
}

void ibv_ack_async_event(struct ibv_async_event *)
{
}

int ibv_fork_init(void)
{
    return 0;
}
