#include <uct/ib/ib_device.h>

#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace uct::ib {

namespace {

/* RoCE v2 over IPv4 shows its GID as ::ffff:a.b.c.d. */
bool is_ipv4_mapped(const ibv_gid &gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(gid.raw, prefix, sizeof(prefix)) == 0;
}

/* The GID a port uses: the configured index; otherwise index 0 on
 * InfiniBand and, on RoCE, the first IPv4-mapped GID (routable, as UCX
 * prefers), else index 0. False if the configured index does not exist. */
bool select_gid(ibv_context *ctx, port_info *port, unsigned long wanted)
{
    const int table_len = port->attr.gid_tbl_len;
    if (wanted != ucs::config::ulong_auto) {
        if ((int(wanted) >= table_len) ||
            (ibv_query_gid(ctx, port->num, int(wanted), &port->gid) != 0)) {
            return false;
        }
        port->gid_index = int(wanted);
        return true;
    }
    port->gid_index = 0;
    if (ibv_query_gid(ctx, port->num, 0, &port->gid) != 0) {
        std::memset(&port->gid, 0, sizeof(port->gid));
    }
    if (!port->ethernet) {
        return true;
    }
    for (int i = 0; i < table_len; ++i) {
        ibv_gid gid;
        if ((ibv_query_gid(ctx, port->num, i, &gid) == 0) && is_ipv4_mapped(gid)) {
            port->gid_index = i;
            port->gid       = gid;
            break;
        }
    }
    return true;
}

} // namespace

ucs_status_t device::open(const std::string &name, const ib_md_config &config,
                          std::unique_ptr<device> *device_p)
{
    int count         = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr) {
        return UCS_ERR_NO_DEVICE;
    }
    ibv_device *found = nullptr;
    for (int i = 0; i < count; ++i) {
        if (name == ibv_get_device_name(list[i])) {
            found = list[i];
            break;
        }
    }
    std::unique_ptr<device> dev(new device());
    dev->name_    = name;
    dev->context_ = (found != nullptr) ? ibv_open_device(found) : nullptr;
    ibv_free_device_list(list);
    if (dev->context_ == nullptr) {
        ucs_debug("ib: cannot open device %s", name.c_str());
        return UCS_ERR_NO_DEVICE;
    }
    if (ibv_query_device(dev->context_, &dev->attr_) != 0) {
        ucs_error("ib: ibv_query_device(%s) failed: %m", name.c_str());
        return UCS_ERR_IO_ERROR;
    }
    for (unsigned num = 1; num <= dev->attr_.phys_port_cnt; ++num) {
        port_info port;
        port.num = uint8_t(num);
        if (ibv_query_port(dev->context_, port.num, &port.attr) != 0) {
            ucs_debug("ib: cannot query %s:%u: %m", name.c_str(), num);
            continue;
        }
        port.ethernet = (port.attr.link_layer == IBV_LINK_LAYER_ETHERNET);
        if (!select_gid(dev->context_, &port, config.gid_index)) {
            ucs_error("ib: %s:%u has no GID index %lu (UCX_IB_GID_INDEX)", name.c_str(), num,
                      config.gid_index);
            return UCS_ERR_INVALID_PARAM;
        }
        dev->ports_.push_back(port);
    }
    dev->pd_ = ibv_alloc_pd(dev->context_);
    if (dev->pd_ == nullptr) {
        ucs_error("ib: ibv_alloc_pd(%s) failed: %m", name.c_str());
        return UCS_ERR_NO_MEMORY;
    }
    *device_p = std::move(dev);
    return UCS_OK;
}

device::~device()
{
    if (pd_ != nullptr) {
        ibv_dealloc_pd(pd_);
    }
    if (context_ != nullptr) {
        ibv_close_device(context_);
    }
}

const port_info *device::active_port(unsigned num) const
{
    for (const port_info &p : ports_) {
        if ((p.num == num) && (p.attr.state == IBV_PORT_ACTIVE)) {
            return &p;
        }
    }
    return nullptr;
}

std::vector<std::string> device_names()
{
    std::vector<std::string> names;
    int count         = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr) {
        return names;
    }
    for (int i = 0; i < count; ++i) {
        names.emplace_back(ibv_get_device_name(list[i]));
    }
    ibv_free_device_list(list);
    return names;
}

