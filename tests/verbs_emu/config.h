/*
 * What the emulated HCA looks like, read from VERBS_EMU_* variables. The
 * LIDs and GUIDs depend only on device and port indices, so every process
 * of the machine computes the same addresses for the same "hardware".
 */
#ifndef VERBS_EMU_CONFIG_H
#define VERBS_EMU_CONFIG_H

#include "verbs_api.h"

#include <cstdint>
#include <string>

namespace verbs_emu {

constexpr int kMaxDevices           = 64;
constexpr int kMaxPortsPerDevice    = 16; /* LIDs are spaced 16 apart */
constexpr uint32_t kPortMtuBytes    = 4096;
constexpr uint64_t kMaxMessageBytes = 1ull << 30;
constexpr uint32_t kMaxInlineData   = 512;

struct config {
    int device_count     = 1;
    int ports_per_device = 1;
    bool ethernet        = false;
};

/* Reads the environment now (devices, ports, link layer). */
config read_config();

/* The fabric's shared-memory name (VERBS_EMU_FABRIC or /verbs_emu.<uid>). */
std::string fabric_name();

uint64_t node_guid(int device_index);
uint16_t port_lid(const config &cfg, int device_index, int port_num);
int port_gid_count(const config &cfg);
/* False if `gid_index` does not exist on the port. */
bool port_gid(const config &cfg, int device_index, int port_num, int gid_index, union ibv_gid *gid);
/* Whether `gid` is one of the GIDs of the port. */
bool port_owns_gid(const config &cfg, int device_index, int port_num, const union ibv_gid &gid);

} // namespace verbs_emu

#endif
