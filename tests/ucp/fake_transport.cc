#include "fake_transport.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_module.h>
#include <queued_am.h>

#include <cstdio>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace ucp_test {

std::atomic<unsigned long> fake_progress_calls{0};
std::atomic<int> fake_open_ifaces{0};
std::atomic<bool> fake_zc_enabled{false};
std::atomic<bool> fake_zc_pins{false};
std::atomic<long> fake_zc_registrations{0};
std::atomic<unsigned long> fake_zc_reg_calls{0};
std::atomic<unsigned long> fake_zc_zcopy_sends{0};
std::atomic<unsigned long> fake_zc_bad_memh{0};

bool is_fake_tl(const char *tl_name)
{
    return std::string(tl_name).rfind("ucp_test", 0) == 0;
}

namespace {

class test_iface : public uct::iface {
public:
    test_iface(uct::md &md, unsigned id) : m_md(md), m_id(id)
    {
        m_attr.flags           = uct::iface_flag::AM_SHORT | uct::iface_flag::CONNECT_TO_IFACE;
        m_attr.am.max_short    = 64;
        m_attr.device_addr_len = fake_dev_addr_len;
        m_attr.iface_addr_len  = fake_iface_addr_len;
        ++fake_open_ifaces;
    }

    ~test_iface() override { --fake_open_ifaces; }

    const uct::iface_attr &attr() const override { return m_attr; }
    uct::md &owner_md() const override { return m_md; }

    ucs_status_t get_device_address(void *buffer) const override
    {
        std::memcpy(buffer, "fakedev", fake_dev_addr_len);
        return UCS_OK;
    }

    ucs_status_t get_address(void *buffer) const override
    {
        std::memcpy(buffer, &m_id, fake_iface_addr_len);
        return UCS_OK;
    }

    bool is_reachable(const void *, size_t dev_addr_len, const void *,
                      size_t iface_addr_len) const override
    {
        return (dev_addr_len == fake_dev_addr_len) && (iface_addr_len == fake_iface_addr_len);
    }

    unsigned progress() override
    {
        ++fake_progress_calls;
        return 0;
    }

private:
    uct::md &m_md;
    unsigned m_id;
    uct::iface_attr m_attr;
};

class test_md : public uct::md {
public:
    explicit test_md(uct::component &c) : m_component(c) {}

    const uct::md_attr &attr() const override { return m_attr; }
    uct::component &owner() const override { return m_component; }
    const char *name() const override { return fake_md; }

    ucs_status_t query_tl_resources(std::vector<uct::tl_resource> *out) override
    {
        uct::tl_resource net{}, self{};
        std::snprintf(net.tl_name, sizeof(net.tl_name), "%s", fake_net_tl);
        std::snprintf(net.dev_name, sizeof(net.dev_name), "%s", fake_net_dev);
        net.type = uct::device_type::NET;
        std::snprintf(self.tl_name, sizeof(self.tl_name), "%s", fake_self_tl);
        std::snprintf(self.dev_name, sizeof(self.dev_name), "%s", fake_self_dev);
        self.type = uct::device_type::SELF;
        out->assign({net, self});
        return UCS_OK;
    }

    ucs_status_t iface_open(uct::worker &, const uct::iface_params &params,
                            uct::iface **iface_p) override
    {
        if (!is_fake_tl(params.tl_name)) {
            return UCS_ERR_NO_DEVICE;
        }
        static std::atomic<unsigned> next_id{1};
        *iface_p = new test_iface(*this, next_id++);
        return UCS_OK;
    }

private:
    uct::component &m_component;
    uct::md_attr m_attr;
};

class test_component : public uct::component {
public:
    const char *name() const override { return fake_component; }

    ucs_status_t query_md_resources(std::vector<uct::md_resource> *out) override
    {
        uct::md_resource r{};
        std::snprintf(r.md_name, sizeof(r.md_name), "%s", fake_md);
        out->assign({r});
        return UCS_OK;
    }

