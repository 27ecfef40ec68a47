/*
 * "testloop": a loopback transport built as a loadable module
 * (libuct_testloop.so), never installed. It proves the module seam (a
 * transport that libuct and ucp know nothing about at build time, listed by
 * ucx_info -d and used by ucp once its directory is UCX_MODULE_DIR) and
 * gives the registration cache an md that needs memory handles and pays
 * for registering:
 *
 * - md "testloop": REG | NEED_MEMH | NEED_RKEY. mem_reg spins for
 *   TESTLOOP_REG_COST_US microseconds (default 0) before answering, like a
 *   kernel registration would cost.
 * - iface "testloop"/"loop0" (SELF: reachable only from itself): AM bcopy
 *   and zcopy delivered from progress(), get/put zcopy done in the call.
 *   Every zcopy entry must carry a memory handle of this md that covers
 *   it, and every remote range must lie inside its key: otherwise the
 *   operation fails with UCS_ERR_INVALID_PARAM and is counted.
 *
 * Counters for tests and the benchmark: extern "C" testloop_counters().
 */
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_module.h>

#include "testloop_counters.h"
#include <queued_am.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

namespace testloop {

namespace {

constexpr const char *name     = "testloop";
constexpr const char *dev_name = "loop0";
constexpr uint64_t magic       = 0x706f6f6c74736574ull; /* "testloop" */
constexpr size_t max_bcopy     = 8192;
constexpr size_t max_iov       = 4;

testloop_counters counters{};

struct region {
    uint64_t magic;
    uintptr_t address;
    size_t length;
};

bool inside(uintptr_t start, size_t length, uintptr_t rstart, size_t rlength)
{
    return (start >= rstart) && (length <= rlength) && (start - rstart <= rlength - length);
}

/* Each zcopy entry must be covered by its own handle. */
bool memh_covers(const uct::iov *iov, size_t iovcnt)
{
    for (size_t i = 0; i < iovcnt; ++i) {
        const auto *r = static_cast<const region *>(iov[i].memh);
        if ((r == nullptr) || (r->magic != magic) ||
            !inside(reinterpret_cast<uintptr_t>(iov[i].buffer), iov[i].length, r->address,
                    r->length)) {
            __atomic_add_fetch(&counters.bad_memh, 1, __ATOMIC_RELAXED);
            return false;
        }
    }
    return true;
}

double reg_cost_s()
{
    static const double cost = [] {
        const char *text = std::getenv("TESTLOOP_REG_COST_US");
        return (text != nullptr) ? std::strtod(text, nullptr) * 1e-6 : 0.0;
    }();
    return cost;
}

class loop_ep;

using message = test::queued_ams<loop_ep>::message;

class loop_iface : public uct::iface {
public:
    loop_iface(uct::md &md, uint32_t id) : md_(md), id_(id)
    {
        using namespace uct::iface_flag;
        attr_.flags = AM_BCOPY | AM_ZCOPY | GET_ZCOPY | PUT_ZCOPY | PENDING | CONNECT_TO_IFACE;
        attr_.am.max_bcopy       = max_bcopy;
        attr_.am.max_zcopy       = size_t(1) << 20;
        attr_.am.max_iov         = max_iov;
        attr_.am.max_hdr         = 128;
        attr_.get.max_zcopy      = size_t(1) << 30;
        attr_.get.max_iov        = 1;
        attr_.put.max_zcopy      = size_t(1) << 30;
        attr_.put.max_iov        = 1;
        attr_.device_addr_len    = sizeof(magic);
        attr_.iface_addr_len     = sizeof(id_);
        attr_.perf.latency_s     = 1e-6;
        attr_.perf.bandwidth_Bps = 10e9;
    }

    const uct::iface_attr &attr() const override { return attr_; }
    uct::md &owner_md() const override { return md_; }

    ucs_status_t get_device_address(void *buffer) const override
    {
        std::memcpy(buffer, &magic, sizeof(magic));
        return UCS_OK;
    }

    ucs_status_t get_address(void *buffer) const override
    {
        std::memcpy(buffer, &id_, sizeof(id_));
        return UCS_OK;
    }

    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override
    {
        return (dev_addr_len == sizeof(magic)) && (iface_addr_len == sizeof(id_)) &&
               (std::memcmp(dev_addr, &magic, sizeof(magic)) == 0) &&
               (std::memcmp(iface_addr, &id_, sizeof(id_)) == 0);
    }

