/*
 * Who and where this process is: a node identity shared by every process on
 * the node (to decide "same node" for shared memory), the kernel namespaces
 * (CMA needs peers in the same pid namespace) and the ptrace policy.
 */
#ifndef UCS_SYS_IDENTITY_H
#define UCS_SYS_IDENTITY_H

#include <ucs/type/status.h>

#include <cstdint>
#include <initializer_list>

namespace ucs::sys {

/*
 * A 64-bit hash of the kernel boot id, /etc/machine-id and the host name:
 * equal for all processes of one node and one boot, different across nodes.
 * Computed once; never 0.
 */
uint64_t machine_id();

/* The same value, computed afresh (reads the files again). */
uint64_t compute_machine_id();

enum class namespace_type { pid, user, ipc, net, mnt, uts };

/*
 * machine_id() narrowed to the processes that also share the namespaces in
 * `scope`: what "same node" means to a transport (shared memory needs the
 * same ipc namespace, loopback tcp the same network namespace). Computed
 * afresh each call (callers cache it); never 0.
 */
uint64_t node_id(std::initializer_list<namespace_type> scope);

/* The inode number of /proc/self/ns/<type>: equal inodes, same namespace. */
ucs_status_t namespace_inode(namespace_type type, uint64_t *inode);

/* namespace_inode() of the pid / user namespace, or 0 if it is unreadable. */
uint64_t pid_namespace_id();
uint64_t user_namespace_id();

/* /proc/sys/kernel/yama/ptrace_scope (0..3), or -1 without Yama. */
int ptrace_scope();

} // namespace ucs::sys

#endif
