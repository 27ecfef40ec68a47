/*
 * One-sided benchmarks: the responder exposes a buffer (allocated by its md
 * when the md can, registered otherwise) and only progresses; the initiator
 * streams put_zcopy or get_zcopy into/from it, up to MAX_OUTSTANDING in
 * flight, and stops the clock when a flush has completed them all. With
 * opts.responder_idle the responder does not progress at all: it sleeps on
 * the out-of-band channel until the initiator is done (UCX's perftest -o),
 * which only transports whose RMA needs no target progress survive.
 */
#include "perf_buffer.h"
#include "perf_tests.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace perf {

namespace {

constexpr unsigned MAX_OUTSTANDING = 128;

/* Memory the md can describe to a peer: allocated by the md or, when it
 * cannot, ours (on huge pages if asked) and registered. */
class exposed_buffer {
public:
    exposed_buffer(uct::md &md, size_t size, bool huge) : md_(md)
    {
        length_ = size;
        const uct::md_attr &a = md.attr();
        if ((a.flags & uct::md_flag::ALLOC) &&
            (md.mem_alloc(&length_, &address_, 0, &memh_) == UCS_OK)) {
            allocated_ = true;
            return;
        }
        length_  = size;
        own_     = std::make_unique<host_buffer>(size, huge);
        address_ = own_->address();
        if ((address_ != nullptr) && (a.flags & uct::md_flag::REG)) {
            if (md.mem_reg(address_, length_, 0, &memh_) != UCS_OK) {
                memh_ = uct::MEM_HANDLE_NULL;
            }
        }
    }

    ~exposed_buffer()
    {
        if (allocated_) {
            md_.mem_free(memh_);
            return;
        }
        if (memh_ != uct::MEM_HANDLE_NULL) {
            md_.mem_dereg(memh_);
        }
    }

    void *address() const { return address_; }
    uct::mem_h memh() const { return memh_; }

private:
    uct::md                      &md_;
    std::unique_ptr<host_buffer> own_;
    void                         *address_ = nullptr;
    size_t                       length_ = 0;
    uct::mem_h                   memh_ = uct::MEM_HANDLE_NULL;
    bool                         allocated_ = false;
};

struct slot : uct::completion {
    std::vector<unsigned> *free_slots;
    unsigned              index;
};

void slot_done(uct::completion *self)
{
    auto *s = static_cast<slot*>(self);
    s->free_slots->push_back(s->index);
}

bool supported(const transport &t, const options &opts)
{
    bool put = opts.test == test_kind::PUT_ZCOPY_BW;
    const uct::op_limits &lim = put ? t.attr().put : t.attr().get;
    uint64_t flag = put ? uct::iface_flag::PUT_ZCOPY : uct::iface_flag::GET_ZCOPY;
    if (!(t.attr().flags & flag)) {
        std::fprintf(stderr, "%s: %s has no %s zcopy\n", tool_name, t.description().c_str(),
                     put ? "put" : "get");
        return false;
    }
    if ((opts.size < lim.min_zcopy) || (opts.size > lim.max_zcopy)) {
        std::fprintf(stderr, "%s: %s zcopy size must be in [%zu, %zu]\n", tool_name,
                     put ? "put" : "get", lim.min_zcopy, lim.max_zcopy);
        return false;
    }
    return true;
}

/* The address of `buffer`, then its packed key: what the initiator needs. */
std::vector<uint8_t> describe_target(transport &t, exposed_buffer &buffer)
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

/* Streams the operations into/from the target described by `blob`; tells
 * the peer (if any) when done, whatever happened. */
int rma_stream(transport &t, const options &opts, const std::vector<uint8_t> &blob,
               oob *channel, timeline *tl)
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

    exposed_buffer local(t.md(), opts.size, opts.huge_pages);
    if (local.address() == nullptr) {
        std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts.size);
        t.component().rkey_release(rkey);
        tell_peer();
        return 1;
    }
    std::memset(local.address(), 0xc3, opts.size);
    if ((t.md().attr().flags & uct::md_flag::NEED_MEMH) &&
        (local.memh() == uct::MEM_HANDLE_NULL)) {
        std::fprintf(stderr, "%s: cannot register the local buffer\n", tool_name);
        t.component().rkey_release(rkey);
        tell_peer();
        return 1;
    }

    std::vector<slot> slots(MAX_OUTSTANDING);
    std::vector<unsigned> free_slots;
    free_slots.reserve(MAX_OUTSTANDING);
    for (unsigned i = 0; i < MAX_OUTSTANDING; ++i) {
        slots[i].func       = slot_done;
        slots[i].free_slots = &free_slots;
        slots[i].index      = i;
        free_slots.push_back(i);
    }
    const bool put = opts.test == test_kind::PUT_ZCOPY_BW;
    uct::iov iov{local.address(), opts.size, local.memh()};
    uct::ep &ep = t.ep();

    auto drain = [&] {
        for (;;) {
            ucs_status_t s = ep.flush(0, nullptr);
            if (s == UCS_OK) {
                break;
            }
            if ((s != UCS_ERR_NO_RESOURCE) && (s != UCS_INPROGRESS)) {
                return false;
            }
            t.progress();
        }
        while (free_slots.size() < MAX_OUTSTANDING) {
            t.progress();
        }
        return true;
    };

    /* Posts one operation once a slot is free; false on a hard failure. */
    auto post_one = [&] {
        while (free_slots.empty()) {
            t.progress();
        }
        /* Taken off the list before posting: completions that run while
         * progress retries NO_RESOURCE push other slots on its back. */
        slot &s  = slots[free_slots.back()];
        free_slots.pop_back();
        s.count  = 1;
        s.status = UCS_OK;
        ucs_status_t st;
        for (;;) {
            st = put ? ep.put_zcopy(&iov, 1, remote, rkey.rkey, &s)
                     : ep.get_zcopy(&iov, 1, remote, rkey.rkey, &s);
            if (st != UCS_ERR_NO_RESOURCE) {
                break;
            }
            t.progress();
        }
        if (st != UCS_INPROGRESS) {
            free_slots.push_back(s.index);   /* done at once, or failed */
        }
        if ((st != UCS_INPROGRESS) && (st != UCS_OK)) {
            std::fprintf(stderr, "%s: %s_zcopy failed: %s\n", tool_name,
                         put ? "put" : "get", ucs_status_string(st));
            return false;
        }
        return true;
    };

    tl->prepare(opts.iters);
    int result = 0;
    for (uint64_t i = 0; (i < opts.warmup) && (result == 0); ++i) {
        result = post_one() ? 0 : 1;
    }
    if ((result == 0) && !drain()) {
        std::fprintf(stderr, "%s: flush failed\n", tool_name);
        result = 1;
    }
    if (result == 0) {
        tl->start();
        for (uint64_t i = 0; (i < opts.iters) && (result == 0); ++i) {
            result = post_one() ? 0 : 1;
            tl->iteration_done();
        }
        if ((result == 0) && !drain()) {
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

int rma_responder(transport &t, const options &opts, oob &channel)
{
    exposed_buffer buffer(t.md(), opts.size, opts.huge_pages);
    if (buffer.address() == nullptr) {
        std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts.size);
        return 1;
    }
    std::memset(buffer.address(), 0x3c, opts.size);
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
    exposed_buffer target(t.md(), opts.size, opts.huge_pages);
    if (target.address() == nullptr) {
        std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", tool_name, opts.size);
        return 1;
    }
    return rma_stream(t, opts, describe_target(t, target), nullptr, tl);
}

} // namespace perf
