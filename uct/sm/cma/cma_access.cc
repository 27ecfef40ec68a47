#include <uct/sm/cma/cma_access.h>

#include <ucs/debug/log.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace uct::cma {

namespace {

constexpr unsigned CAP_SYS_PTRACE_BIT = 19;   /* from linux/capability.h */

/* Reads a small text file; false if it cannot be opened or read. */
bool read_small_file(const char *path, std::string *text, int *err)
{
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return false;
    }
    char buf[4096];
    text->clear();
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n < 0) {
            *err = errno;
            ::close(fd);
            return false;
        }
        if (n == 0) {
            break;
        }
        text->append(buf, size_t(n));
        if (text->size() > (1u << 20)) {
            break;     /* no file we read is this long: stop, the parse fails */
        }
    }
    ::close(fd);
    return true;
}

uint64_t fnv1a(const std::string &text)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    for (unsigned char c : text) {
        hash = (hash ^ c) * 0x100000001b3ull;
    }
    return hash;
}

uint64_t ns_inode(const char *path)
{
    struct stat st;
    return (::stat(path, &st) == 0) ? uint64_t(st.st_ino) : 0;
}

uint64_t node_id()
{
    std::string text;
    int err;
    if (read_small_file("/proc/sys/kernel/random/boot_id", &text, &err) &&
        !text.empty()) {
        return fnv1a(text);
    }
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    return fnv1a(host) ^ uint64_t(gethostid());
}

} // namespace

ucs_status_t read_ptrace_scope(const char *path, int *scope_p)
{
    std::string text;
    int err = 0;
    if (!read_small_file(path, &text, &err)) {
        if (err == ENOENT) {
            *scope_p = YAMA_ABSENT;
            return UCS_OK;
        }
        ucs_diag("cannot read %s: %s", path, strerror(err));
        return UCS_ERR_INVALID_PARAM;
    }
    /* One small decimal number, optionally followed by a newline. */
    while (!text.empty() && ((text.back() == '\n') || (text.back() == ' '))) {
        text.pop_back();
    }
    if (text.empty() || (text.size() > 3) ||
        (text.find_first_not_of("0123456789") != std::string::npos)) {
        ucs_diag("unexpected content in %s", path);
        return UCS_ERR_INVALID_PARAM;
    }
    *scope_p = std::stoi(text);
    return UCS_OK;
}

bool status_has_cap_sys_ptrace(const char *status_path)
{
    std::string text;
    int err;
    if (!read_small_file(status_path, &text, &err)) {
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
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
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
        *reason = "cannot determine the Yama ptrace policy from " +
                  config.ptrace_scope_file;
        return false;
    }
    bool cap = (scope == 2) && status_has_cap_sys_ptrace("/proc/self/status");
    return ptrace_policy_allows(scope, cap, reason) && cma_syscall_works(reason);
}

node_identity local_node_identity()
{
    return {node_id(), ns_inode("/proc/self/ns/pid"), ns_inode("/proc/self/ns/user")};
}

} // namespace uct::cma
