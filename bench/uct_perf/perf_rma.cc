/*
 * One-sided benchmarks: the responder exposes a buffer (allocated by its md
 * when the md can, registered otherwise) and only progresses; the initiator
 * streams operations into/from it (put short/bcopy/zcopy, get bcopy/zcopy,
 * posted or fetching atomics), up to a window in flight, and stops the
 * clock when a flush has completed them all. With opts.responder_idle the
 * responder does not progress at all: it sleeps on the out-of-band channel
 * until the initiator is done (UCX's perftest -o), which only transports
 * whose RMA needs no target progress survive.
 */
#include "perf_buffer.h"
#include "perf_tests.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace perf {

namespace {

/* Window of the bandwidth-oriented streams; fetching atomics default to 1
 * (UCX's default), so each one's latency is what they measure. */
constexpr unsigned DEFAULT_WINDOW = 128;

struct slot : uct::completion {
    std::vector<unsigned> *free_slots;
    unsigned index;
    uint64_t result; /* fetching atomics write the old value here */
};

void slot_done(uct::completion *self)
{
    auto *s = static_cast<slot *>(self);
    s->free_slots->push_back(s->index);
}

struct copy_args {
    void *local;
    size_t length;
};

size_t pack_local(void *dest, void *arg)
{
    auto *a = static_cast<copy_args *>(arg);
    std::memcpy(dest, a->local, a->length);
    return a->length;
}

void unpack_local(void *arg, const void *data, size_t length)
{
    std::memcpy(static_cast<copy_args *>(arg)->local, data, length);
}

const char *op_name(test_kind kind)
{
    switch (kind) {
    case test_kind::PUT_SHORT_BW:
        return "put short";
    case test_kind::PUT_BCOPY_BW:
        return "put bcopy";
    case test_kind::PUT_ZCOPY_BW:
        return "put zcopy";
    case test_kind::GET_BCOPY_BW:
        return "get bcopy";
    case test_kind::GET_ZCOPY_BW:
        return "get zcopy";
    case test_kind::ADD_MR:
        return "atomic add";
    case test_kind::FADD:
        return "atomic fetch-add";
    case test_kind::SWAP:
        return "atomic swap";
    case test_kind::CSWAP:
        return "atomic compare-swap";
    default:
        return "?";
    }
}

uct::atomic_op atomic_of(test_kind kind)
{
    return (kind == test_kind::SWAP)  ? uct::atomic_op::SWAP :
           (kind == test_kind::CSWAP) ? uct::atomic_op::CSWAP :
                                        uct::atomic_op::ADD;
}

bool fetches(test_kind kind)
{
    return (kind == test_kind::FADD) || (kind == test_kind::SWAP) || (kind == test_kind::CSWAP) ||
           (kind == test_kind::GET_BCOPY_BW) || (kind == test_kind::GET_ZCOPY_BW);
}

bool supported(const transport &t, const options &opts)
{
    const uct::iface_attr &attr = t.attr();
    const char *what            = op_name(opts.test);
    auto refuse                 = [&](const char *why) {
        std::fprintf(stderr, "%s: %s: %s %s\n", tool_name, t.description().c_str(), what, why);
        return false;
    };
    if (is_atomic_test(opts.test)) {
        if ((opts.size != 4) && (opts.size != 8)) {
            return refuse("operates on 4 or 8 bytes (-s 4 or -s 8)");
        }
        const bool post    = opts.test == test_kind::ADD_MR;
        const uint64_t ops = (opts.size == 4) ? (post ? attr.atomic32_post : attr.atomic32_fetch) :
                                                (post ? attr.atomic64_post : attr.atomic64_fetch);
        if (!(ops & uct::atomic_op_bit(atomic_of(opts.test)))) {
            return refuse(opts.size == 4 ? "is not supported on 32 bits" :
                                           "is not supported on 64 bits");
        }
        return true;
    }
    struct limit {
        uint64_t flag;
        size_t min, max;
    };
    limit l{};
    switch (opts.test) {
    case test_kind::PUT_SHORT_BW:
        l = {uct::iface_flag::PUT_SHORT, 1, attr.put.max_short};
        break;
    case test_kind::PUT_BCOPY_BW:
        l = {uct::iface_flag::PUT_BCOPY, 1, attr.put.max_bcopy};
        break;
    case test_kind::GET_BCOPY_BW:
        l = {uct::iface_flag::GET_BCOPY, 1, attr.get.max_bcopy};
        break;
    case test_kind::PUT_ZCOPY_BW:
        l = {uct::iface_flag::PUT_ZCOPY, attr.put.min_zcopy, attr.put.max_zcopy};
        break;
    default:
        l = {uct::iface_flag::GET_ZCOPY, attr.get.min_zcopy, attr.get.max_zcopy};
        break;
    }
    if (!(attr.flags & l.flag)) {
        return refuse("is not supported");
    }
    if ((opts.size < l.min) || (opts.size > l.max)) {
        std::fprintf(stderr, "%s: %s size must be in [%zu, %zu]\n", tool_name, what, l.min, l.max);
        return false;
    }
    return true;
}

/* The operations of one stream, the slots they complete into, the drain. */
class rma_poster {
public:
    rma_poster(transport &t, const options &opts, void *local, uct::mem_h memh, uint64_t remote,
               uct::rkey_t rkey) :
        t_(t),
        ep_(t.ep()), kind_(opts.test), size_(opts.size), remote_(remote),
        rkey_(rkey), iov_{local, opts.size, memh}, copy_{local, opts.size}
    {
        unsigned window = opts.outstanding;
        if (window == 0) {
            window = (is_atomic_test(kind_) && fetches(kind_)) ? 1 : DEFAULT_WINDOW;
        }
        slots_.resize(window);
        free_slots_.reserve(window);
        for (unsigned i = 0; i < window; ++i) {
            slots_[i].func       = slot_done;
            slots_[i].free_slots = &free_slots_;
            slots_[i].index      = i;
            free_slots_.push_back(i);
        }
    }

