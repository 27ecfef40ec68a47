#include "perf_transport.h"

#include "perf_tests.h"

#include <cstdio>
#include <cstring>

namespace perf {

const char *tool_name = "uct_perf";

namespace {

const char *device_type_name(uct::device_type type)
{
    switch (type) {
    case uct::device_type::NET:
        return "net";
    case uct::device_type::SHM:
        return "shm";
    case uct::device_type::ACC:
        return "acc";
    case uct::device_type::SELF:
        return "self";
    }
    return "?";
}

/* Length-prefixed concatenation of byte strings. */
void append_field(std::vector<uint8_t> *blob, const std::vector<uint8_t> &field)
{
    uint32_t length = uint32_t(field.size());
    auto *p         = reinterpret_cast<const uint8_t *>(&length);
    blob->insert(blob->end(), p, p + sizeof(length));
    blob->insert(blob->end(), field.begin(), field.end());
}

bool take_field(const std::vector<uint8_t> &blob, size_t *offset, std::vector<uint8_t> *field)
{
    uint32_t length;
    if (blob.size() - *offset < sizeof(length)) {
        return false;
    }
    std::memcpy(&length, blob.data() + *offset, sizeof(length));
    *offset += sizeof(length);
    if (blob.size() - *offset < length) {
        return false;
    }
    field->assign(blob.begin() + long(*offset), blob.begin() + long(*offset + length));
    *offset += length;
    return true;
}

} // namespace

transport::~transport()
{
    delete ep_;
    delete iface_;
    delete md_;
}

bool transport::open(const std::string &tl_name, const std::string &dev_name, bool async_thread)
{
    if (async_thread) {
        /* What UCX's -A thread_* asks for: events handled on a thread. */
        ucs_status_t status = ucs::async_context::create(ucs::async_mode::thread, &async_);
        if (status != UCS_OK) {
            std::fprintf(stderr, "%s: cannot create the async context: %s\n", tool_name,
                         ucs_status_string(status));
            return false;
        }
    }
    worker_ = std::make_unique<uct::worker>(async_.get(), UCS_THREAD_MODE_SINGLE);
    uct::tl_resource chosen{};
    if (uct::open_md_of(tl_name, dev_name, &component_, &md_, &chosen) != UCS_OK) {
        std::fprintf(stderr, "%s: no transport '%s'%s%s (ucx_info -d lists them)\n", tool_name,
                     tl_name.c_str(), dev_name.empty() ? "" : " on device ", dev_name.c_str());
        return false;
    }
    uct::iface_params params;
    params.tl_name      = chosen.tl_name;
    params.dev_name     = chosen.dev_name;
    ucs_status_t status = md_->iface_open(*worker_, params, &iface_);
    if (status != UCS_OK) {
        std::fprintf(stderr, "%s: cannot open %s/%s: %s\n", tool_name, chosen.tl_name,
                     chosen.dev_name, ucs_status_string(status));
        iface_ = nullptr;
        return false;
    }
    description_ = std::string(chosen.tl_name) + "/" + chosen.dev_name;
    type_        = chosen.type;
    return true;
}

bool transport::connect_peer(oob &channel)
{
    const uct::iface_attr &a = iface_->attr();
    const bool to_ep         = !(a.flags & uct::iface_flag::CONNECT_TO_IFACE);
    if (to_ep && !(a.flags & uct::iface_flag::CONNECT_TO_EP)) {
        std::fprintf(stderr, "%s: %s connects neither to an iface nor to an ep\n", tool_name,
                     description_.c_str());
        return false;
    }

    std::vector<uint8_t> dev(a.device_addr_len), ifa(a.iface_addr_len), epa;
    if ((iface_->get_device_address(dev.data()) != UCS_OK) ||
        (iface_->get_address(ifa.data()) != UCS_OK)) {
        std::fprintf(stderr, "%s: cannot get the addresses of %s\n", tool_name,
                     description_.c_str());
        return false;
    }
    if (to_ep) {
        ucs_status_t status = iface_->ep_create(&ep_);
        if (status != UCS_OK) {
            std::fprintf(stderr, "%s: ep_create: %s\n", tool_name, ucs_status_string(status));
            return false;
        }
        epa.resize(a.ep_addr_len);
        if (ep_->get_address(epa.data()) != UCS_OK) {
            std::fprintf(stderr, "%s: cannot get the ep address\n", tool_name);
            return false;
        }
    }

    std::vector<uint8_t> mine, theirs, peer_dev, peer_iface, peer_ep;
    append_field(&mine, dev);
    append_field(&mine, ifa);
    append_field(&mine, epa);
    size_t offset = 0;
    if (!channel.exchange(mine, &theirs) || !take_field(theirs, &offset, &peer_dev) ||
        !take_field(theirs, &offset, &peer_iface) || !take_field(theirs, &offset, &peer_ep)) {
        std::fprintf(stderr, "%s: address exchange with the peer failed\n", tool_name);
        return false;
    }
    if (!iface_->is_reachable(peer_dev.data(), peer_dev.size(), peer_iface.data(),
                              peer_iface.size())) {
        std::fprintf(stderr, "%s: %s cannot reach the peer%s\n", tool_name, description_.c_str(),
                     " (transports limited to one process need -l)");
        return false;
    }
    ucs_status_t status = to_ep ? ep_->connect_to_ep(peer_dev.data(), peer_dev.size(),
                                                     peer_ep.data(), peer_ep.size()) :
                                  iface_->ep_create_connected(peer_dev.data(), peer_dev.size(),
                                                              peer_iface.data(), peer_iface.size(),
                                                              &ep_);
    if (status != UCS_OK) {
        std::fprintf(stderr, "%s: connecting %s failed: %s\n", tool_name, description_.c_str(),
                     ucs_status_string(status));
        return false;
    }
    return true;
}

bool transport::connect_self()
{
    const uct::iface_attr &a = iface_->attr();
    std::vector<uint8_t> dev(a.device_addr_len), ifa(a.iface_addr_len);
    ucs_status_t status = UCS_ERR_UNSUPPORTED;
    if ((a.flags & uct::iface_flag::CONNECT_TO_IFACE) &&
        (iface_->get_device_address(dev.data()) == UCS_OK) &&
        (iface_->get_address(ifa.data()) == UCS_OK)) {
        status = iface_->ep_create_connected(dev.data(), dev.size(), ifa.data(), ifa.size(), &ep_);
    }
    if (status != UCS_OK) {
        std::fprintf(stderr, "%s: %s cannot connect to itself: %s\n", tool_name,
                     description_.c_str(), ucs_status_string(status));
        return false;
    }
    return true;
}

void list_transports()
{
    for (uct::component *comp : uct::components()) {
        std::vector<uct::md_resource> mds;
        if (comp->query_md_resources(&mds) != UCS_OK) {
            continue;
        }
        for (const auto &mdr : mds) {
            uct::md *md = nullptr;
            if (comp->md_open(mdr.md_name, &md) != UCS_OK) {
                continue;
            }
            std::vector<uct::tl_resource> tls;
            if (md->query_tl_resources(&tls) == UCS_OK) {
                for (const auto &tl : tls) {
                    std::printf("component %-10s md %-10s transport %-10s device %-12s "
                                "(%s)\n",
                                comp->name(), mdr.md_name, tl.tl_name, tl.dev_name,
                                device_type_name(tl.type));
                }
            }
            delete md;
        }
    }
}

} // namespace perf
