/*
 * Active-message benchmarks. Latency: the initiator sends message i and
 * waits for the responder's echo of it; each round trip is one iteration of
 * the timeline. Bandwidth: the initiator streams its messages, retrying on
 * NO_RESOURCE (one iteration per message), and stops the clock on the
 * responder's acknowledgement of the last one; with a flow-control window
 * (opts.fc_window, UCX's -W) it never has more than that many messages the
 * responder has not credited back. Messages go as short, bcopy, zcopy (the
 * first 8 bytes inline as the header, the rest in place) or short iov AMs.
 */
#include "perf_tests.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

namespace perf {

namespace {

constexpr uct::am_id_t DATA_ID   = 1;
constexpr uct::am_id_t ACK_ID    = 2;
constexpr uct::am_id_t CREDIT_ID = 3;
constexpr size_t AM_HEADER       = sizeof(uint64_t);
/* Zero-copy sends whose completion has not come: counted down from here. */
constexpr int COMPLETIONS_OUT = 1 << 30;

/* Written only by the thread that runs the handler; read by the waiter. */
struct am_counter {
    std::atomic<uint64_t> count{0};

    static ucs_status_t handler(void *arg, void *, size_t, unsigned)
    {
        auto *c = static_cast<am_counter *>(arg);
        c->count.store(c->count.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        return UCS_OK;
    }

    /* Credits: the header word says how many messages it gives back. */
    static ucs_status_t credit_handler(void *arg, void *data, size_t, unsigned)
    {
        auto *c = static_cast<am_counter *>(arg);
        uint64_t credited;
        std::memcpy(&credited, data, sizeof(credited));
        c->count.store(c->count.load(std::memory_order_relaxed) + credited,
                       std::memory_order_release);
        return UCS_OK;
    }

    uint64_t get() const { return count.load(std::memory_order_acquire); }
};

struct bcopy_source {
    const uint8_t *data;
    size_t length;
};

size_t pack_bcopy(void *dest, void *arg)
{
    auto *src = static_cast<bcopy_source *>(arg);
    std::memcpy(dest, src->data, src->length);
    return src->length;
}

enum class am_mode { SHORT, BCOPY, ZCOPY, SHORTIOV };

am_mode mode_of(test_kind kind)
{
    switch (kind) {
    case test_kind::AM_SHORT_LAT:
    case test_kind::AM_SHORT_BW:
        return am_mode::SHORT;
    case test_kind::AM_ZCOPY_LAT:
    case test_kind::AM_ZCOPY_BW:
        return am_mode::ZCOPY;
    case test_kind::AM_SHORTIOV_LAT:
    case test_kind::AM_SHORTIOV_BW:
        return am_mode::SHORTIOV;
    default:
        return am_mode::BCOPY;
    }
}

const char *mode_name(am_mode mode)
{
    switch (mode) {
    case am_mode::SHORT:
        return "AM short";
    case am_mode::BCOPY:
        return "AM bcopy";
    case am_mode::ZCOPY:
        return "AM zcopy";
    case am_mode::SHORTIOV:
        return "AM short iov";
    }
    return "AM";
}

void nothing(uct::completion *)
{
}

/* Sends one data message, progressing while the transport is out of room. */
class am_sender {
public:
    am_sender(transport &t, const options &opts) :
        t_(t), ep_(t.ep()), mode_(mode_of(opts.test)),
        buffer_(t.md(), opts.size, false, mem_flags(opts)), size_(opts.size)
    {
        comp_.func   = nothing;
        comp_.count  = COMPLETIONS_OUT;
        comp_.status = UCS_OK;
        if (buffer_.address() == nullptr) {
            return;
        }
        std::memset(buffer_.address(), 0x5a, size_);
        src_ = {static_cast<const uint8_t *>(buffer_.address()), size_};
        /* The message as iov entries (-s a,b,c); zcopy sends its first 8
         * bytes as the header, so its entries start after them. */
        std::vector<size_t> pieces = opts.iov_sizes;
        if (pieces.empty()) {
            pieces.push_back(size_);
        }
        size_t at = 0, skip = (mode_ == am_mode::ZCOPY) ? AM_HEADER : 0;
        for (size_t len : pieces) {
            size_t cut = std::min(skip, len);
            skip -= cut;
            if (len > cut) {
                iov_.push_back({static_cast<uint8_t *>(buffer_.address()) + at + cut, len - cut,
                                buffer_.memh()});
            }
            at += len;
        }
    }

