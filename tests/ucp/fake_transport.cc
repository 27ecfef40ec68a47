#include "fake_transport.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>

#include <cstdio>

#include <cstring>
#include <string>

namespace ucp_test {

std::atomic<unsigned long> fake_progress_calls{0};
std::atomic<int>           fake_open_ifaces{0};

bool is_fake_tl(const char *tl_name)
{
    return std::string(tl_name).rfind("ucp_test", 0) == 0;
}

namespace {

class test_iface : public uct::iface {
public:
    test_iface(uct::md &md, unsigned id) : m_md(md), m_id(id)
    {
        m_attr.flags           = uct::iface_flag::AM_SHORT |
                                 uct::iface_flag::CONNECT_TO_IFACE;
        m_attr.am.max_short    = 64;
        m_attr.device_addr_len = fake_dev_addr_len;
        m_attr.iface_addr_len  = fake_iface_addr_len;
        ++fake_open_ifaces;
    }

    ~test_iface() override
    {
        --fake_open_ifaces;
    }

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
        return (dev_addr_len == fake_dev_addr_len) &&
               (iface_addr_len == fake_iface_addr_len);
    }

    unsigned progress() override
    {
        ++fake_progress_calls;
        return 0;
    }

private:
    uct::md         &m_md;
    unsigned        m_id;
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
    uct::md_attr   m_attr;
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

struct registration {
    registration() { uct::register_component(&the_component); }
} the_registration;

} // namespace

} // namespace ucp_test
