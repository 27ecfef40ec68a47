#include "conform_pair.h"

#include "two_process.h"

#include <exception>

#include <sched.h>

namespace test::conform {

namespace {

/* The type of the resource `spec` names, false if this machine has none. */
bool find_resource(const transport_spec &spec, uct::device_type *type)
{
    uct::component *comp;
    uct::md *md;
    uct::tl_resource resource;
    if (uct::open_md_of(spec.tl, spec.dev, &comp, &md, &resource) != UCS_OK) {
        return false;
    }
    delete md;
    *type = resource.type;
    return true;
}

} // namespace

pair::pair(const transport_spec &spec) : spec_(spec)
{
    uct::device_type type;
    if (!find_resource(spec, &type)) {
        why_ = "no resource for transport '" + spec.tl + "'" +
               (spec.dev.empty() ? "" : " on device '" + spec.dev + "'") + " on this machine";
        return;
    }

    /* The peer process is forked before this one opens anything. */
    if (type != uct::device_type::SELF) {
        peer_ = make_remote_peer(
            spec, [this] { return entity_ ? entity_->progress() : 0u; }, &why_);
        INFO(why_);
        REQUIRE(peer_ != nullptr);
    }
    entity_ = std::make_unique<uct_entity>(spec.tl, spec.dev, RX_HEADROOM, "", on_error, this);
    INFO(entity_->error());
    REQUIRE(entity_->ok());
    registrations_ = std::make_unique<registration_scope>(entity_->md());
    if (type == uct::device_type::SELF) {
        peer_ = make_local_peer(*entity_);
    }
    if (attr().flags & uct::iface_flag::CONNECT_TO_IFACE) {
        ep_ = entity_->connect(peer_->addresses());
        REQUIRE(ep_ != nullptr);
        return;
    }
    /* Connect-to-ep (an RC queue pair): each side makes an ep and connects
     * it to the other's. */
    REQUIRE((attr().flags & uct::iface_flag::CONNECT_TO_EP) != 0);
    std::vector<uint8_t> own, theirs;
    ep_ = entity_->create_ep(&own);
    REQUIRE(ep_ != nullptr);
    REQUIRE(peer_->connect_ep(entity_->addresses().device, own, &theirs));
    const std::vector<uint8_t> &device = peer_->addresses().device;
    REQUIRE(ep_->connect_to_ep(device.data(), device.size(), theirs.data(), theirs.size()) ==
            UCS_OK);
}

pair::~pair()
{
    if (peer_ == nullptr) {
        return;
    }
    bool finished = peer_->finish();
    peer_.reset();
    if (!finished && (std::uncaught_exceptions() == 0)) {
        FAIL_CHECK(name() << ": the peer process did not end cleanly");
    }
}

ucs_status_t pair::on_error(void *arg, uct::ep *ep, ucs_status_t status)
{
    static_cast<pair *>(arg)->failures_.push_back({ep, status});
    return UCS_OK;
}

bool pair::wait_until(const std::function<bool()> &done)
{
    return poll_until(
        done,
        [this] {
        if (progress() == 0) {
            sched_yield();
        }
        },
        WAIT_TIMEOUT);
}

ucs_status_t pair::retry(const std::function<ucs_status_t()> &op)
{
    ucs_status_t status = UCS_ERR_NO_RESOURCE;
    wait_until([&] {
        status = op();
        return status != UCS_ERR_NO_RESOURCE;
    });
    return status;
}

ucs_status_t pair::complete(ucs_status_t status, counted_comp &comp)
{
    if (status != UCS_INPROGRESS) {
        return status;
    }
    if (!wait_until([&] { return comp.fired != 0; })) {
        return UCS_ERR_TIMED_OUT;
    }
    return comp.last;
}

ucs_status_t pair::flush_ep()
{
    counted_comp comp;
    ucs_status_t status = retry([&] { return ep_->flush(0, &comp); });
    return complete(status, comp);
}

pair::remote_region pair::expose(size_t length, uint64_t seed)
{
    remote_region region;
    REQUIRE(peer_->expose(length, seed, &region.desc));
    REQUIRE(region.desc.length >= length);
    region.key          = std::make_unique<unpacked_key>(component());
    ucs_status_t status = region.key->unpack(region.desc.packed_key);
    INFO("rkey_unpack: " << ucs_status_string(status));
    REQUIRE(status == UCS_OK);
    return region;
}

} // namespace test::conform