    bool check_limits(const options &opts) const
    {
        const uct::iface_attr &attr  = t_.attr();
        const uct::op_limits &am     = attr.am;
        static const uint64_t need[] = {uct::iface_flag::AM_SHORT, uct::iface_flag::AM_BCOPY,
                                        uct::iface_flag::AM_ZCOPY, uct::iface_flag::AM_SHORT};
        if (buffer_.address() == nullptr) {
            std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts.size);
            return false;
        }
        if (!(attr.flags & need[int(mode_)])) {
            std::fprintf(stderr, "%s: %s has no %s\n", tool_name, t_.description().c_str(),
                         mode_name(mode_));
            return false;
        }
        switch (mode_) {
        case am_mode::SHORT:
        case am_mode::SHORTIOV:
            if ((opts.size < AM_HEADER) || (opts.size > am.max_short)) {
                std::fprintf(stderr,
                             "%s: %s size must be in [%zu, %zu] "
                             "(the 8-byte header included)\n",
                             tool_name, mode_name(mode_), AM_HEADER, am.max_short);
                return false;
            }
            return true;
        case am_mode::BCOPY:
            if (opts.size > am.max_bcopy) {
                std::fprintf(stderr, "%s: AM bcopy size must be at most %zu\n", tool_name,
                             am.max_bcopy);
                return false;
            }
            return true;
        case am_mode::ZCOPY:
            if ((opts.size < AM_HEADER) || (opts.size - AM_HEADER > am.max_zcopy) ||
                (am.max_hdr < AM_HEADER) || (iov_.size() > am.max_iov)) {
                std::fprintf(stderr,
                             "%s: AM zcopy size must be in [%zu, %zu] (the 8-byte "
                             "header included), in at most %zu entries\n",
                             tool_name, AM_HEADER, am.max_zcopy + AM_HEADER, am.max_iov);
                return false;
            }
            if ((t_.md().attr().flags & uct::md_flag::NEED_MEMH) &&
                (buffer_.memh() == uct::MEM_HANDLE_NULL)) {
                std::fprintf(stderr, "%s: cannot register the AM zcopy buffer\n", tool_name);
                return false;
            }
            return true;
        }
        return false;
    }

    bool send(uint64_t seq)
    {
        for (;;) {
            ucs_status_t status = post(seq);
            if (ucs_likely(status == UCS_OK)) {
                return true;
            }
            if (status == UCS_INPROGRESS) {
                ++posted_zcopy_;
                return true;
            }
            if (status != UCS_ERR_NO_RESOURCE) {
                std::fprintf(stderr, "%s: send failed: %s\n", tool_name, ucs_status_string(status));
                return false;
            }
            t_.progress();
        }
    }

    /* Waits for the zero-copy sends still out (their buffer is ours). */
    bool drain()
    {
        while (uint64_t(COMPLETIONS_OUT - comp_.count) < posted_zcopy_) {
            t_.progress();
        }
        return comp_.status == UCS_OK;
    }

private:
    ucs_status_t post(uint64_t seq)
    {
        auto *bytes = static_cast<uint8_t *>(buffer_.address());
        switch (mode_) {
        case am_mode::SHORT:
            return ep_.am_short(DATA_ID, seq, bytes + AM_HEADER, unsigned(size_ - AM_HEADER));
        case am_mode::SHORTIOV:
            std::memcpy(bytes, &seq, sizeof(seq));
            return ep_.am_short_iov(DATA_ID, iov_.data(), iov_.size());
        case am_mode::ZCOPY:
            return ep_.am_zcopy(DATA_ID, &seq, AM_HEADER, iov_.data(), iov_.size(), 0, &comp_);
        case am_mode::BCOPY: {
            ssize_t n = ep_.am_bcopy(DATA_ID, pack_bcopy, &src_, 0);
            return (n >= 0) ? UCS_OK : ucs_status_t(n);
        }
        }
        return UCS_ERR_UNSUPPORTED;
    }