    ucs_status_t ep_create_connected(const void *, size_t, const void *, size_t,
                                     uct::ep **ep_p) override;

    unsigned progress() override;

    void push(message &&msg) { queue_.push(std::move(msg)); }
    void forget(const loop_ep *ep) { queue_.forget(ep); }

private:
    uct::md &md_;
    uint32_t id_;
    uct::iface_attr attr_;
    test::queued_ams<loop_ep> queue_;
};

class loop_ep : public uct::ep {
public:
    explicit loop_ep(loop_iface &iface) : uct::ep(iface), loop_iface_(iface) {}
    ~loop_ep() override { loop_iface_.forget(this); }

    ssize_t am_bcopy(uct::am_id_t id, uct::pack_callback_t pack, void *arg, unsigned) override
    {
        message msg{this, id, std::vector<uint8_t>(max_bcopy), {}, nullptr};
        msg.bytes.resize(pack(msg.bytes.data(), arg));
        const auto length = ssize_t(msg.bytes.size());
        loop_iface_.push(std::move(msg));
        return length;
    }

    ucs_status_t am_zcopy(uct::am_id_t id, const void *header, unsigned header_length,
                          const uct::iov *iov, size_t iovcnt, unsigned,
                          uct::completion *comp) override
    {
        if ((iovcnt > max_iov) || !memh_covers(iov, iovcnt)) {
            return UCS_ERR_INVALID_PARAM;
        }
        const auto *h = static_cast<const uint8_t *>(header);
        loop_iface_.push({this, id, std::vector<uint8_t>(h, h + header_length),
                          std::vector<uct::iov>(iov, iov + iovcnt), comp});
        return UCS_INPROGRESS;
    }

    ucs_status_t get_zcopy(const uct::iov *iov, size_t iovcnt, uint64_t remote_addr,
                           uct::rkey_t rkey, uct::completion *) override
    {
        return copy(iov, iovcnt, remote_addr, rkey, false);
    }

    ucs_status_t put_zcopy(const uct::iov *iov, size_t iovcnt, uint64_t remote_addr,
                           uct::rkey_t rkey, uct::completion *) override
    {
        return copy(iov, iovcnt, remote_addr, rkey, true);
    }

    ucs_status_t pending_add(uct::pending_req *, unsigned) override
    {
        return UCS_ERR_BUSY; /* never out of resources */
    }

    void pending_purge(uct::pending_purge_callback_t, void *) override {}

    ucs_status_t flush(unsigned, uct::completion *) override { return UCS_OK; }

private:
    ucs_status_t copy(const uct::iov *iov, size_t iovcnt, uint64_t remote_addr, uct::rkey_t rkey,
                      bool put)
    {
        const auto *remote = reinterpret_cast<const region *>(rkey);
        if ((iovcnt != 1) || !memh_covers(iov, iovcnt) || (remote == nullptr) ||
            (remote->magic != magic) ||
            !inside(remote_addr, iov[0].length, remote->address, remote->length)) {
            __atomic_add_fetch(&counters.bad_rkey, 1, __ATOMIC_RELAXED);
            return UCS_ERR_INVALID_PARAM;
        }
        void *far = reinterpret_cast<void *>(remote_addr);
        if (put) {
            std::memcpy(far, iov[0].buffer, iov[0].length);
        } else {
            std::memcpy(const_cast<void *>(iov[0].buffer), far, iov[0].length);
        }
        return UCS_OK;
    }

    loop_iface &loop_iface_;
};

ucs_status_t loop_iface::ep_create_connected(const void *, size_t, const void *, size_t,
                                             uct::ep **ep_p)
{
    *ep_p = new loop_ep(*this);
    return UCS_OK;
}

unsigned loop_iface::progress()
{
    return queue_.deliver([this](uct::am_id_t id, void *data, size_t length) {
        invoke_am_handler(id, data, length, 0);
    });
}

class loop_md : public uct::md {
public:
    explicit loop_md(uct::component &c) : component_(c)
    {
        using namespace uct::md_flag;
        attr_.flags            = REG | NEED_MEMH | NEED_RKEY;
        attr_.max_reg          = SIZE_MAX;
        attr_.rkey_packed_size = sizeof(region);
        attr_.reg_overhead_s   = reg_cost_s() + 50e-9;
    }

