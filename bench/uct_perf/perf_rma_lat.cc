/*
 * Ping-pong through memory, UCX's put_lat and add_lat: each side exposes a
 * buffer and learns the other's. The initiator puts its message, whose
 * last byte is the iteration's sequence number, into the responder's
 * buffer (add_lat: atomically adds 1 to the responder's counter); the
 * responder polls its own buffer until it sees that number (counter value)
 * and answers the same way. One round trip per iteration. The poller
 * progresses its transport while it polls: transports that carry a put as
 * a message (tcp) write it into memory there.
 */
#include "perf_tests.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace perf {

namespace {

/* Sequence numbers cycle through 0..254: the buffers start as 0xff. */
constexpr unsigned SN_CYCLE = 255;

/* A zcopy put's completion arrives later: the count of those still out. */
constexpr int COMPLETIONS_OUT = 1 << 30;

void nothing(uct::completion *)
{
}

bool supported(const transport &t, const options &opts)
{
    const uct::iface_attr &attr = t.attr();
    auto refuse                 = [&](const char *why) {
        std::fprintf(stderr, "%s: %s: %s\n", tool_name, t.description().c_str(), why);
        return false;
    };
    switch (opts.test) {
    case test_kind::ADD_LAT: {
        if ((opts.size != 4) && (opts.size != 8)) {
            return refuse("add_lat operates on 4 or 8 bytes (-s 4 or -s 8)");
        }
        uint64_t ops = (opts.size == 4) ? attr.atomic32_post : attr.atomic64_post;
        return (ops & uct::atomic_op_bit(uct::atomic_op::ADD)) ?
                   true :
                   refuse("no posted atomic add of that size");
    }
    case test_kind::PUT_SHORT_LAT:
        if (!(attr.flags & uct::iface_flag::PUT_SHORT) || (opts.size > attr.put.max_short)) {
            return refuse("put short of that size is not supported");
        }
        return true;
    case test_kind::PUT_BCOPY_LAT:
        if (!(attr.flags & uct::iface_flag::PUT_BCOPY) || (opts.size > attr.put.max_bcopy)) {
            return refuse("put bcopy of that size is not supported");
        }
        return true;
    default:
        if (!(attr.flags & uct::iface_flag::PUT_ZCOPY) || (opts.size > attr.put.max_zcopy) ||
            (opts.size < attr.put.min_zcopy)) {
            return refuse("put zcopy of that size is not supported");
        }
        return true;
    }
}

struct copy_args {
    const void *data;
    size_t length;
};

size_t pack_copy(void *dest, void *arg)
{
    auto *a = static_cast<copy_args *>(arg);
    std::memcpy(dest, a->data, a->length);
    return a->length;
}

/* One side: its exposed buffer, its message and the peer's buffer. */
class pingpong_side {
public:
    pingpong_side(transport &t, const options &opts) :
        t_(t), opts_(opts), target_(t.md(), opts.size, false, mem_flags(opts)),
        source_(t.md(), opts.size, false, mem_flags(opts))
    {
        comp_.func   = nothing;
        comp_.count  = COMPLETIONS_OUT;
        comp_.status = UCS_OK;
    }

    ~pingpong_side()
    {
        if (have_rkey_) {
            t_.component().rkey_release(rkey_);
        }
    }

    /* Fills the buffers; false (said why) if they could not be had. */
    bool prepare()
    {
        if ((target_.address() == nullptr) || (source_.address() == nullptr)) {
            std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts_.size);
            return false;
        }
        std::memset(target_.address(), atomic() ? 0 : 0xff, opts_.size);
        std::memset(source_.address(), 0x5a, opts_.size);
        return true;
    }

    /* The peer's buffer, from its describe_target() blob. */
    bool aim(const std::vector<uint8_t> &blob)
    {
        if (blob.size() < sizeof(remote_)) {
            std::fprintf(stderr, "%s: no target buffer from the peer\n", tool_name);
            return false;
        }
        std::memcpy(&remote_, blob.data(), sizeof(remote_));
        ucs_status_t status = t_.component().rkey_unpack(blob.data() + sizeof(remote_),
                                                         blob.size() - sizeof(remote_), &rkey_);
        if (status != UCS_OK) {
            std::fprintf(stderr, "%s: rkey_unpack: %s\n", tool_name, ucs_status_string(status));
            return false;
        }
        have_rkey_ = true;
        return true;
    }

    md_buffer &target() { return target_; }

    /* Message `n` (counting from 0) to the peer. */
    bool send(uint64_t n)
    {
        static_cast<uint8_t *>(source_.address())[opts_.size - 1] = uint8_t(n % SN_CYCLE);
        ucs_status_t status;
        while ((status = post()) == UCS_ERR_NO_RESOURCE) {
            t_.progress();
        }
        if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
            std::fprintf(stderr, "%s: %s failed: %s\n", tool_name, atomic() ? "atomic add" : "put",
                         ucs_status_string(status));
            return false;
        }
        posted_zcopy_ += (status == UCS_INPROGRESS) ? 1 : 0;
        return true;
    }

    /* Polls our buffer until message `n` from the peer is there. */
    bool wait(uint64_t n, oob *channel)
    {
        unsigned spins = 0;
        while (!arrived(n)) {
            t_.progress();
            if (((++spins % PEER_CHECK_SPINS) == 0) && (channel != nullptr) &&
                channel->peer_gone()) {
                std::fprintf(stderr, "%s: the peer went away\n", tool_name);
                return false;
            }
        }
        return true;
    }

    /* Waits for the zcopy puts still out. */
    bool drain()
    {
        while (uint64_t(COMPLETIONS_OUT - comp_.count) < posted_zcopy_) {
            t_.progress();
        }
        return comp_.status == UCS_OK;
    }

