#include "uct_test_util.h"

#include <cstring>

namespace test {

std::vector<uint8_t> uct_addresses::serialize() const
{
    uint32_t lens[2] = {uint32_t(device.size()), uint32_t(iface.size())};
    std::vector<uint8_t> blob(sizeof(lens) + device.size() + iface.size());
    std::memcpy(blob.data(), lens, sizeof(lens));
    if (!device.empty()) {
        std::memcpy(blob.data() + sizeof(lens), device.data(), device.size());
    }
    if (!iface.empty()) {
        std::memcpy(blob.data() + sizeof(lens) + device.size(), iface.data(), iface.size());
    }
    return blob;
}

bool uct_addresses::deserialize(const std::vector<uint8_t> &blob, uct_addresses *out)
{
    uint32_t lens[2];
    if (blob.size() < sizeof(lens)) {
        return false;
    }
    std::memcpy(lens, blob.data(), sizeof(lens));
    if (blob.size() != sizeof(lens) + size_t(lens[0]) + lens[1]) {
        return false;
    }
    auto p = blob.begin() + sizeof(lens);
    out->device.assign(p, p + lens[0]);
    out->iface.assign(p + lens[0], blob.end());
    return true;
}

uct_entity::uct_entity(const std::string &tl_name, const std::string &dev_name, size_t rx_headroom,
                       const std::string &env_prefix, uct::error_handler_t err_handler,
                       void *err_arg)
{
    worker_ = std::make_unique<uct::worker>(nullptr, UCS_THREAD_MODE_SINGLE);

    uct::tl_resource chosen{};
    if (uct::open_md_of(tl_name, dev_name, &component_, &md_, &chosen) != UCS_OK) {
        error_ = "transport '" + tl_name + "' not found";
        return;
    }
    uct::iface_params params;
    params.tl_name         = chosen.tl_name;
    params.dev_name        = chosen.dev_name;
    params.rx_headroom     = rx_headroom;
    params.env_prefix      = env_prefix.c_str();
    params.err_handler     = err_handler;
    params.err_handler_arg = err_arg;
    ucs_status_t status    = md_->iface_open(*worker_, params, &iface_);
    if (status != UCS_OK) {
        error_ = std::string("iface_open(") + tl_name + "): " + ucs_status_string(status);
        iface_ = nullptr;
    }
}

uct_entity::~uct_entity()
{
    for (uct::ep *ep : eps_) {
        delete ep;
    }
    delete iface_;
    delete md_;
}

uct_addresses addresses_of(const uct::iface &iface)
{
    uct_addresses addr;
    addr.device.resize(iface.attr().device_addr_len);
    addr.iface.resize(iface.attr().iface_addr_len);
    iface.get_device_address(addr.device.data());
    iface.get_address(addr.iface.data());
    return addr;
}

uct::ep *connect_to(uct::iface &iface, const uct_addresses &peer, std::vector<uct::ep *> *owned)
{
    uct::ep *ep = nullptr;
    if (iface.ep_create_connected(peer.device.data(), peer.device.size(), peer.iface.data(),
                                  peer.iface.size(), &ep) != UCS_OK) {
        return nullptr;
    }
    owned->push_back(ep);
    return ep;
}

uct_addresses uct_entity::addresses() const
{
    return addresses_of(*iface_);
}

uct::ep *uct_entity::connect(const uct_addresses &peer)
{
    return connect_to(*iface_, peer, &eps_);
}

uct::ep *uct_entity::create_ep(std::vector<uint8_t> *ep_address)
{
    uct::ep *ep = nullptr;
    if (iface_->ep_create(&ep) != UCS_OK) {
        return nullptr;
    }
    eps_.push_back(ep);
    ep_address->resize(iface_->attr().ep_addr_len);
    return (ep->get_address(ep_address->data()) == UCS_OK) ? ep : nullptr;
}

} // namespace test
