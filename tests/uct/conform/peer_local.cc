/*
 * The peer of an in-process transport (self): the iface talks to itself, so
 * the peer's memory is ours and its messages arrive through our progress.
 * "Held" means inside an AM handler of the iface, where it queues what is
 * sent instead of delivering it.
 */
#include "peer.h"

#include "two_process.h"

#include <cstring>

namespace test::conform {

namespace {

constexpr uct::am_id_t HOLD_AM_ID = 10;

class local_peer final : public peer {
public:
    explicit local_peer(uct_entity &entity) :
        entity_(entity), sink_(entity.iface()), addresses_(entity.addresses())
    {
        entity_.iface().set_am_handler(HOLD_AM_ID, on_hold, this, 0);
        hold_ep_ = entity_.connect(addresses_);
    }

    ~local_peer() override { entity_.iface().set_am_handler(HOLD_AM_ID, nullptr, nullptr, 0); }

    const uct_addresses &addresses() const override { return addresses_; }
    bool in_process() const override { return true; }
    bool connect_ep(const std::vector<uint8_t> &, const std::vector<uint8_t> &,
                    std::vector<uint8_t> *) override
    {
        return false; /* self connects to its iface */
    }

    bool expose(size_t length, uint64_t seed, region_desc *out) override
    {
        auto mem = std::make_unique<exposed_memory>();
        if (!mem->open(entity_.md(), length)) {
            return false;
        }
        auto bytes = pattern(mem->length(), seed);
        std::memcpy(mem->data(), bytes.data(), bytes.size());
        out->address = mem->address();
        out->length  = mem->length();
        if (!mem->pack(&out->packed_key)) {
            return false;
        }
        regions_.push_back(std::move(mem));
        return true;
    }

    bool read(uint64_t address, size_t length, std::vector<uint8_t> *out) override
    {
        if (!inside(address, length)) {
            return false;
        }
        const auto *p = reinterpret_cast<const uint8_t *>(address);
        out->assign(p, p + length);
        return true;
    }

    bool write(uint64_t address, const std::vector<uint8_t> &bytes) override
    {
        if (!inside(address, bytes.size())) {
            return false;
        }
        std::memcpy(reinterpret_cast<void *>(address), bytes.data(), bytes.size());
        return true;
    }

    bool take_ams(size_t count, size_t max_bytes, std::vector<am_record> *out) override
    {
        bool arrived = poll_until([&] { return sink_.count() >= count; },
                                  [&] { entity_.progress(); }, WAIT_TIMEOUT);
        *out         = sink_.take(max_bytes);
        return arrived;
    }

    bool keep_descs(bool on) override
    {
        sink_.keep(on);
        return true;
    }

    bool release_kept(kept_report *out) override
    {
        *out = sink_.release_kept();
        return true;
    }

    bool while_held(const std::function<void()> &fn) override
    {
        if ((hold_ep_ == nullptr) || !(entity_.attr().flags & uct::iface_flag::AM_SHORT)) {
            return false;
        }
        held_fn_  = &fn;
        ran_      = false;
        bool sent = poll_until(
            [&] { return hold_ep_->am_short(HOLD_AM_ID, 0, nullptr, 0) != UCS_ERR_NO_RESOURCE; },
            [&] { entity_.progress(); }, WAIT_TIMEOUT);
        bool ran = sent &&
                   poll_until([&] { return ran_; }, [&] { entity_.progress(); }, WAIT_TIMEOUT);
        held_fn_ = nullptr;
        return ran;
    }

    bool kill() override { return false; }
    bool finish() override { return true; }

private:
    static ucs_status_t on_hold(void *arg, void *, size_t, unsigned)
    {
        auto *self = static_cast<local_peer *>(arg);
        if (self->held_fn_ != nullptr) {
            (*self->held_fn_)();
            self->ran_ = true;
        }
        return UCS_OK;
    }

    bool inside(uint64_t address, size_t length) const
    {
        for (const auto &mem : regions_) {
            if ((address >= mem->address()) && (length <= mem->length()) &&
                (address - mem->address() <= mem->length() - length)) {
                return true;
            }
        }
        return false;
    }

    uct_entity &entity_;
    am_sink sink_;
    uct_addresses addresses_;
    uct::ep *hold_ep_                     = nullptr;
    const std::function<void()> *held_fn_ = nullptr;
    bool ran_                             = false;
    std::vector<std::unique_ptr<exposed_memory>> regions_;
};

} // namespace

std::unique_ptr<peer> make_local_peer(uct_entity &entity)
{
    return std::make_unique<local_peer>(entity);
}

} // namespace test::conform
