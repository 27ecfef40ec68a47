/*
 * The active messages of an in-process test transport (the zero-copy fake
 * of tests/ucp/fake_transport.cc, the testloop module): queued at send time
 * and delivered from progress, in order. Zero-copy entries are read only
 * then, from the sender's memory, as a NIC would, and the send completes
 * after the handler ran.
 */
#ifndef TESTS_COMMON_QUEUED_AM_H
#define TESTS_COMMON_QUEUED_AM_H

#include <uct/base/uct_iface.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace test {

template <typename Ep>
class queued_ams {
public:
    struct message {
        Ep *ep;
        uct::am_id_t id;
        std::vector<uint8_t> bytes; /* the header, or the whole bcopy payload */
        std::vector<uct::iov> iov;  /* zcopy data, still in the sender's memory */
        uct::completion *comp;
    };

    void push(message &&msg) { queue_.push_back(std::move(msg)); }
    size_t size() const { return queue_.size(); }

    /* Drops what `ep` still has queued: nothing of it completes. */
    void forget(const Ep *ep)
    {
        for (auto it = queue_.begin(); it != queue_.end();) {
            it = (it->ep == ep) ? queue_.erase(it) : it + 1;
        }
    }

    /* Hands every queued message to `handler(id, data, length)` (the iface's
     * invoke_am_handler) and completes its send; returns how many. */
    template <typename Handler>
    unsigned deliver(Handler &&handler)
    {
        unsigned count = 0;
        while (!queue_.empty()) {
            message msg = std::move(queue_.front());
            queue_.pop_front();
            for (const uct::iov &e : msg.iov) {
                const auto *p = static_cast<const uint8_t *>(e.buffer);
                msg.bytes.insert(msg.bytes.end(), p, p + e.length);
            }
            handler(msg.id, msg.bytes.data(), msg.bytes.size());
            if (msg.comp != nullptr) {
                uct::invoke_completion(msg.comp, UCS_OK);
            }
            ++count;
        }
        return count;
    }

private:
    std::deque<message> queue_;
};

} // namespace test

#endif