    transport &t_;
    uct::ep &ep_;
    am_mode mode_;
    md_buffer buffer_;
    size_t size_;
    bcopy_source src_{};
    std::vector<uct::iov> iov_;
    uct::completion comp_{};
    uint64_t posted_zcopy_ = 0;
};

/* A control message with a count in its header word. */
bool send_control(transport &t, uct::am_id_t id, uint64_t value)
{
    for (;;) {
        ucs_status_t status = t.ep().am_short(id, value, nullptr, 0);
        if (status == UCS_OK) {
            return true;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            std::fprintf(stderr, "%s: control message failed: %s\n", tool_name,
                         ucs_status_string(status));
            return false;
        }
        t.progress();
    }
}

bool send_ack(transport &t)
{
    return send_control(t, ACK_ID, 0);
}

/* Progresses until `c` reaches `target`; false if the peer went away. */
bool wait_count(transport &t, const am_counter &c, uint64_t target, oob *channel)
{
    unsigned spins = 0;
    while (c.get() < target) {
        t.progress();
        if (((++spins % PEER_CHECK_SPINS) == 0) && (channel != nullptr) && channel->peer_gone()) {
            std::fprintf(stderr, "%s: the peer went away\n", tool_name);
            return false;
        }
    }
    return true;
}

int latency_initiator(transport &t, const options &opts, am_sender &sender, am_counter &rx,
                      oob &channel, timeline *tl)
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
    const bool drained = sender.drain();
    channel.send_byte(0);
    return drained ? 0 : 1;
}

/* The sender's side of the window: messages sent and credited back. */
struct window {
    unsigned size = 0; /* 0: no limit */
    am_counter credited;
    uint64_t sent = 0;
};

int bandwidth_initiator(transport &t, const options &opts, am_sender &sender, am_counter &acks,
                        window &fc, oob &channel, timeline *tl)
{
    auto send_one = [&](uint64_t seq) {
        if ((fc.size != 0) && (fc.sent >= fc.size) &&
            !wait_count(t, fc.credited, fc.sent + 1 - fc.size, &channel)) {
            return false;
        }
        ++fc.sent;
        return sender.send(seq);
    };
    for (uint64_t i = 0; i < opts.warmup; ++i) {
        if (!send_one(i)) {
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
        if (!send_one(i)) {
            return 1;
        }
        tl->iteration_done();
    }
    if (!wait_count(t, acks, ++phases, &channel)) {
        return 1;
    }
    tl->stop();
    const bool drained = sender.drain();
    channel.send_byte(0);
    return drained ? 0 : 1;
}

/* Receives `count` more messages (up to `target` in all), crediting them
 * back every half window as they come, then acknowledges the phase. */
bool receive_phase(transport &t, const options &opts, const am_counter &rx, uint64_t target,
                   uint64_t *credited, oob &channel)
{
    if (opts.fc_window != 0) {
        const uint64_t batch = std::max(1u, opts.fc_window / 2);
        while (*credited + batch <= target) {
            if (!wait_count(t, rx, *credited + batch, &channel) ||
                !send_control(t, CREDIT_ID, batch)) {
                return false;
            }
            *credited += batch;
        }
        /* The ack covers the rest; the sender then counts all as credited. */
        if (!wait_count(t, rx, target, &channel) ||
            !send_control(t, CREDIT_ID, target - *credited)) {
            return false;
        }
        *credited = target;
    }
    return wait_count(t, rx, target, &channel) && send_ack(t);
}

} // namespace

int am_initiator(transport &t, const options &opts, oob &channel, timeline *tl)
{
    am_sender sender(t, opts);
    if (!sender.check_limits(opts)) {
        return 1;
    }
    am_counter data_rx, acks;
    window fc;
    fc.size = opts.fc_window;
    t.iface().set_am_handler(DATA_ID, am_counter::handler, &data_rx, 0);
    t.iface().set_am_handler(ACK_ID, am_counter::handler, &acks, 0);
    t.iface().set_am_handler(CREDIT_ID, am_counter::credit_handler, &fc.credited, 0);
    if (is_latency_test(opts.test)) {
        return latency_initiator(t, opts, sender, data_rx, channel, tl);
    }
    return bandwidth_initiator(t, opts, sender, acks, fc, channel, tl);
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
        uint64_t target = 0, credited = 0;
        for (uint64_t batch : {opts.warmup, opts.iters}) {
            if (batch == 0) {
                continue;
            }
            target += batch;
            if (!receive_phase(t, opts, rx, target, &credited, channel)) {
                return 1;
            }
        }
    }
    const bool drained = sender.drain();
    return (progress_until_peer_done(t, channel) && drained) ? 0 : 1;
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
    uint64_t sent                = 0;
    auto iteration               = [&] {
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
    return (done && sender.drain()) ? 0 : 1;
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
