#include "notify.h"

#include "fabric.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

std::once_flag g_socket_once;
int g_send_socket = -1;
std::atomic<unsigned> g_channel_counter{0};

int send_socket()
{
    std::call_once(g_socket_once, [] {
        g_send_socket = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    });
    return g_send_socket;
}

} // namespace

std::string make_channel_address()
{
    return "verbs_emu." + std::to_string(getuid()) + "." + std::to_string(getpid()) + "." +
           std::to_string(g_channel_counter.fetch_add(1));
}

void notify_send(const char *address)
{
    int fd        = send_socket();
    size_t length = strnlen(address, kNotifyAddressBytes);
    if (fd < 0 || length == 0) {
        return;
    }
    struct sockaddr_un addr;
    std::memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, address, length);
    socklen_t addr_length = socklen_t(offsetof(struct sockaddr_un, sun_path) + 1 + length);
    const char token      = 'e';
    /* A full queue means the fd is readable already; a missing address
     * means the channel (or its process) is gone. Neither needs more. */
    (void)sendto(fd, &token, sizeof(token), MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<struct sockaddr *>(&addr), addr_length);
}

void notify_fire(uint32_t slot, const char *address)
{
    std::atomic<uint64_t> *word = fabric_cq_notify_word(slot);
    if (word == nullptr) {
        return;
    }
    uint64_t value = word->load(std::memory_order_acquire);
    while (value & 1) {
        if (word->compare_exchange_weak(value, value & ~uint64_t(1))) {
            notify_send(address);
            return;
        }
    }
}

} // namespace verbs_emu
