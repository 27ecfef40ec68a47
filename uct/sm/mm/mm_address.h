/*
 * The address of an mm iface, as peers receive it.
 */
#ifndef UCT_SM_MM_MM_ADDRESS_H
#define UCT_SM_MM_MM_ADDRESS_H

#include <cstdint>

namespace uct::mm {

/* What a peer needs to reach this iface. Packed: it travels as bytes. */
struct __attribute__((packed)) iface_address {
    uint32_t owner_pid;
    uint32_t wakeup_id;  /* names the owner's abstract wakeup socket */
    uint64_t segment_id; /* posix fd or sysv shmid */
    uint64_t segment_size;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(iface_address) == 24, "iface address layout");

} // namespace uct::mm

#endif
