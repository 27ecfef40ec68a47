/*
 * One verbs device opened by an md: its context, protection domain, device
 * and port attributes, and the GID each port uses. Also what every verbs
 * transport puts on the wire about a port (the device address) and the
 * translation of verbs errors to statuses.
 */
#ifndef UCT_IB_IB_DEVICE_H
#define UCT_IB_IB_DEVICE_H

#include <uct/ib/ib_config.h>

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace uct::ib {

struct port_info {
    uint8_t num = 0; /* 1-based, as verbs counts */
    ibv_port_attr attr{};
    bool ethernet = false; /* RoCE: routed by GID, no LID */
    int gid_index = 0;
    ibv_gid gid{};
};

class device {
public:
    /* Opens `name` (an entry of device_names()); logs why not. */
    static ucs_status_t open(const std::string &name, const ib_md_config &config,
                             std::unique_ptr<device> *device_p);
    ~device();
    device(const device &)            = delete;
    device &operator=(const device &) = delete;

    const std::string &name() const { return name_; }
    ibv_context *context() const { return context_; }
    ibv_pd *pd() const { return pd_; }
    const ibv_device_attr &attr() const { return attr_; }
    const std::vector<port_info> &ports() const { return ports_; }
    /* The port numbered `num` if it is active; nullptr otherwise. */
    const port_info *active_port(unsigned num) const;

private:
    device() = default;

    std::string name_;
    ibv_context *context_ = nullptr;
    ibv_pd *pd_           = nullptr;
    ibv_device_attr attr_{};
    std::vector<port_info> ports_;
};

/* The names of the verbs devices on this machine (empty without any). */
std::vector<std::string> device_names();

/* "mlx5_0:1" -> ("mlx5_0", 1); false for another shape. */
bool parse_port_name(const std::string &dev_name, std::string *device, unsigned *port);

/*
 * A port as a peer sees it. InfiniBand routes by LID within a subnet (the
 * GID's first 8 bytes); RoCE by GID.
 */
struct device_address {
    uint16_t lid;
    uint8_t flags; /* ETHERNET */
    uint8_t reserved[5];
    uint8_t gid[16];
    static constexpr uint8_t ETHERNET = 1u << 0;
};
static_assert(sizeof(device_address) == 24, "device_address layout");

device_address pack_device_address(const port_info &port);
/* Whether a peer port at `peer` can be reached from `port`. */
bool port_reaches(const port_info &port, const device_address &peer);

/* Fills the address vector of a QP or AH toward `peer` from `port`. */
void fill_ah_attr(const port_info &port, const device_address &peer, uint8_t sl,
                  uint8_t traffic_class, uint8_t hop_limit, ibv_ah_attr *ah);

/* The status an upper layer sees for a failed work completion. */
ucs_status_t wc_status_to_ucs(ibv_wc_status status);

/* A port's data rate in bytes per second, from its width and speed (the
 * transports' performance model). */
double port_bandwidth(const ibv_port_attr &attr);

/* The verbs MTU enum of `bytes` (256..4096), clamped. */
ibv_mtu mtu_enum(unsigned bytes);
unsigned mtu_bytes(ibv_mtu mtu);

} // namespace uct::ib

#endif