    ucs_status_t md_open(const char *md_name, uct::md **md_p) override
    {
        if (std::strcmp(md_name, fake_md) != 0) {
            return UCS_ERR_NO_DEVICE;
        }
        *md_p = new test_md(*this);
        return UCS_OK;
    }
};

test_component the_component;

UCT_REGISTER_TRANSPORT(ucp_test, &the_component)

/* ---- ucp_test_zc -------------------------------------------------------- */

constexpr const char *zc_dev                  = "fzc0";
constexpr char zc_dev_addr[fake_dev_addr_len] = {'f', 'z', 'c', 'd', 'e', 'v', 0, 0};

struct zc_region {
    uintptr_t address;
    size_t length;
};

class zc_ep;

using zc_queue   = test::queued_ams<zc_ep>;
using zc_message = zc_queue::message;

class zc_iface : public uct::iface {
public:
    zc_iface(uct::md &md, unsigned id) : m_md(md), m_id(id)
    {
        m_attr.flags = uct::iface_flag::AM_BCOPY | uct::iface_flag::AM_ZCOPY |
                       uct::iface_flag::PENDING | uct::iface_flag::CONNECT_TO_IFACE;
        m_attr.am.max_bcopy    = fake_zc_max_bcopy;
        m_attr.am.max_zcopy    = 1u << 20;
        m_attr.am.max_iov      = fake_zc_max_iov;
        m_attr.am.max_hdr      = 128;
        m_attr.device_addr_len = fake_dev_addr_len;
        m_attr.iface_addr_len  = fake_iface_addr_len;
        m_attr.perf.latency_s  = 1.0; /* never preferred */
    }

    const uct::iface_attr &attr() const override { return m_attr; }
    uct::md &owner_md() const override { return m_md; }

    ucs_status_t get_device_address(void *buffer) const override
    {
        std::memcpy(buffer, zc_dev_addr, fake_dev_addr_len);
        return UCS_OK;
    }

    ucs_status_t get_address(void *buffer) const override
    {
        std::memcpy(buffer, &m_id, fake_iface_addr_len);
        return UCS_OK;
    }

    /* Loopback only: this very iface. */
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override
    {
        return (dev_addr_len == fake_dev_addr_len) && (iface_addr_len == fake_iface_addr_len) &&
               (std::memcmp(dev_addr, zc_dev_addr, fake_dev_addr_len) == 0) &&
               (std::memcmp(iface_addr, &m_id, fake_iface_addr_len) == 0);
    }

    ucs_status_t ep_create_connected(const void *, size_t, const void *, size_t,
                                     uct::ep **ep_p) override;

    unsigned progress() override;

    bool full() const { return m_queue.size() >= fake_zc_queue_max; }
    /* A new send must wait: no room, or queued ones go first (those retried
     * from the queue may go). */
    bool must_wait() const { return full() || (!pending.empty() && !m_dispatching); }
    void push(zc_message &&msg) { m_queue.push(std::move(msg)); }
    /* Drops what `ep` still has queued: nothing of it completes. */
    void forget(const zc_ep *ep) { m_queue.forget(ep); }

    std::deque<uct::pending_req *> pending;

private:
    uct::md &m_md;
    unsigned m_id;
    uct::iface_attr m_attr;
    zc_queue m_queue;
    bool m_dispatching = false;
};

class zc_ep : public uct::ep {
public:
    explicit zc_ep(zc_iface &iface) : uct::ep(iface), m_iface(iface) {}
    ~zc_ep() override { m_iface.forget(this); }

    ssize_t am_bcopy(uct::am_id_t id, uct::pack_callback_t pack, void *arg, unsigned) override
    {
        if (m_iface.must_wait()) {
            return UCS_ERR_NO_RESOURCE;
        }
        zc_message msg{this, id, std::vector<uint8_t>(fake_zc_max_bcopy), {}, nullptr};
        msg.bytes.resize(pack(msg.bytes.data(), arg));
        const ssize_t length = ssize_t(msg.bytes.size());
        m_iface.push(std::move(msg));
        return length;
    }

    ucs_status_t am_zcopy(uct::am_id_t id, const void *header, unsigned header_length,
                          const uct::iov *iov, size_t iovcnt, unsigned,
                          uct::completion *comp) override;

    ucs_status_t pending_add(uct::pending_req *req, unsigned) override
    {
        if (!m_iface.full() && m_iface.pending.empty()) {
            return UCS_ERR_BUSY;
        }
        m_iface.pending.push_back(req);
        return UCS_OK;
    }

    void pending_purge(uct::pending_purge_callback_t cb, void *arg) override
    {
        while (!m_iface.pending.empty()) {
            uct::pending_req *req = m_iface.pending.front();
            m_iface.pending.pop_front();
            cb(req, arg);
        }
    }

    ucs_status_t flush(unsigned, uct::completion *) override
    {
        return m_iface.full() ? UCS_ERR_NO_RESOURCE : UCS_OK;
    }

private:
    zc_iface &m_iface;
};

class zc_md : public uct::md {
public:
    explicit zc_md(uct::component &c) : m_component(c)
    {
        m_attr.flags = uct::md_flag::REG | uct::md_flag::NEED_MEMH |
                       (fake_zc_pins ? uct::md_flag::REG_PINS : 0);
        m_attr.max_reg        = SIZE_MAX;
        m_attr.reg_overhead_s = 100e-9;
    }

