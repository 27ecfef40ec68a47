#include "config.h"

#include <cstdlib>
#include <cstring>

#include <endian.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

int env_int(const char *name, int fallback, int min, int max)
{
    const char *text = std::getenv(name);
    if (text == nullptr || *text == '\0') {
        return fallback;
    }
    char *end  = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < min || value > max) {
        return fallback;
    }
    return int(value);
}

} // namespace

config read_config()
{
    config cfg;
    cfg.device_count     = env_int("VERBS_EMU_DEVICES", 1, 1, kMaxDevices);
    cfg.ports_per_device = env_int("VERBS_EMU_PORTS", 1, 1, kMaxPortsPerDevice);
    const char *link     = std::getenv("VERBS_EMU_LINK_LAYER");
    cfg.ethernet         = (link != nullptr) &&
                   (strcasecmp(link, "ethernet") == 0 || strcasecmp(link, "roce") == 0);
    return cfg;
}

std::string fabric_name()
{
    const char *name = std::getenv("VERBS_EMU_FABRIC");
    if (name != nullptr && *name != '\0') {
        /* shm_open wants exactly one leading slash */
        std::string full = (name[0] == '/') ? "" : "/";
        full += name;
        return full;
    }
    std::string full = "/verbs_emu.";
    full += std::to_string(getuid());
    return full;
}

uint64_t node_guid(int device_index)
{
    /* "VERBSE" followed by the device index: recognisable in dumps */
    return 0x5645524253450000ull | (uint64_t(device_index & 0xff) << 8);
}

uint16_t port_lid(const config &cfg, int device_index, int port_num)
{
    if (cfg.ethernet) {
        return 0;
    }
    return uint16_t(1 + device_index * kMaxPortsPerDevice + port_num - 1);
}

int port_gid_count(const config &cfg)
{
    return cfg.ethernet ? 2 : 1;
}

bool port_gid(const config &cfg, int device_index, int port_num, int gid_index, union ibv_gid *gid)
{
    if (gid_index < 0 || gid_index >= port_gid_count(cfg)) {
        return false;
    }
    std::memset(gid->raw, 0, sizeof(gid->raw));
    if (gid_index == 0) {
        /* link-local: fe80::<port guid> */
        gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
        gid->global.interface_id  = htobe64(node_guid(device_index) | uint64_t(port_num));
    } else {
        /* RoCE v2 style IPv4-mapped address ::ffff:127.0.0.1 */
        gid->raw[10] = 0xff;
        gid->raw[11] = 0xff;
        gid->raw[12] = 127;
        gid->raw[15] = 1;
    }
    return true;
}

bool port_owns_gid(const config &cfg, int device_index, int port_num, const union ibv_gid &gid)
{
    for (int i = 0; i < port_gid_count(cfg); ++i) {
        union ibv_gid own;
        if (port_gid(cfg, device_index, port_num, i, &own) &&
            std::memcmp(own.raw, gid.raw, sizeof(own.raw)) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace verbs_emu
