/*
 * Identity of "this node" for the shared-memory transports: two processes
 * can share memory only if they run on the same boot of the same machine and
 * see the same pid, IPC and network namespaces (pids name segment owners,
 * sysv ids live in the IPC namespace, the wakeup socket in the network one).
 */
#ifndef UCT_SM_MM_MM_NODE_H
#define UCT_SM_MM_MM_NODE_H

#include <cstdint>

namespace uct::mm {

/* A 64-bit hash of boot id, host name and namespaces; computed once. */
uint64_t node_id();

} // namespace uct::mm

#endif
