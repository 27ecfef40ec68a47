#include <uct/sm/cma/cma_access.h>

#include <ucs/debug/log.h>
#include <ucs/sys/identity.h>
#include <ucs/sys/read_file.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/uio.h>
#include <unistd.h>

namespace uct::cma {

namespace {

constexpr unsigned CAP_SYS_PTRACE_BIT = 19; /* from linux/capability.h */

} // namespace

ucs_status_t read_ptrace_scope(const char *path, int *scope_p)
{
    long long value;
    const ucs_status_t status = ucs::sys::read_file_number(path, &value);
    if (status == UCS_ERR_NO_ELEM) {
        *scope_p = YAMA_ABSENT;
        return UCS_OK;
    }
    /* One small decimal number. */
    if ((status != UCS_OK) || (value < 0) || (value > 999)) {
        ucs_diag("cannot read a ptrace scope from %s: %s", path,
                 (status != UCS_OK) ? ucs_status_string(status) : "out of range");
        return UCS_ERR_INVALID_PARAM;
    }
    *scope_p = int(value);
    return UCS_OK;
}

bool status_has_cap_sys_ptrace(const char *status_path)
{
    std::string text;
    if (ucs::sys::read_file_string(status_path, &text) != UCS_OK) {
        return false;
    }
    size_t pos = text.find("\nCapEff:");
    if (pos == std::string::npos) {
        return false;
    }
    unsigned long long caps = 0;
    if (std::sscanf(text.c_str() + pos + 8, "%llx", &caps) != 1) {
        return false;
    }
    return (caps >> CAP_SYS_PTRACE_BIT) & 1;
}

bool ptrace_policy_allows(int scope, bool cap_sys_ptrace, std::string *reason)
{
    switch (scope) {
    case YAMA_ABSENT:
    case 0:
    case 1:
        return true;
    case 2:
        if (cap_sys_ptrace) {
            return true;
        }
        *reason = "Yama ptrace_scope is 2 (admin-only attach) and this process "
                  "lacks CAP_SYS_PTRACE";
        return false;
    case 3:
        *reason = "Yama ptrace_scope is 3 (attach disabled)";
        return false;
    default:
        *reason = "Yama ptrace_scope " + std::to_string(scope) + " is unknown";
        return false;
    }
}

bool cma_syscall_works(std::string *reason)
{
    /* Reading our own memory needs no ptrace permission, so a failure here
     * means the kernel lacks CMA or a seccomp filter blocks it. */
    uint64_t src = 0x636d61, dst = 0;
    struct iovec local  = {&dst, sizeof(dst)};
    struct iovec remote = {&src, sizeof(src)};
    ssize_t n           = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if ((n == ssize_t(sizeof(dst))) && (dst == src)) {
        return true;
    }
    *reason = std::string("process_vm_readv does not work here: ") +
              ((n < 0) ? strerror(errno) : "short read");
    return false;
}

bool cma_usable(const cma_config &config, std::string *reason)
{
    int scope;
    if (read_ptrace_scope(config.ptrace_scope_file.c_str(), &scope) != UCS_OK) {
        *reason = "cannot determine the Yama ptrace policy from " + config.ptrace_scope_file;
        return false;
    }
    bool cap = (scope == 2) && status_has_cap_sys_ptrace("/proc/self/status");
    return ptrace_policy_allows(scope, cap, reason) && cma_syscall_works(reason);
}

node_identity local_node_identity()
{
    return {ucs::sys::machine_id(), ucs::sys::pid_namespace_id(), ucs::sys::user_namespace_id()};
}

} // namespace uct::cma
