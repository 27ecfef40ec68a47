#include "mm_node.h"

#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace uct::mm {

namespace {

/* FNV-1a: small, stable, good enough to tell machines apart. */
void hash_bytes(uint64_t *hash, const void *data, size_t length)
{
    auto *p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < length; ++i) {
        *hash = (*hash ^ p[i]) * 0x100000001b3ull;
    }
}

void hash_file(uint64_t *hash, const char *path)
{
    char buf[128];
    FILE *f = std::fopen(path, "r");
    if (f == nullptr) {
        return;
    }
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    std::fclose(f);
    hash_bytes(hash, buf, n);
}

void hash_link(uint64_t *hash, const char *path)
{
    char buf[128];
    ssize_t n = readlink(path, buf, sizeof(buf));
    if (n > 0) {
        hash_bytes(hash, buf, size_t(n));
    }
}

uint64_t compute_node_id()
{
    uint64_t hash = 0xcbf29ce484222325ull;
    hash_file(&hash, "/proc/sys/kernel/random/boot_id");
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) {
        hash_bytes(&hash, host, std::strlen(host));
    }
    hash_link(&hash, "/proc/self/ns/pid");
    hash_link(&hash, "/proc/self/ns/ipc");
    hash_link(&hash, "/proc/self/ns/net");
    return hash;
}

} // namespace

uint64_t node_id()
{
    static const uint64_t id = compute_node_id();
    return id;
}

} // namespace uct::mm