    const uct::md_attr &attr() const override { return attr_; }
    uct::component &owner() const override { return component_; }
    const char *name() const override { return testloop::name; }

    ucs_status_t query_tl_resources(std::vector<uct::tl_resource> *out) override
    {
        uct::tl_resource r{};
        uct::copy_resource_name(r.tl_name, testloop::name);
        uct::copy_resource_name(r.dev_name, dev_name);
        r.type = uct::device_type::SELF;
        out->assign({r});
        return UCS_OK;
    }

    ucs_status_t iface_open(uct::worker &, const uct::iface_params &params,
                            uct::iface **iface_p) override
    {
        if ((params.tl_name != nullptr) && (std::strcmp(params.tl_name, testloop::name) != 0)) {
            return UCS_ERR_NO_DEVICE;
        }
        static std::atomic<uint32_t> next_id{1};
        *iface_p = new loop_iface(*this, next_id++);
        return UCS_OK;
    }

    ucs_status_t mem_reg(void *address, size_t length, unsigned, uct::mem_h *memh_p) override
    {
        if ((memh_p == nullptr) || (length == 0)) {
            return UCS_ERR_INVALID_PARAM;
        }
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::duration<double>(reg_cost_s());
        while (std::chrono::steady_clock::now() < deadline) {
            /* what a pinning registration would cost */
        }
        *memh_p = new region{magic, reinterpret_cast<uintptr_t>(address), length};
        __atomic_add_fetch(&counters.registrations, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&counters.live, 1, __ATOMIC_RELAXED);
        return UCS_OK;
    }

    ucs_status_t mem_dereg(uct::mem_h memh) override
    {
        auto *r = static_cast<region *>(memh);
        if ((r == nullptr) || (r->magic != magic)) {
            return UCS_ERR_INVALID_PARAM;
        }
        r->magic = 0;
        delete r;
        __atomic_sub_fetch(&counters.live, 1, __ATOMIC_RELAXED);
        return UCS_OK;
    }

    ucs_status_t mkey_pack(uct::mem_h memh, void *buffer) override
    {
        const auto *r = static_cast<const region *>(memh);
        if ((r == nullptr) || (r->magic != magic) || (buffer == nullptr)) {
            return UCS_ERR_INVALID_PARAM;
        }
        std::memcpy(buffer, r, sizeof(*r));
        return UCS_OK;
    }

private:
    uct::component &component_;
    uct::md_attr attr_;
};

class loop_component : public uct::component {
public:
    const char *name() const override { return testloop::name; }

    ucs_status_t query_md_resources(std::vector<uct::md_resource> *out) override
    {
        return uct::single_md_resource(testloop::name, out);
    }

    ucs_status_t md_open(const char *md_name, uct::md **md_p) override
    {
        if (std::strcmp(md_name, testloop::name) != 0) {
            return UCS_ERR_NO_DEVICE;
        }
        *md_p = new loop_md(*this);
        return UCS_OK;
    }

    ucs_status_t rkey_unpack(const void *buffer, size_t length, uct::rkey_bundle *rkey_p) override
    {
        region r;
        if ((buffer == nullptr) || (length != sizeof(r))) {
            return UCS_ERR_INVALID_PARAM;
        }
        std::memcpy(&r, buffer, sizeof(r));
        if (r.magic != magic) {
            return UCS_ERR_INVALID_PARAM;
        }
        auto *copy     = new region(r);
        rkey_p->rkey   = reinterpret_cast<uct::rkey_t>(copy);
        rkey_p->handle = copy;
        return UCS_OK;
    }

    void rkey_release(const uct::rkey_bundle &rkey) override
    {
        delete static_cast<region *>(rkey.handle);
    }
};

loop_component the_component;

} // namespace

UCT_REGISTER_TRANSPORT(testloop, &the_component)

} // namespace testloop

extern "C" const testloop_counters *testloop_get_counters()
{
    return &testloop::counters;
}