bool parse_port_name(const std::string &dev_name, std::string *device, unsigned *port)
{
    const size_t colon = dev_name.rfind(':');
    if ((colon == std::string::npos) || (colon == 0) || (colon + 1 >= dev_name.size())) {
        return false;
    }
    char *end               = nullptr;
    const unsigned long num = std::strtoul(dev_name.c_str() + colon + 1, &end, 10);
    if ((*end != '\0') || (num == 0) || (num > 255)) {
        return false;
    }
    *device = dev_name.substr(0, colon);
    *port   = unsigned(num);
    return true;
}

device_address pack_device_address(const port_info &port)
{
    device_address a{};
    a.lid   = port.ethernet ? 0 : port.attr.lid;
    a.flags = port.ethernet ? device_address::ETHERNET : 0;
    std::memcpy(a.gid, port.gid.raw, sizeof(a.gid));
    return a;
}

bool port_reaches(const port_info &port, const device_address &peer)
{
    const bool peer_ethernet = (peer.flags & device_address::ETHERNET) != 0;
    if (peer_ethernet != port.ethernet) {
        return false;
    }
    if (port.ethernet) {
        return true; /* routed by GID */
    }
    /* One subnet (the GID's prefix), reached by LID. */
    return (peer.lid != 0) && (std::memcmp(peer.gid, port.gid.raw, 8) == 0);
}

void fill_ah_attr(const port_info &port, const device_address &peer, uint8_t sl,
                  uint8_t traffic_class, uint8_t hop_limit, ibv_ah_attr *ah)
{
    std::memset(ah, 0, sizeof(*ah));
    ah->port_num = port.num;
    ah->sl       = sl;
    ah->dlid     = peer.lid;
    if (port.ethernet) {
        ah->is_global         = 1;
        ah->grh.sgid_index    = uint8_t(port.gid_index);
        ah->grh.hop_limit     = hop_limit;
        ah->grh.traffic_class = traffic_class;
        std::memcpy(ah->grh.dgid.raw, peer.gid, sizeof(peer.gid));
    }
}

ucs_status_t wc_status_to_ucs(ibv_wc_status status)
{
    switch (status) {
    case IBV_WC_SUCCESS:
        return UCS_OK;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
        return UCS_ERR_INVALID_ADDR;
    case IBV_WC_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

double port_bandwidth(const ibv_port_attr &attr)
{
    double lanes = 1;
    // clang-format off
    switch (attr.active_width) {
    case 2:  lanes = 4;  break;
    case 4:  lanes = 8;  break;
    case 8:  lanes = 12; break;
    case 16: lanes = 2;  break;
    default: lanes = 1;  break;
    }
    double gbps;     /* per lane, after encoding */
    switch (attr.active_speed) {
    case 1:   gbps = 2.5 * 0.8;            break;  /* SDR */
    case 2:   gbps = 5.0 * 0.8;            break;  /* DDR */
    case 4:   gbps = 10.0 * 0.8;           break;  /* QDR */
    case 8:   gbps = 10.3125 * 64 / 66;    break;  /* FDR10 */
    case 16:  gbps = 14.0625 * 64 / 66;    break;  /* FDR */
    case 32:  gbps = 25.78125 * 64 / 66;   break;  /* EDR */
    case 64:  gbps = 53.125 * 64 / 66;     break;  /* HDR */
    case 128: gbps = 106.25 * 64 / 66;     break;  /* NDR */
    default:  gbps = 25.78125 * 64 / 66;   break;
    }
    // clang-format on
    return lanes * gbps * 1e9 / 8;
}

ibv_mtu mtu_enum(unsigned bytes)
{
    if (bytes >= 4096) {
        return IBV_MTU_4096;
    }
    if (bytes >= 2048) {
        return IBV_MTU_2048;
    }
    if (bytes >= 1024) {
        return IBV_MTU_1024;
    }
    return (bytes >= 512) ? IBV_MTU_512 : IBV_MTU_256;
}

unsigned mtu_bytes(ibv_mtu mtu)
{
    return 128u << unsigned(mtu); /* IBV_MTU_256 is 1 */
}

} // namespace uct::ib
