/*
 * The parent's side of a peer process: forks it (peer_agent), then turns
 * each peer call into a command and waits for the answer, progressing this
 * process's worker meanwhile (a peer waiting for messages we still hold
 * must get them).
 */
#include "peer.h"
#include "peer_protocol.h"

#include "two_process.h"

#include <cstring>

#include <poll.h>
#include <sched.h>

namespace test::conform {

namespace {

class remote_peer final : public peer {
public:
    remote_peer(const transport_spec &spec, std::function<unsigned()> progress) :
        child_([spec](int fd) { return peer_agent(spec, fd); }), progress_(std::move(progress))
    {
    }

    /* Reads the agent's greeting: its addresses, or why it could not open. */
    bool start(std::string *why)
    {
        std::vector<uint8_t> blob;
        bool ok = false;
        if (!wait_readable() || !recv_value(child_.fd(), &ok) || !recv_blob(child_.fd(), &blob)) {
            *why = "the peer process did not answer";
            return false;
        }
        if (!ok) {
            *why = "the peer process could not open the transport: " +
                   std::string(blob.begin(), blob.end());
            return false;
        }
        if (!uct_addresses::deserialize(blob, &addresses_)) {
            *why = "the peer process sent malformed addresses";
            return false;
        }
        return true;
    }

    ~remote_peer() override
    {
        if (!finished_) {
            child_.kill();
            child_.wait();
        }
    }

    const uct_addresses &addresses() const override { return addresses_; }
    bool in_process() const override { return false; }

    bool connect_ep(const std::vector<uint8_t> &device_address,
                    const std::vector<uint8_t> &ep_address,
                    std::vector<uint8_t> *peer_ep_address) override
    {
        uct_addresses ours{device_address, ep_address};
        const std::vector<uint8_t> blob = ours.serialize();
        return call({command::CONNECT, 0, 0, 0}, &blob, peer_ep_address);
    }

    bool expose(size_t length, uint64_t seed, region_desc *out) override
    {
        std::vector<uint8_t> blob;
        if (!call({command::EXPOSE, 0, length, seed}, nullptr, &blob) ||
            (blob.size() < 2 * sizeof(uint64_t))) {
            return false;
        }
        std::memcpy(&out->address, blob.data(), sizeof(uint64_t));
        std::memcpy(&out->length, blob.data() + sizeof(uint64_t), sizeof(uint64_t));
        out->packed_key.assign(blob.begin() + 2 * sizeof(uint64_t), blob.end());
        return true;
    }

    bool read(uint64_t address, size_t length, std::vector<uint8_t> *out) override
    {
        return call({command::READ, 0, address, length}, nullptr, out) && (out->size() == length);
    }

    bool write(uint64_t address, const std::vector<uint8_t> &bytes) override
    {
        std::vector<uint8_t> blob;
        return call({command::WRITE, 0, address, bytes.size()}, &bytes, &blob);
    }

    bool take_ams(size_t count, size_t max_bytes, std::vector<am_record> *out) override
    {
        std::vector<uint8_t> blob;
        bool arrived = call({command::TAKE_AMS, 0, count, max_bytes}, nullptr, &blob);
        return deserialize(blob, out) && arrived;
    }

    bool keep_descs(bool on) override
    {
        std::vector<uint8_t> blob;
        return call({command::KEEP, 0, on ? 1u : 0u, 0}, nullptr, &blob);
    }

    bool release_kept(kept_report *out) override
    {
        std::vector<uint8_t> blob;
        if (!call({command::RELEASE_KEPT, 0, 0, 0}, nullptr, &blob) ||
            (blob.size() != sizeof(*out))) {
            return false;
        }
        std::memcpy(out, blob.data(), sizeof(*out));
        return true;
    }

    bool while_held(const std::function<void()> &fn) override
    {
        std::vector<uint8_t> blob;
        if (!call({command::HOLD, 0, 0, 0}, nullptr, &blob)) {
            return false;
        }
        fn();
        /* `fn` may have killed the peer: nobody to resume. */
        return finished_ || call({command::RESUME, 0, 0, 0}, nullptr, &blob);
    }

    bool kill() override
    {
        child_.kill(SIGKILL);
        finished_ = true;
        return child_.wait(WAIT_TIMEOUT) == 128 + SIGKILL;
    }

    bool finish() override
    {
        if (finished_) {
            return true;
        }
        std::vector<uint8_t> blob;
        bool ok   = call({command::EXIT, 0, 0, 0}, nullptr, &blob);
        finished_ = true;
        return (child_.wait(WAIT_TIMEOUT) == 0) && ok;
    }

private:
    /* Progresses this process until the agent has something to say; longer
     * than the agent's own waits, so it answers first. */
    bool wait_readable()
    {
        return poll_until(
            [this] {
            pollfd pfd{child_.fd(), POLLIN, 0};
            return ::poll(&pfd, 1, 0) == 1;
            },
            [this] {
            if (progress_() == 0) {
                sched_yield();
            }
        },
            2 * WAIT_TIMEOUT);
    }

    bool call(const request &req, const std::vector<uint8_t> *payload, std::vector<uint8_t> *answer)
    {
        bool ok = false;
        return send_value(child_.fd(), req) &&
               ((payload == nullptr) || send_blob(child_.fd(), *payload)) && wait_readable() &&
               recv_value(child_.fd(), &ok) && recv_blob(child_.fd(), answer) && ok;
    }

    child_process child_;
    std::function<unsigned()> progress_;
    uct_addresses addresses_;
    bool finished_ = false;
};

} // namespace

std::unique_ptr<peer> make_remote_peer(const transport_spec &spec,
                                       std::function<unsigned()> progress, std::string *why)
{
    auto p = std::make_unique<remote_peer>(spec, std::move(progress));
    if (!p->start(why)) {
        return nullptr;
    }
    return p;
}

} // namespace test::conform
