/*
 * The peer process of a conformance pair: opens the transport, sends its
 * addresses, then progresses its worker and answers the parent's commands
 * (peer_protocol.h) until EXIT. HOLD stops it progressing: it only waits
 * for the next command, so nothing sent to it is consumed. As a forked
 * child it uses no Catch2 assertion: a failed check prints and exits
 * non-zero, which the parent's pair reports.
 */
#include "peer_protocol.h"

#include "am_sink.h"
#include "conform_memory.h"
#include "peer.h"

#include "two_process.h"

#include <cstring>
#include <memory>

#include <poll.h>
#include <sched.h>

namespace test::conform {

namespace {

class agent {
public:
    agent(uct_entity &entity, int fd) : entity_(entity), fd_(fd), sink_(entity.iface()) {}

    /* Serves until EXIT (0) or a broken channel (non-zero). */
    int serve()
    {
        for (;;) {
            if (!held_) {
                unsigned events = entity_.progress();
                pollfd pfd{fd_, POLLIN, 0};
                if (::poll(&pfd, 1, 0) != 1) {
                    if (events == 0) {
                        sched_yield(); /* two cores shared with the parent */
                    }
                    continue;
                }
            }
            request req;
            TEST_CHILD_CHECK(recv_value(fd_, &req));
            if (req.what == command::EXIT) {
                TEST_CHILD_CHECK(answer(true, {}));
                return 0;
            }
            TEST_CHILD_CHECK(handle(req));
        }
    }

private:
    bool answer(bool ok, const std::vector<uint8_t> &blob)
    {
        return send_value(fd_, ok) && send_blob(fd_, blob);
    }

    bool handle(const request &req)
    {
        switch (req.what) {
        case command::EXPOSE:
            return expose(req.a, req.b);
        case command::READ: {
            const uint8_t *p = find(req.a, req.b);
            return answer(p != nullptr, (p != nullptr) ? std::vector<uint8_t>(p, p + req.b) :
                                                         std::vector<uint8_t>());
        }
        case command::WRITE: {
            std::vector<uint8_t> bytes;
            if (!recv_blob(fd_, &bytes)) {
                return false;
            }
            uint8_t *p = find(req.a, bytes.size());
            if (p != nullptr) {
                std::memcpy(p, bytes.data(), bytes.size());
            }
            return answer(p != nullptr, {});
        }
        case command::TAKE_AMS: {
            bool arrived = poll_until([this, &req] { return sink_.count() >= req.a; },
                                      [this] {
                if (entity_.progress() == 0) {
                    sched_yield();
                }
            },
                                      WAIT_TIMEOUT);
            std::vector<uint8_t> blob;
            serialize(sink_.take(req.b), &blob);
            return answer(arrived, blob);
        }
        case command::CONNECT:
            return connect_ep();
        case command::KEEP:
            sink_.keep(req.a != 0);
            return answer(true, {});
        case command::RELEASE_KEPT: {
            kept_report report = sink_.release_kept();
            const auto *p      = reinterpret_cast<const uint8_t *>(&report);
            return answer(true, std::vector<uint8_t>(p, p + sizeof(report)));
        }
        case command::HOLD:
            held_ = true;
            return answer(true, {});
        case command::RESUME:
            held_ = false;
            return answer(true, {});
        default:
            return answer(false, {});
        }
    }

    /* The parent's ep address travels as the iface part of uct_addresses. */
    bool connect_ep()
    {
        std::vector<uint8_t> blob, own;
        uct_addresses theirs;
        if (!recv_blob(fd_, &blob)) {
            return false;
        }
        uct::ep *ep   = nullptr;
        const bool ok = uct_addresses::deserialize(blob, &theirs) &&
                        ((ep = entity_.create_ep(&own)) != nullptr) &&
                        (ep->connect_to_ep(theirs.device.data(), theirs.device.size(),
                                           theirs.iface.data(), theirs.iface.size()) == UCS_OK);
        return answer(ok, own);
    }

    bool expose(size_t length, uint64_t seed)
    {
        auto mem = std::make_unique<exposed_memory>();
        std::vector<uint8_t> key;
        if (!mem->open(entity_.md(), length) || !mem->pack(&key)) {
            std::fprintf(stderr, "peer: cannot expose %zu bytes: %s\n", length, mem->why().c_str());
            return answer(false, {});
        }
        auto bytes = pattern(mem->length(), seed);
        std::memcpy(mem->data(), bytes.data(), bytes.size());
        const uint64_t head[2] = {mem->address(), mem->length()};
        std::vector<uint8_t> blob(sizeof(head) + key.size());
        std::memcpy(blob.data(), head, sizeof(head));
        std::memcpy(blob.data() + sizeof(head), key.data(), key.size());
        regions_.push_back(std::move(mem));
        return answer(true, blob);
    }

    /* [address, +length) inside one exposed region, or null. */
    uint8_t *find(uint64_t address, uint64_t length) const
    {
        for (const auto &mem : regions_) {
            if ((address >= mem->address()) && (length <= mem->length()) &&
                (address - mem->address() <= mem->length() - length)) {
                return reinterpret_cast<uint8_t *>(address);
            }
        }
        return nullptr;
    }

    uct_entity &entity_;
    int fd_;
    am_sink sink_;
    std::vector<std::unique_ptr<exposed_memory>> regions_;
    bool held_ = false;
};

} // namespace

int peer_agent(const transport_spec &spec, int fd)
{
    die_with_parent();
    uct_entity entity(spec.tl, spec.dev, RX_HEADROOM);
    if (!entity.ok()) {
        const std::string &why = entity.error();
        send_value(fd, false);
        send_blob(fd, why.data(), why.size());
        return 1;
    }
    TEST_CHILD_CHECK(send_value(fd, true));
    TEST_CHILD_CHECK(send_blob(fd, entity.addresses().serialize()));
    return agent(entity, fd).serve();
}

} // namespace test::conform
