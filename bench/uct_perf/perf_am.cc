/*
 * Active-message benchmarks. Latency: the initiator sends message i and
 * waits for the responder's echo of it; each round trip is one iteration of
 * the timeline. Bandwidth: the initiator streams its messages, retrying on
 * NO_RESOURCE (one iteration per message), and stops the clock on the
 * responder's acknowledgement of the last one.
 */
#include "perf_tests.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

namespace perf {

namespace {

constexpr uct::am_id_t DATA_ID = 1;
constexpr uct::am_id_t ACK_ID  = 2;
constexpr size_t AM_HEADER = sizeof(uint64_t);

/* Written only by the thread that runs the handler; read by the waiter. */
struct am_counter {
    std::atomic<uint64_t> count{0};

    static ucs_status_t handler(void *arg, void *, size_t, unsigned)
    {
        auto *c = static_cast<am_counter*>(arg);
        c->count.store(c->count.load(std::memory_order_relaxed) + 1,
                       std::memory_order_release);
        return UCS_OK;
    }

    uint64_t get() const { return count.load(std::memory_order_acquire); }
};

struct bcopy_source {
    const uint8_t *data;
    size_t        length;
};

size_t pack_bcopy(void *dest, void *arg)
{
    auto *src = static_cast<bcopy_source*>(arg);
    std::memcpy(dest, src->data, src->length);
    return src->length;
}

bool uses_short(test_kind kind)
{
    return (kind == test_kind::AM_SHORT_LAT) || (kind == test_kind::AM_SHORT_BW);
}

/* Sends one data message, progressing while the transport is out of room. */
class am_sender {
public:
    am_sender(transport &t, const options &opts) :
        t_(t), ep_(t.ep()), short_(uses_short(opts.test)), payload_(opts.size, 0x5a),
        src_{payload_.data(), opts.size}
    {
    }

    bool check_limits(const options &opts) const
    {
        const uct::op_limits &am = t_.attr().am;
        uint64_t need = short_ ? uct::iface_flag::AM_SHORT : uct::iface_flag::AM_BCOPY;
        if (!(t_.attr().flags & need)) {
            std::fprintf(stderr, "%s: %s has no %s\n", tool_name,
                         t_.description().c_str(), short_ ? "AM short" : "AM bcopy");
            return false;
        }
        if (short_ && ((opts.size < AM_HEADER) || (opts.size > am.max_short))) {
            std::fprintf(stderr, "%s: AM short size must be in [%zu, %zu] "
                         "(the 8-byte header included)\n", tool_name, AM_HEADER,
                         am.max_short);
            return false;
        }
        if (!short_ && (opts.size > am.max_bcopy)) {
            std::fprintf(stderr, "%s: AM bcopy size must be at most %zu\n", tool_name,
                         am.max_bcopy);
            return false;
        }
        return true;
    }

