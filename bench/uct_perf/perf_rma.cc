/*
 * One-sided benchmarks: the responder exposes a buffer (allocated by its md
 * when the md can, registered otherwise) and only progresses; the initiator
 * streams put_zcopy or get_zcopy into/from it, up to MAX_OUTSTANDING in
 * flight, and stops the clock when a flush has completed them all.
 */
#include "perf_clock.h"
#include "perf_peer.h"
#include "perf_report.h"
#include "perf_tests.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sys/mman.h>
#include <vector>

namespace perf {

namespace {

constexpr unsigned MAX_OUTSTANDING = 128;

/*
 * Page-aligned memory of this process; with `huge`, 2 MiB aligned and
 * advised onto transparent huge pages (fewer TLB misses in the copy, and
 * far fewer pages for the kernel to pin per CMA call).
 */
class plain_buffer {
public:
    plain_buffer(size_t size, bool huge)
    {
        const size_t align = huge ? HUGE_PAGE : 4096;
        length_ = (size + align - 1) / align * align;
        if (huge) {
            /* Over-allocate by one huge page to place the start on a boundary. */
            map_length_ = length_ + HUGE_PAGE;
            void *map = mmap(nullptr, map_length_, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (map == MAP_FAILED) {
                return;
            }
            map_     = map;
            address_ = reinterpret_cast<void*>(
                    (reinterpret_cast<uintptr_t>(map) + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
            if (madvise(address_, length_, MADV_HUGEPAGE) != 0) {
                std::fprintf(stderr, "uct_perf: madvise(MADV_HUGEPAGE): %s\n",
                             std::strerror(errno));
            }
        } else {
            address_ = std::aligned_alloc(align, length_);
        }
    }

    ~plain_buffer()
    {
        if (map_ != nullptr) {
            munmap(map_, map_length_);
        } else {
            std::free(address_);
        }
    }

    plain_buffer(const plain_buffer &)            = delete;
    plain_buffer &operator=(const plain_buffer &) = delete;

    void *address() const { return address_; }

private:
    static constexpr size_t HUGE_PAGE = size_t(2) << 20;

    void   *address_    = nullptr;
    void   *map_        = nullptr;
    size_t map_length_  = 0;
    size_t length_      = 0;
};

/* Memory the md can describe to a peer: allocated or registered. */
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
        length_ = size;
        plain_ = std::make_unique<plain_buffer>(size, huge);
        address_ = plain_->address();
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
    uct::md                       &md_;
    std::unique_ptr<plain_buffer> plain_;
    void                          *address_ = nullptr;
    size_t                        length_ = 0;
    uct::mem_h                    memh_ = uct::MEM_HANDLE_NULL;
    bool                          allocated_ = false;
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
        std::fprintf(stderr, "uct_perf: %s has no %s zcopy\n", t.description().c_str(),
                     put ? "put" : "get");
        return false;
    }
    if ((opts.size < lim.min_zcopy) || (opts.size > lim.max_zcopy)) {
        std::fprintf(stderr, "uct_perf: %s zcopy size must be in [%zu, %zu]\n",
                     put ? "put" : "get", lim.min_zcopy, lim.max_zcopy);
        return false;
    }
    return true;
}

} // namespace

int rma_responder(transport &t, const options &opts, int fd)
{
    exposed_buffer buffer(t.md(), opts.size, opts.huge_pages);
    if (buffer.address() == nullptr) {
        std::fprintf(stderr, "uct_perf: cannot allocate %zu bytes\n", opts.size);
        return 1;
    }
    std::memset(buffer.address(), 0x3c, opts.size);
    uint64_t address = reinterpret_cast<uintptr_t>(buffer.address());
    std::vector<uint8_t> blob(sizeof(address) + t.md().attr().rkey_packed_size);
    std::memcpy(blob.data(), &address, sizeof(address));
    if ((t.md().attr().rkey_packed_size > 0) &&
        (t.md().mkey_pack(buffer.memh(), blob.data() + sizeof(address)) != UCS_OK)) {
        std::fprintf(stderr, "uct_perf: cannot pack a key for the target buffer\n");
        blob.resize(sizeof(address));
    }
    if (!send_blob(fd, blob)) {
        return 1;
    }
    if (opts.no_responder_progress) {
        /* Like UCX's ucx_perftest -o: the target's CPU stays out of the way. */
        uint8_t byte;
        return recv_byte(fd, &byte) ? 0 : 1;
    }
    return progress_until_peer_done(t, fd) ? 0 : 1;
}

int rma_initiator(transport &t, const options &opts, int fd)
{
    bool ok = supported(t, opts);
    std::vector<uint8_t> blob;
    if (!recv_blob(fd, &blob) || (blob.size() < sizeof(uint64_t))) {
        std::fprintf(stderr, "uct_perf: no target buffer from the peer\n");
        return 1;
    }
    if (!ok) {
        send_byte(fd, 0);
        return 1;
    }
    uint64_t remote;
    std::memcpy(&remote, blob.data(), sizeof(remote));
    uct::rkey_bundle rkey;
    ucs_status_t status = t.component().rkey_unpack(blob.data() + sizeof(remote),
                                                    blob.size() - sizeof(remote), &rkey);
    if (status != UCS_OK) {
        std::fprintf(stderr, "uct_perf: rkey_unpack: %s\n", ucs_status_string(status));
        send_byte(fd, 0);
        return 1;
    }

    exposed_buffer local(t.md(), opts.size, opts.huge_pages);
    std::memset(local.address(), 0xc3, opts.size);
    if ((t.md().attr().flags & uct::md_flag::NEED_MEMH) &&
        (local.memh() == uct::MEM_HANDLE_NULL)) {
        std::fprintf(stderr, "uct_perf: cannot register the local buffer\n");
        t.component().rkey_release(rkey);
        send_byte(fd, 0);
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

    print_header(opts, t.description().c_str());
    std::fflush(stdout);
    tick_rate rate;
    const uint64_t total = opts.warmup + opts.iters;
    int result = 0;
    for (uint64_t i = 0; (i < total) && (result == 0); ++i) {
        if (i == opts.warmup) {
            if (!drain()) {
                result = 1;
                break;
            }
            rate.start();
        }
        while (free_slots.empty()) {
            t.progress();
        }
        /* Taken off the list before posting: completions that run while
         * progress retries NO_RESOURCE push other slots on its back. */
        slot &s  = slots[free_slots.back()];
        free_slots.pop_back();
        s.count  = 1;
        s.status = UCS_OK;
        for (;;) {
            status = put ? ep.put_zcopy(&iov, 1, remote, rkey.rkey, &s)
                         : ep.get_zcopy(&iov, 1, remote, rkey.rkey, &s);
            if (status != UCS_ERR_NO_RESOURCE) {
                break;
            }
            t.progress();
        }
        if (status != UCS_INPROGRESS) {
            free_slots.push_back(s.index);   /* done at once, or failed */
        }
        if ((status != UCS_INPROGRESS) && (status != UCS_OK)) {
            std::fprintf(stderr, "uct_perf: %s_zcopy failed: %s\n", put ? "put" : "get",
                         ucs_status_string(status));
            result = 1;
        }
    }
    if ((result == 0) && !drain()) {
        std::fprintf(stderr, "uct_perf: flush failed\n");
        result = 1;
    }
    rate.stop();
    send_byte(fd, 0);
    t.component().rkey_release(rkey);
    if (result == 0) {
        print_bandwidth(opts, bandwidth_from(opts.iters, opts.size, rate.elapsed_s()));
    }
    return result;
}

int memcpy_bandwidth(const options &opts)
{
    plain_buffer source(opts.size, opts.huge_pages);
    plain_buffer dest(opts.size, opts.huge_pages);
    if ((source.address() == nullptr) || (dest.address() == nullptr)) {
        std::fprintf(stderr, "uct_perf: cannot allocate 2 x %zu bytes\n", opts.size);
        return 1;
    }
    std::memset(source.address(), 0x3c, opts.size);
    std::memset(dest.address(), 0xc3, opts.size);

    print_header(opts, "memcpy");
    std::fflush(stdout);
    tick_rate rate;
    for (uint64_t i = 0; i < opts.warmup + opts.iters; ++i) {
        if (i == opts.warmup) {
            rate.start();
        }
        std::memcpy(dest.address(), source.address(), opts.size);
        /* Keep every copy: the compiler may not merge or drop them. */
        asm volatile("" : : "r"(dest.address()) : "memory");
    }
    rate.stop();
    print_bandwidth(opts, bandwidth_from(opts.iters, opts.size, rate.elapsed_s()));
    return 0;
}

} // namespace perf
