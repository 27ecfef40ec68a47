/*
 * The send or receive buffers of an iface's connections, all of one size.
 * A connection holds one only while data waits in it (tcp_tx_queue.h,
 * tcp_conn.h), so an iface needs as many as are busy at once. Up to
 * KEEP_IDLE returned buffers wait for the next user; beyond that a returned
 * buffer is unmapped: a burst, such as thousands of connections set up at
 * once, each holding its first send until connected, leaves nothing
 * resident behind. Each buffer is its own page-aligned mapping, so nothing
 * of the pool's shares its pages.
 */
#ifndef UCT_TCP_TCP_BUFFERS_H
#define UCT_TCP_TCP_BUFFERS_H

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace uct::tcp {

class buffer_pool {
public:
    static constexpr unsigned KEEP_IDLE = 16;

    buffer_pool() = default;
    ~buffer_pool();
    buffer_pool(const buffer_pool &)            = delete;
    buffer_pool &operator=(const buffer_pool &) = delete;

    ucs_status_t init(const char *name, size_t size);

    /* A buffer of at least size() bytes; nullptr without memory. */
    uint8_t *get()
    {
        if (ucs_likely(!idle_.empty())) {
            uint8_t *buffer = idle_.back();
            idle_.pop_back();
            ++in_use_;
            return buffer;
        }
        return allocate();
    }

    void put(uint8_t *buffer)
    {
        --in_use_;
        if (ucs_likely(idle_.size() < KEEP_IDLE)) {
            idle_.push_back(buffer); /* reserved: never allocates */
        } else {
            release(buffer);
        }
    }

    size_t size() const { return size_; }
    /* Buffers handed out now, and waiting in the pool (tests, diagnostics). */
    unsigned in_use() const { return in_use_; }
    size_t idle() const { return idle_.size(); }

private:
    uint8_t *allocate();
    void release(uint8_t *buffer) const;

    std::string name_;
    size_t size_     = 0; /* a page multiple */
    unsigned in_use_ = 0;
    std::vector<uint8_t *> idle_;
};

} // namespace uct::tcp

#endif