    bool send(uint64_t seq)
    {
        for (;;) {
            ucs_status_t status;
            if (short_) {
                status = ep_.am_short(DATA_ID, seq, payload_.data() + AM_HEADER,
                                      unsigned(src_.length - AM_HEADER));
            } else {
                ssize_t n = ep_.am_bcopy(DATA_ID, pack_bcopy, &src_, 0);
                status = (n >= 0) ? UCS_OK : ucs_status_t(n);
            }
            if (ucs_likely(status == UCS_OK)) {
                return true;
            }
            if (status != UCS_ERR_NO_RESOURCE) {
                std::fprintf(stderr, "%s: send failed: %s\n", tool_name,
                             ucs_status_string(status));
                return false;
            }
            t_.progress();
        }
    }

private:
    transport            &t_;
    uct::ep              &ep_;
    bool                 short_;
    std::vector<uint8_t> payload_;
    bcopy_source         src_;
};

bool send_ack(transport &t)
{
    for (;;) {
        ucs_status_t status = t.ep().am_short(ACK_ID, 0, nullptr, 0);
        if (status == UCS_OK) {
            return true;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            std::fprintf(stderr, "%s: ack failed: %s\n", tool_name,
                         ucs_status_string(status));
            return false;
        }
        t.progress();
    }
}

/* Progresses until `c` reaches `target`; false if the peer went away. */
bool wait_count(transport &t, const am_counter &c, uint64_t target, oob *channel)
{
    unsigned spins = 0;
    while (c.get() < target) {
        t.progress();
        if (((++spins % PEER_CHECK_SPINS) == 0) && (channel != nullptr) &&
            channel->peer_gone()) {
            std::fprintf(stderr, "%s: the peer went away\n", tool_name);
            return false;
        }
    }
    return true;
}

int latency_initiator(transport &t, const options &opts, am_sender &sender,
                      am_counter &rx, oob &channel, timeline *tl)
{
    uint64_t seq = 0;
    for (uint64_t i = 0; i < opts.warmup; ++i, ++seq) {
        if (!sender.send(seq) || !wait_count(t, rx, seq + 1, &channel)) {
            return 1;
        }
    }
    tl->prepare(opts.iters);
    tl->start();
    for (uint64_t i = 0; i < opts.iters; ++i, ++seq) {
        if (!sender.send(seq) || !wait_count(t, rx, seq + 1, &channel)) {
            return 1;
        }
        tl->iteration_done();
    }
    tl->stop();
    channel.send_byte(0);
    return 0;
}

int bandwidth_initiator(transport &t, const options &opts, am_sender &sender,
                        am_counter &acks, oob &channel, timeline *tl)
{
    for (uint64_t i = 0; i < opts.warmup; ++i) {
        if (!sender.send(i)) {
            return 1;
        }
    }
    uint64_t phases = 0;
    if ((opts.warmup > 0) && !wait_count(t, acks, ++phases, &channel)) {
        return 1;
    }
    tl->prepare(opts.iters);
    tl->start();
    for (uint64_t i = 0; i < opts.iters; ++i) {
        if (!sender.send(i)) {
            return 1;
        }
        tl->iteration_done();
    }
    if (!wait_count(t, acks, ++phases, &channel)) {
        return 1;
    }
    tl->stop();
    channel.send_byte(0);
    return 0;
}

} // namespace

int am_initiator(transport &t, const options &opts, oob &channel, timeline *tl)
{
    am_sender sender(t, opts);
    if (!sender.check_limits(opts)) {
        return 1;
    }
    am_counter data_rx, acks;
    t.iface().set_am_handler(DATA_ID, am_counter::handler, &data_rx, 0);
    t.iface().set_am_handler(ACK_ID, am_counter::handler, &acks, 0);
    if (is_latency_test(opts.test)) {
        return latency_initiator(t, opts, sender, data_rx, channel, tl);
    }
    return bandwidth_initiator(t, opts, sender, acks, channel, tl);
}

int am_responder(transport &t, const options &opts, oob &channel)
{
    am_sender sender(t, opts);
    if (!sender.check_limits(opts)) {
        return 1;
    }
    am_counter rx;
    t.iface().set_am_handler(DATA_ID, am_counter::handler, &rx, 0);
    const uint64_t total = opts.warmup + opts.iters;
    if (is_latency_test(opts.test)) {
        for (uint64_t i = 0; i < total; ++i) {
            if (!wait_count(t, rx, i + 1, &channel) || !sender.send(i)) {
                return 1;
            }
        }
    } else {
        uint64_t target = 0;
        for (uint64_t batch : {opts.warmup, opts.iters}) {
            if (batch == 0) {
                continue;
            }
            target += batch;
            if (!wait_count(t, rx, target, &channel) || !send_ack(t)) {
                return 1;
            }
        }
    }
    return progress_until_peer_done(t, channel) ? 0 : 1;
}

int am_self(transport &t, const options &opts, timeline *tl)
{
    am_sender sender(t, opts);
    if (!sender.check_limits(opts)) {
        return 1;
    }
    am_counter rx;
    t.iface().set_am_handler(DATA_ID, am_counter::handler, &rx, 0);
    const bool latency = is_latency_test(opts.test);
    /* Latency: two messages (there and back) per iteration, as ping-pong
     * iterations are, so the halved round trip is one message. */
    const uint64_t per_iteration = latency ? 2 : 1;
    uint64_t sent = 0;
    auto iteration = [&] {
        for (uint64_t m = 0; m < per_iteration; ++m, ++sent) {
            if (!sender.send(sent) || (latency && !wait_count(t, rx, sent + 1, nullptr))) {
                return false;
            }
        }
        return true;
    };
    for (uint64_t i = 0; i < opts.warmup; ++i) {
        if (!iteration()) {
            return 1;
        }
    }
    if (!wait_count(t, rx, sent, nullptr)) {
        return 1;
    }
    tl->prepare(opts.iters);
    tl->start();
    for (uint64_t i = 0; i < opts.iters; ++i) {
        if (!iteration()) {
            return 1;
        }
        tl->iteration_done();
    }
    bool done = wait_count(t, rx, sent, nullptr);
    tl->stop();
    return done ? 0 : 1;
}

bool progress_until_peer_done(transport &t, oob &channel)
{
    while (!channel.ready()) {
        for (int i = 0; i < 1000; ++i) {
            t.progress();
        }
    }
    uint8_t byte;
    return channel.recv_byte(&byte);
}

} // namespace perf
