/* Completion channels: a bound datagram socket per channel. The datagrams
 * only make the fd readable; which CQs fired is read from their arm words
 * in the fabric, so a lost or duplicate datagram cannot lose an event. */
#include "objects.h"

#include <cerrno>
#include <cstring>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

bool cq_fired(const emu_cq *cq)
{
    if (cq->events_pending > 0) {
        return true;
    }
    if (!cq->arm_pending) {
        return false;
    }
    std::atomic<uint64_t> *word = fabric_cq_notify_word(cq->notify_slot);
    return word != nullptr && (word->load(std::memory_order_acquire) & 1) == 0;
}

emu_cq *take_fired(emu_channel *channel)
{
    for (emu_cq *cq : channel->cqs) {
        if (!cq_fired(cq)) {
            continue;
        }
        if (cq->events_pending > 0) {
            --cq->events_pending;
        } else {
            cq->arm_pending = false;
        }
        return cq;
    }
    return nullptr;
}

bool socket_has_datagram(int fd)
{
    char token;
    return recv(fd, &token, sizeof(token), MSG_PEEK | MSG_DONTWAIT) >= 0;
}

} // namespace

} // namespace verbs_emu

using namespace verbs_emu;

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = lookup<emu_context>(context);
    if (ctx == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    auto *channel = new (std::nothrow) emu_channel();
    if (channel == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    channel->address = make_channel_address();
    int fd           = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr;
    std::memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, channel->address.data(), channel->address.size());
    socklen_t length = socklen_t(offsetof(struct sockaddr_un, sun_path) + 1 +
                                 channel->address.size());
    if (fd < 0 || bind(fd, reinterpret_cast<struct sockaddr *>(&addr), length) != 0) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
        }
        delete channel;
        errno = err;
        return nullptr;
    }
    channel->ibv.context = context;
    channel->ibv.fd      = fd;
    channel->ibv.refcnt  = 0;
    ++ctx->users;
    register_object(channel);
    return &channel->ibv;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ibv_channel)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_channel *channel = lookup<emu_channel>(ibv_channel);
    if (channel == nullptr) {
        return EINVAL;
    }
    if (!channel->cqs.empty()) {
        return EBUSY;
    }
    emu_context *ctx = lookup<emu_context>(channel->ibv.context);
    if (ctx != nullptr) {
        --ctx->users;
    }
    unregister_object(channel);
    close(channel->ibv.fd);
    delete channel;
    return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ibv_channel, struct ibv_cq **cq_out,
                     void **cq_context)
{
    bool consumed_datagram = false;
    for (;;) {
        int fd;
        {
            std::lock_guard<std::mutex> guard(emu_lock());
            emu_channel *channel = lookup<emu_channel>(ibv_channel);
            if (channel == nullptr || cq_out == nullptr || cq_context == nullptr) {
                errno = EINVAL;
                return -1;
            }
            fd         = channel->ibv.fd;
            emu_cq *cq = take_fired(channel);
            if (cq != nullptr) {
                char token;
                if (!consumed_datagram) {
                    (void)recv(fd, &token, sizeof(token), MSG_DONTWAIT);
                }
                /* more events to hand out: the fd must stay readable */
                for (emu_cq *other : channel->cqs) {
                    if (cq_fired(other) && !socket_has_datagram(fd)) {
                        notify_send(channel->address.c_str());
                        break;
                    }
                }
                ++cq->events_reported;
                *cq_out     = &cq->ibv;
                *cq_context = cq->ibv.cq_context;
                return 0;
            }
        }
        /* blocks unless the application made the fd non-blocking */
        char token;
        if (recv(fd, &token, sizeof(token), 0) < 0) {
            return -1;
        }
        consumed_datagram = true;
    }
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    if (cq == nullptr) {
        return;
    }
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
