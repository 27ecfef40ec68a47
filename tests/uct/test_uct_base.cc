#include <catch2/catch.hpp>

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>

#include <memory>
#include <vector>

#include <cstring>

namespace {

/* A minimal iface to exercise the base class's AM dispatch table. */
class fake_iface : public uct::iface {
public:
    const uct::iface_attr &attr() const override { return attr_; }
    uct::md &owner_md() const override { throw 0; }
    ucs_status_t get_device_address(void *) const override { return UCS_OK; }
    ucs_status_t get_address(void *) const override { return UCS_OK; }
    bool is_reachable(const void *, size_t, const void *, size_t) const override { return false; }
    unsigned progress() override { return 0; }

    ucs_status_t deliver(uct::am_id_t id, void *data, size_t length)
    {
        return invoke_am_handler(id, data, length, 0);
    }

private:
    uct::iface_attr attr_;
};

struct am_capture {
    int calls     = 0;
    size_t length = 0;
    char text[16] = {};
};

ucs_status_t capture_am(void *arg, void *data, size_t length, unsigned)
{
    auto *c = static_cast<am_capture *>(arg);
    ++c->calls;
    c->length = length;
    std::memcpy(c->text, data, std::min(length, sizeof(c->text) - 1));
    return UCS_OK;
}

} // namespace

TEST_CASE("AM handlers dispatch by id; unknown ids are dropped", "[uct_base]")
{
    fake_iface iface;
    am_capture cap;
    char msg[] = "ping";

    REQUIRE(iface.set_am_handler(5, capture_am, &cap, 0) == UCS_OK);
    CHECK(iface.deliver(5, msg, 4) == UCS_OK);
    CHECK(cap.calls == 1);
    CHECK(cap.length == 4);
    CHECK(std::string(cap.text) == "ping");

    /* No handler on id 6, and an id past the table: dropped, not a crash. */
    CHECK(iface.deliver(6, msg, 4) == UCS_OK);
    CHECK(iface.deliver(200, msg, 4) == UCS_OK);
    CHECK(cap.calls == 1);

    CHECK(iface.set_am_handler(uct::AM_ID_MAX, capture_am, &cap, 0) == UCS_ERR_INVALID_PARAM);
    REQUIRE(iface.set_am_handler(5, nullptr, nullptr, 0) == UCS_OK);
    CHECK(iface.deliver(5, msg, 4) == UCS_OK);
    CHECK(cap.calls == 1);
}

TEST_CASE("completions fire once at zero and keep the first error", "[uct_base]")
{
    struct counted : uct::completion {
        int fired = 0;
    } comp;
    comp.func   = [](uct::completion *self) { ++static_cast<counted *>(self)->fired; };
    comp.count  = 3;
    comp.status = UCS_OK;

    uct::invoke_completion(&comp, UCS_OK);
    uct::invoke_completion(&comp, UCS_ERR_IO_ERROR);
    CHECK(comp.fired == 0);
    uct::invoke_completion(&comp, UCS_ERR_CANCELED);
    CHECK(comp.fired == 1);
    CHECK(comp.status == UCS_ERR_IO_ERROR);
}

TEST_CASE("an ep's unsupported operations say so", "[uct_base]")
{
    fake_iface iface;
    uct::ep ep(iface);
    CHECK(ep.am_short(0, 0, nullptr, 0) == UCS_ERR_UNSUPPORTED);
    CHECK(ep.am_bcopy(0, nullptr, nullptr, 0) == UCS_ERR_UNSUPPORTED);
    CHECK(ep.put_zcopy(nullptr, 0, 0, 0, nullptr) == UCS_ERR_UNSUPPORTED);
    CHECK(ep.atomic_post(uct::atomic_op::ADD, 8, 1, 0, 0) == UCS_ERR_UNSUPPORTED);
    CHECK(ep.flush(0, nullptr) == UCS_OK);
}

TEST_CASE("every transport says how its eps connect", "[uct_base]")
{
    uct::worker worker(nullptr, UCS_THREAD_MODE_SINGLE);
    unsigned opened = 0;
    for (uct::component *c : uct::components()) {
        std::vector<uct::md_resource> mds;
        REQUIRE(c->query_md_resources(&mds) == UCS_OK);
        for (const uct::md_resource &m : mds) {
            uct::md *md = nullptr;
            REQUIRE(c->md_open(m.md_name, &md) == UCS_OK);
            std::unique_ptr<uct::md> md_owner(md);
            std::vector<uct::tl_resource> tls;
            REQUIRE(md->query_tl_resources(&tls) == UCS_OK);
            for (const uct::tl_resource &tl : tls) {
                uct::iface_params params;
                params.tl_name    = tl.tl_name;
                params.dev_name   = tl.dev_name;
                uct::iface *iface = nullptr;
                if (md->iface_open(worker, params, &iface) != UCS_OK) {
                    WARN(tl.tl_name << "/" << tl.dev_name << " does not open here");
                    continue;
                }
                std::unique_ptr<uct::iface> iface_owner(iface);
                ++opened;
                INFO(tl.tl_name << "/" << tl.dev_name);
                const uct::iface_attr &attr = iface->attr();
                /* Every transport here connects to an iface; none to an ep. */
                CHECK((attr.flags & uct::iface_flag::CONNECT_TO_IFACE) != 0);
                CHECK((attr.flags & uct::iface_flag::CONNECT_TO_EP) == 0);
                CHECK(attr.ep_addr_len == 0);
                uct::ep *ep = nullptr;
                CHECK(iface->ep_create(&ep) == UCS_ERR_UNSUPPORTED);
                worker.progress_unregister(iface);
            }
        }
    }
    CHECK(opened >= 4); /* self, posix, sysv, tcp at least */
}

TEST_CASE("open_md_of finds the md of a transport, on a device or any", "[uct_base]")
{
    uct::component *comp = nullptr;
    uct::md *md          = nullptr;
    uct::tl_resource resource{};
    REQUIRE(uct::open_md_of("self", "", &comp, &md, &resource) == UCS_OK);
    std::unique_ptr<uct::md> owned(md);
    REQUIRE(comp != nullptr);
    CHECK(std::strcmp(resource.tl_name, "self") == 0);
    const std::string device = resource.dev_name;

    uct::md *again = nullptr;
    CHECK(uct::open_md_of("self", device, &comp, &again, &resource) == UCS_OK);
    delete again;
    CHECK(std::strcmp(resource.dev_name, device.c_str()) == 0);

    uct::md *none = nullptr;
    CHECK(uct::open_md_of("self", "no-such-device", &comp, &none, &resource) == UCS_ERR_NO_DEVICE);
    CHECK(uct::open_md_of("no-such-transport", "", &comp, &none, &resource) == UCS_ERR_NO_DEVICE);
    CHECK(none == nullptr);
}
