/*
 * The receiving end of the conformance suite's active messages: a handler
 * on one AM id that records every message (its flags, length and bytes).
 * In keep mode it keeps each descriptor it may keep (am_cb_flag::DESC) by
 * returning UCS_INPROGRESS, and checks at release time that the transport
 * left the kept bytes alone. It also writes the rx headroom in front of
 * every DESC message and checks that the payload did not move under it.
 * Used in the peer process (peer_agent.cc) and in this one (self).
 */
#ifndef TESTS_UCT_CONFORM_AM_SINK_H
#define TESTS_UCT_CONFORM_AM_SINK_H

#include <uct/base/uct_iface.h>

#include <cstdint>
#include <vector>

namespace test::conform {

/* The rx headroom every conformance iface is opened with. */
constexpr size_t RX_HEADROOM = 48;

struct am_record {
    uint32_t flags  = 0;
    uint64_t length = 0;
    std::vector<uint8_t> bytes; /* the first bytes, up to the take() limit */
};

struct kept_report {
    uint64_t kept                = 0; /* descriptors held */
    uint64_t intact              = 0; /* of those, unchanged when released */
    uint64_t headroom_violations = 0; /* DESC messages changed by writing the headroom */
};

void serialize(const std::vector<am_record> &records, std::vector<uint8_t> *out);
bool deserialize(const std::vector<uint8_t> &blob, std::vector<am_record> *out);

class am_sink {
public:
    static constexpr uct::am_id_t AM_ID = 9;

    /* Installs the handler on `iface` (opened with RX_HEADROOM). */
    explicit am_sink(uct::iface &iface);
    ~am_sink();
    am_sink(const am_sink &)            = delete;
    am_sink &operator=(const am_sink &) = delete;

    void keep(bool on) { keep_ = on; }
    size_t count() const { return records_.size(); }

    /* Everything recorded so far, each cut to `max_bytes`; forgets it. */
    std::vector<am_record> take(size_t max_bytes);

    /* Releases the kept descriptors, checking their bytes first. */
    kept_report release_kept();

private:
    struct kept_desc {
        void *data;
        std::vector<uint8_t> copy;
    };

    static ucs_status_t on_am(void *arg, void *data, size_t length, unsigned flags);

    uct::iface &iface_;
    bool keep_ = false;
    std::vector<am_record> records_;
    std::vector<kept_desc> kept_;
    uint64_t headroom_violations_ = 0;
};

} // namespace test::conform

#endif
