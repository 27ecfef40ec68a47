/*
 * Active-message benchmarks. Latency: the initiator sends message i and
 * waits for the responder's echo of it; each round trip is timestamped and
 * reported halved. Bandwidth: the initiator streams a batch, retrying on
 * NO_RESOURCE, and stops the clock on the responder's acknowledgement.
 */
#include "perf_clock.h"
#include "perf_peer.h"
#include "perf_report.h"
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
            std::fprintf(stderr, "uct_perf: %s has no %s\n", t_.description().c_str(),
                         short_ ? "AM short" : "AM bcopy");
            return false;
        }
        if (short_ && ((opts.size < AM_HEADER) || (opts.size > am.max_short))) {
            std::fprintf(stderr, "uct_perf: AM short size must be in [%zu, %zu] "
                         "(the 8-byte header included)\n", AM_HEADER, am.max_short);
            return false;
        }
        if (!short_ && (opts.size > am.max_bcopy)) {
            std::fprintf(stderr, "uct_perf: AM bcopy size must be at most %zu\n",
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
                std::fprintf(stderr, "uct_perf: send failed: %s\n",
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
            std::fprintf(stderr, "uct_perf: ack failed: %s\n", ucs_status_string(status));
            return false;
        }
        t.progress();
    }
}

void wait_count(transport &t, const am_counter &c, uint64_t target)
{
    while (c.get() < target) {
        t.progress();
    }
}

int latency_initiator(transport &t, const options &opts, am_sender &sender,
                      am_counter &rx, int fd)
{
    const uint64_t total = opts.warmup + opts.iters;
    std::vector<uint64_t> stamps(opts.iters + 1);
    tick_rate rate;
    for (uint64_t i = 0; i < total; ++i) {
        if (i >= opts.warmup) {
            if (i == opts.warmup) {
                rate.start();
            }
            stamps[i - opts.warmup] = ticks();
        }
        if (!sender.send(i)) {
            return 1;
        }
        wait_count(t, rx, i + 1);
    }
    stamps[opts.iters] = ticks();
    rate.stop();
    send_byte(fd, 0);

    std::vector<uint64_t> rtt(opts.iters);
    for (uint64_t i = 0; i < opts.iters; ++i) {
        rtt[i] = stamps[i + 1] - stamps[i];
    }
    print_latency(opts, latency_from_round_trips(rtt, rate.seconds_per_tick()));
    return 0;
}

int bandwidth_initiator(transport &t, const options &opts, am_sender &sender,
                        am_counter &acks, int fd)
{
    uint64_t phases = 0;
    auto batch = [&](uint64_t count) {
        for (uint64_t i = 0; i < count; ++i) {
            if (!sender.send(i)) {
                return false;
            }
        }
        wait_count(t, acks, ++phases);
        return true;
    };
    if ((opts.warmup > 0) && !batch(opts.warmup)) {
        return 1;
    }
    tick_rate rate;
    rate.start();
    if (!batch(opts.iters)) {
        return 1;
    }
    rate.stop();
    send_byte(fd, 0);
    print_bandwidth(opts, bandwidth_from(opts.iters, opts.size, rate.elapsed_s()));
    return 0;
}

} // namespace

int am_initiator(transport &t, const options &opts, int fd)
{
    am_sender sender(t, opts);
    if (!sender.check_limits(opts)) {
        return 1;
    }
    am_counter data_rx, acks;
    t.iface().set_am_handler(DATA_ID, am_counter::handler, &data_rx, 0);
    t.iface().set_am_handler(ACK_ID, am_counter::handler, &acks, 0);
    print_header(opts, t.description().c_str());
    std::fflush(stdout);
    if (is_latency_test(opts.test)) {
        return latency_initiator(t, opts, sender, data_rx, fd);
    }
    return bandwidth_initiator(t, opts, sender, acks, fd);
}

int am_responder(transport &t, const options &opts, int fd)
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
            wait_count(t, rx, i + 1);
            if (!sender.send(i)) {
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
            wait_count(t, rx, target);
            if (!send_ack(t)) {
                return 1;
            }
        }
    }
    return progress_until_peer_done(t, fd) ? 0 : 1;
}

bool progress_until_peer_done(transport &t, int fd)
{
    while (!byte_ready(fd)) {
        for (int i = 0; i < 1000; ++i) {
            t.progress();
        }
    }
    uint8_t byte;
    recv_byte(fd, &byte);
    return true;
}

} // namespace perf