private:
    bool atomic() const { return opts_.test == test_kind::ADD_LAT; }

    ucs_status_t post()
    {
        uct::ep &ep = t_.ep();
        switch (opts_.test) {
        case test_kind::ADD_LAT:
            return ep.atomic_post(uct::atomic_op::ADD, unsigned(opts_.size), 1, remote_,
                                  rkey_.rkey);
        case test_kind::PUT_SHORT_LAT:
            return ep.put_short(source_.address(), unsigned(opts_.size), remote_, rkey_.rkey);
        case test_kind::PUT_BCOPY_LAT: {
            copy_args args{source_.address(), opts_.size};
            ssize_t n = ep.put_bcopy(pack_copy, &args, remote_, rkey_.rkey);
            return (n >= 0) ? UCS_OK : ucs_status_t(n);
        }
        default: {
            uct::iov iov{source_.address(), opts_.size, source_.memh()};
            return ep.put_zcopy(&iov, 1, remote_, rkey_.rkey, &comp_);
        }
        }
    }

    bool arrived(uint64_t n) const
    {
        const void *p = target_.address();
        if (!atomic()) {
            return __atomic_load_n(static_cast<const uint8_t *>(p) + opts_.size - 1,
                                   __ATOMIC_ACQUIRE) == uint8_t(n % SN_CYCLE);
        }
        /* Each message adds 1: message n leaves n + 1. */
        const uint64_t value = (opts_.size == 4) ? __atomic_load_n(static_cast<const uint32_t *>(p),
                                                                   __ATOMIC_ACQUIRE) :
                                                   __atomic_load_n(static_cast<const uint64_t *>(p),
                                                                   __ATOMIC_ACQUIRE);
        return value == ((opts_.size == 4) ? uint32_t(n + 1) : n + 1);
    }

    transport &t_;
    const options &opts_;
    md_buffer target_;
    md_buffer source_;
    uint64_t remote_ = 0;
    uct::rkey_bundle rkey_{};
    bool have_rkey_ = false;
    uct::completion comp_{};
    uint64_t posted_zcopy_ = 0;
};

} // namespace

int memory_pingpong(transport &t, const options &opts, oob &channel, bool initiator, timeline *tl)
{
    const bool ok_here = supported(t, opts);
    pingpong_side side(t, opts);
    std::vector<uint8_t> theirs;
    /* Both take part in the exchange, so neither waits for ever. */
    const bool ready = ok_here && side.prepare();
    if (!channel.exchange(ready ? describe_target(t, side.target()) : std::vector<uint8_t>{},
                          &theirs) ||
        !ready || theirs.empty() || !side.aim(theirs)) {
        return 1;
    }
    const uint64_t total = opts.warmup + opts.iters;
    if (initiator) {
        tl->prepare(opts.iters);
    }
    for (uint64_t n = 0; n < total; ++n) {
        if (initiator && (n == opts.warmup)) {
            tl->start();
        }
        bool ok = initiator ? (side.send(n) && side.wait(n, &channel)) :
                              (side.wait(n, &channel) && side.send(n));
        if (!ok) {
            return 1;
        }
        if (initiator && (n >= opts.warmup)) {
            tl->iteration_done();
        }
    }
    if (initiator) {
        tl->stop();
    }
    const bool drained = side.drain();
    if (initiator) {
        channel.send_byte(0);
        return drained ? 0 : 1;
    }
    /* Our last message may still need progress to leave (tcp): keep
     * progressing until the initiator has it. */
    return (progress_until_peer_done(t, channel) && drained) ? 0 : 1;
}

int memory_pingpong_self(transport &t, const options &opts, timeline *tl)
{
    if (!supported(t, opts)) {
        return 1;
    }
    pingpong_side side(t, opts);
    if (!side.prepare() || !side.aim(describe_target(t, side.target()))) {
        return 1;
    }
    /* Two messages per iteration, there and back, as a ping-pong's. */
    tl->prepare(opts.iters);
    uint64_t n = 0;
    for (uint64_t i = 0; i < opts.warmup + opts.iters; ++i) {
        if (i == opts.warmup) {
            tl->start();
        }
        for (int leg = 0; leg < 2; ++leg, ++n) {
            if (!side.send(n) || !side.wait(n, nullptr)) {
                return 1;
            }
        }
        if (i >= opts.warmup) {
            tl->iteration_done();
        }
    }
    tl->stop();
    return side.drain() ? 0 : 1;
}

} // namespace perf