    /* Posts one operation once a slot is free; false on a hard failure. */
    bool post_one()
    {
        while (free_slots_.empty()) {
            t_.progress();
        }
        /* Taken off the list before posting: completions that run while
         * progress retries NO_RESOURCE push other slots on its back. */
        slot &s = slots_[free_slots_.back()];
        free_slots_.pop_back();
        s.count  = 1;
        s.status = UCS_OK;
        ucs_status_t st;
        while ((st = post(s)) == UCS_ERR_NO_RESOURCE) {
            t_.progress();
        }
        if (st != UCS_INPROGRESS) {
            free_slots_.push_back(s.index); /* done at once, or failed */
        }
        if ((st != UCS_INPROGRESS) && (st != UCS_OK)) {
            std::fprintf(stderr, "%s: %s failed: %s\n", tool_name, op_name(kind_),
                         ucs_status_string(st));
            return false;
        }
        return true;
    }

    /* Flushes the ep and waits for every slot. */
    bool drain()
    {
        for (;;) {
            ucs_status_t s = ep_.flush(0, nullptr);
            if (s == UCS_OK) {
                break;
            }
            if ((s != UCS_ERR_NO_RESOURCE) && (s != UCS_INPROGRESS)) {
                return false;
            }
            t_.progress();
        }
        while (free_slots_.size() < slots_.size()) {
            t_.progress();
        }
        return true;
    }

private:
    ucs_status_t post(slot &s)
    {
        switch (kind_) {
        case test_kind::PUT_SHORT_BW:
            return ep_.put_short(iov_.buffer, unsigned(size_), remote_, rkey_);
        case test_kind::PUT_BCOPY_BW: {
            ssize_t n = ep_.put_bcopy(pack_local, &copy_, remote_, rkey_);
            return (n >= 0) ? UCS_OK : ucs_status_t(n);
        }
        case test_kind::PUT_ZCOPY_BW:
            return ep_.put_zcopy(&iov_, 1, remote_, rkey_, &s);
        case test_kind::GET_BCOPY_BW:
            return ep_.get_bcopy(unpack_local, &copy_, size_, remote_, rkey_, &s);
        case test_kind::GET_ZCOPY_BW:
            return ep_.get_zcopy(&iov_, 1, remote_, rkey_, &s);
        case test_kind::ADD_MR:
            return ep_.atomic_post(uct::atomic_op::ADD, unsigned(size_), 1, remote_, rkey_);
        default:
            /* cswap compares with 0 and stores 0: every one succeeds, so
             * each does the full write, as a lock attempt would. */
            return ep_.atomic_fetch(atomic_of(kind_), unsigned(size_),
                                    (kind_ == test_kind::FADD) ? 1 : 0, 0, &s.result, remote_,
                                    rkey_, &s);
        }
    }

