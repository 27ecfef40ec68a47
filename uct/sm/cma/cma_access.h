/*
 * Whether this process may use CMA at all, and who it can reach.
 * process_vm_readv/writev need ptrace-attach permission on the peer: the
 * Yama LSM, capabilities, seccomp and namespaces can each forbid it. The
 * transport checks up front and reports itself unusable rather than
 * failing on every operation.
 */
#ifndef UCT_SM_CMA_CMA_ACCESS_H
#define UCT_SM_CMA_CMA_ACCESS_H

#include <uct/sm/cma/cma_config.h>

#include <ucs/type/status.h>

#include <cstdint>
#include <string>

namespace uct::cma {

/* Yama's ptrace_scope when the LSM is absent (no file to read). */
constexpr int YAMA_ABSENT = -1;

/*
 * Reads a Yama ptrace_scope file. A missing file gives YAMA_ABSENT; an
 * unreadable or malformed one is UCS_ERR_INVALID_PARAM.
 */
ucs_status_t read_ptrace_scope(const char *path, int *scope_p);

/* Whether CAP_SYS_PTRACE is in the effective set of a /proc/<pid>/status file. */
bool status_has_cap_sys_ptrace(const char *status_path);

/*
 * The decision itself, from the facts: scope 0 (or no Yama) allows peers of
 * the same user; scope 1 allows them because every cma iface declares
 * PR_SET_PTRACER_ANY; scope 2 needs CAP_SYS_PTRACE; scope 3 forbids all.
 * On refusal `*reason` says why.
 */
bool ptrace_policy_allows(int scope, bool cap_sys_ptrace, std::string *reason);

/* Whether process_vm_readv works here (kernel support, not blocked by seccomp). */
bool cma_syscall_works(std::string *reason);

/* All checks together, as resource discovery and iface_open use them. */
bool cma_usable(const cma_config &config, std::string *reason);

/*
 * Who we are, as the device address says: peers can use CMA on each other
 * only on the same node (boot) and in the same pid and user namespaces.
 */
struct node_identity {
    uint64_t node_id; /* ucs::sys::machine_id(): boot, machine and host name */
    uint64_t pid_ns;  /* inode of /proc/self/ns/pid */
    uint64_t user_ns; /* inode of /proc/self/ns/user */

    bool operator==(const node_identity &) const = default;
};
/* Frozen (the device address): changing it requires bumping ucp::address_version. */
static_assert(sizeof(node_identity) == 24, "device address layout");

node_identity local_node_identity();

} // namespace uct::cma

#endif
