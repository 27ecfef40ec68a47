#include <ucs/sys/identity.h>

#include <ucs/sys/read_file.h>
#include <ucs/sys/sys_info.h>

#include <string>
#include <sys/stat.h>

namespace ucs::sys {

namespace {

constexpr uint64_t fnv_offset_basis = 14695981039346656037ull;
constexpr uint64_t fnv_prime        = 1099511628211ull;

uint64_t fnv1a(uint64_t hash, const std::string &text)
{
    for (unsigned char c : text) {
        hash ^= c;
        hash *= fnv_prime;
    }
    /* A separator, so that ("ab","c") and ("a","bc") hash differently. */
    hash ^= 0xff;
    hash *= fnv_prime;
    return hash;
}

/* Trailing newlines would make the same id from different sources differ. */
std::string read_trimmed(const char *path)
{
    std::string content;
    if (read_file_string(path, &content, 4096) != UCS_OK) {
        return {};
    }
    while (!content.empty() && ((content.back() == '\n') || (content.back() == ' '))) {
        content.pop_back();
    }
    return content;
}

const char *namespace_name(namespace_type type)
{
    switch (type) {
    case namespace_type::pid:
        return "pid";
    case namespace_type::user:
        return "user";
    case namespace_type::ipc:
        return "ipc";
    case namespace_type::net:
        return "net";
    case namespace_type::mnt:
        return "mnt";
    case namespace_type::uts:
        return "uts";
    }
    return nullptr;
}

} // namespace

uint64_t compute_machine_id()
{
    uint64_t hash       = fnv_offset_basis;
    hash                = fnv1a(hash, read_trimmed("/proc/sys/kernel/random/boot_id"));
    std::string machine = read_trimmed("/etc/machine-id");
    if (machine.empty()) {
        machine = read_trimmed("/var/lib/dbus/machine-id");
    }
    hash = fnv1a(hash, machine);
    hash = fnv1a(hash, host_name());
    return (hash != 0) ? hash : 1;
}

uint64_t machine_id()
{
    static const uint64_t value = compute_machine_id();
    return value;
}

uint64_t node_id(std::initializer_list<namespace_type> scope)
{
    uint64_t hash = machine_id();
    for (namespace_type type : scope) {
        uint64_t inode = 0; /* unreadable: the same for every such process */
        (void)namespace_inode(type, &inode);
        hash = fnv1a(hash, std::to_string(inode));
    }
    return (hash != 0) ? hash : 1;
}

ucs_status_t namespace_inode(namespace_type type, uint64_t *inode)
{
    const char *name = namespace_name(type);
    if ((name == nullptr) || (inode == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }

    const std::string path = std::string("/proc/self/ns/") + name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
        return UCS_ERR_NO_ELEM; /* kernel without namespaces, or no /proc */
    }
    *inode = static_cast<uint64_t>(st.st_ino);
    return UCS_OK;
}

uint64_t pid_namespace_id()
{
    uint64_t inode = 0;
    return (namespace_inode(namespace_type::pid, &inode) == UCS_OK) ? inode : 0;
}

uint64_t user_namespace_id()
{
    uint64_t inode = 0;
    return (namespace_inode(namespace_type::user, &inode) == UCS_OK) ? inode : 0;
}

int ptrace_scope()
{
    long long value = 0;
    if ((read_file_number("/proc/sys/kernel/yama/ptrace_scope", &value) != UCS_OK) || (value < 0) ||
        (value > 3)) {
        return -1;
    }
    return static_cast<int>(value);
}

} // namespace ucs::sys