    transport &t_;
    uct::ep &ep_;
    test_kind kind_;
    size_t size_;
    uint64_t remote_;
    uct::rkey_t rkey_;
    uct::iov iov_;
    copy_args copy_;
    std::vector<slot> slots_;
    std::vector<unsigned> free_slots_;
};

/* Streams the operations into/from the target described by `blob`; tells
 * the peer (if any) when done, whatever happened. */
int rma_stream(transport &t, const options &opts, const std::vector<uint8_t> &blob, oob *channel,
               timeline *tl)
{
    auto tell_peer = [channel] {
        if (channel != nullptr) {
            channel->send_byte(0);
        }
    };
    if (!supported(t, opts)) {
        tell_peer();
        return 1;
    }
    uint64_t remote;
    std::memcpy(&remote, blob.data(), sizeof(remote));
    uct::rkey_bundle rkey;
    ucs_status_t status = t.component().rkey_unpack(blob.data() + sizeof(remote),
                                                    blob.size() - sizeof(remote), &rkey);
    if (status != UCS_OK) {
        std::fprintf(stderr, "%s: rkey_unpack: %s\n", tool_name, ucs_status_string(status));
        tell_peer();
        return 1;
    }

    md_buffer local(t.md(), opts.size, opts.huge_pages, mem_flags(opts));
    if (local.address() == nullptr) {
        std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts.size);
        t.component().rkey_release(rkey);
        tell_peer();
        return 1;
    }
    std::memset(local.address(), 0xc3, opts.size);
    const bool zcopy = (opts.test == test_kind::PUT_ZCOPY_BW) ||
                       (opts.test == test_kind::GET_ZCOPY_BW);
    if (zcopy && (t.md().attr().flags & uct::md_flag::NEED_MEMH) &&
        (local.memh() == uct::MEM_HANDLE_NULL)) {
        std::fprintf(stderr, "%s: cannot register the local buffer\n", tool_name);
        t.component().rkey_release(rkey);
        tell_peer();
        return 1;
    }

    rma_poster poster(t, opts, local.address(), local.memh(), remote, rkey.rkey);
    tl->prepare(opts.iters);
    int result = 0;
    for (uint64_t i = 0; (i < opts.warmup) && (result == 0); ++i) {
        result = poster.post_one() ? 0 : 1;
    }
    if ((result == 0) && !poster.drain()) {
        std::fprintf(stderr, "%s: flush failed\n", tool_name);
        result = 1;
    }
    if (result == 0) {
        tl->start();
        for (uint64_t i = 0; (i < opts.iters) && (result == 0); ++i) {
            result = poster.post_one() ? 0 : 1;
            tl->iteration_done();
        }
        if ((result == 0) && !poster.drain()) {
            std::fprintf(stderr, "%s: flush failed\n", tool_name);
            result = 1;
        }
        tl->stop();
    }
    tell_peer();
    t.component().rkey_release(rkey);
    return result;
}

} // namespace

/* The address of `buffer`, then its packed key: what the initiator needs. */
std::vector<uint8_t> describe_target(transport &t, md_buffer &buffer)
{
    uint64_t address = reinterpret_cast<uintptr_t>(buffer.address());
    std::vector<uint8_t> blob(sizeof(address) + t.md().attr().rkey_packed_size);
    std::memcpy(blob.data(), &address, sizeof(address));
    if ((t.md().attr().rkey_packed_size > 0) &&
        (t.md().mkey_pack(buffer.memh(), blob.data() + sizeof(address)) != UCS_OK)) {
        std::fprintf(stderr, "%s: cannot pack a key for the target buffer\n", tool_name);
        blob.resize(sizeof(address));
    }
    return blob;
}

unsigned mem_flags(const options &opts)
{
    return opts.nonblock_reg ? uct::mem_flag::NONBLOCK : 0;
}

int rma_responder(transport &t, const options &opts, oob &channel)
{
    md_buffer buffer(t.md(), opts.size, opts.huge_pages, mem_flags(opts));
    if (buffer.address() == nullptr) {
        std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts.size);
        return 1;
    }
    std::memset(buffer.address(), is_atomic_test(opts.test) ? 0 : 0x3c, opts.size);
    if (!channel.send_blob(describe_target(t, buffer))) {
        return 1;
    }
    if (opts.responder_idle) {
        /* Blocks in the channel: this CPU stays out of the copy's way. */
        uint8_t done;
        return channel.recv_byte(&done) ? 0 : 1;
    }
    return progress_until_peer_done(t, channel) ? 0 : 1;
}

int rma_initiator(transport &t, const options &opts, oob &channel, timeline *tl)
{
    std::vector<uint8_t> blob;
    if (!channel.recv_blob(&blob) || (blob.size() < sizeof(uint64_t))) {
        std::fprintf(stderr, "%s: no target buffer from the peer\n", tool_name);
        return 1;
    }
    return rma_stream(t, opts, blob, &channel, tl);
}

int rma_self(transport &t, const options &opts, timeline *tl)
{
    md_buffer target(t.md(), opts.size, opts.huge_pages, mem_flags(opts));
    if (target.address() == nullptr) {
        std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts.size);
        return 1;
    }
    std::memset(target.address(), 0, opts.size);
    return rma_stream(t, opts, describe_target(t, target), nullptr, tl);
}

} // namespace perf