    const uct::md_attr &attr() const override { return m_attr; }
    uct::component &owner() const override { return m_component; }
    const char *name() const override { return fake_zc_tl; }

    ucs_status_t query_tl_resources(std::vector<uct::tl_resource> *out) override
    {
        uct::tl_resource r{};
        std::snprintf(r.tl_name, sizeof(r.tl_name), "%s", fake_zc_tl);
        std::snprintf(r.dev_name, sizeof(r.dev_name), "%s", zc_dev);
        r.type = uct::device_type::SELF;
        out->assign({r});
        return UCS_OK;
    }

    ucs_status_t iface_open(uct::worker &, const uct::iface_params &params,
                            uct::iface **iface_p) override
    {
        if (std::strcmp(params.tl_name, fake_zc_tl) != 0) {
            return UCS_ERR_NO_DEVICE;
        }
        static std::atomic<unsigned> next_id{1};
        *iface_p = new zc_iface(*this, next_id++);
        return UCS_OK;
    }

    ucs_status_t mem_reg(void *address, size_t length, unsigned, uct::mem_h *memh_p) override
    {
        *memh_p = new zc_region{reinterpret_cast<uintptr_t>(address), length};
        ++fake_zc_registrations;
        ++fake_zc_reg_calls;
        return UCS_OK;
    }

    ucs_status_t mem_dereg(uct::mem_h memh) override
    {
        delete static_cast<zc_region *>(memh);
        --fake_zc_registrations;
        return UCS_OK;
    }

private:
    uct::component &m_component;
    uct::md_attr m_attr;
};

class zc_component : public uct::component {
public:
    const char *name() const override { return fake_zc_tl; }

    ucs_status_t query_md_resources(std::vector<uct::md_resource> *out) override
    {
        if (!fake_zc_enabled) {
            return UCS_OK;
        }
        uct::md_resource r{};
        std::snprintf(r.md_name, sizeof(r.md_name), "%s", fake_zc_tl);
        out->push_back(r);
        return UCS_OK;
    }

    ucs_status_t md_open(const char *md_name, uct::md **md_p) override
    {
        if (std::strcmp(md_name, fake_zc_tl) != 0) {
            return UCS_ERR_NO_DEVICE;
        }
        *md_p = new zc_md(*this);
        return UCS_OK;
    }
};

ucs_status_t zc_iface::ep_create_connected(const void *, size_t, const void *, size_t,
                                           uct::ep **ep_p)
{
    *ep_p = new zc_ep(*this);
    return UCS_OK;
}

unsigned zc_iface::progress()
{
    const unsigned count = m_queue.deliver([this](uct::am_id_t id, void *data, size_t length) {
        invoke_am_handler(id, data, length, 0);
    });
    /* Queued sends, in order, while there is room. */
    while (!pending.empty() && !full()) {
        uct::pending_req *req = pending.front();
        pending.pop_front();
        m_dispatching             = true;
        const ucs_status_t status = req->func(req);
        m_dispatching             = false;
        if ((status == UCS_ERR_NO_RESOURCE) || (status == UCS_INPROGRESS)) {
            pending.push_front(req); /* stays first */
            break;
        }
    }
    return count;
}

ucs_status_t zc_ep::am_zcopy(uct::am_id_t id, const void *header, unsigned header_length,
                             const uct::iov *iov, size_t iovcnt, unsigned, uct::completion *comp)
{
    if ((header_length > m_iface.attr().am.max_hdr) || (iovcnt > fake_zc_max_iov)) {
        return UCS_ERR_INVALID_PARAM;
    }
    for (size_t i = 0; i < iovcnt; ++i) {
        const auto *r    = static_cast<const zc_region *>(iov[i].memh);
        const auto start = reinterpret_cast<uintptr_t>(iov[i].buffer);
        if ((r == nullptr) || (start < r->address) || (iov[i].length > r->length) ||
            (start - r->address > r->length - iov[i].length)) {
            ++fake_zc_bad_memh;
            return UCS_ERR_INVALID_PARAM;
        }
    }
    if (m_iface.must_wait()) {
        return UCS_ERR_NO_RESOURCE;
    }
    const auto *h = static_cast<const uint8_t *>(header);
    m_iface.push({this, id, std::vector<uint8_t>(h, h + header_length),
                  std::vector<uct::iov>(iov, iov + iovcnt), comp});
    ++fake_zc_zcopy_sends;
    return UCS_INPROGRESS;
}

zc_component the_zc_component;

UCT_REGISTER_TRANSPORT(ucp_test_zc, &the_zc_component)

} // namespace

} // namespace ucp_test
