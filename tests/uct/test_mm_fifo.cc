/*
 * Single-process checks of the mm FIFO: tunables, layout, and messages an
 * iface sends to itself through many laps of the ring.
 */
#include <catch2/catch.hpp>

#include "test_mm_util.h"

#include <uct/sm/mm/mm_fifo.h>
#include <ucs/debug/log.h>
#include <uct/sm/mm/mm_iface.h>

#include <cstring>

namespace {

TEST_CASE("mm config: defaults valid, bad tunables refused", "[mm]")
{
    using uct::mm::mm_config;
    /* The refusals below log errors on purpose; keep the output quiet. */
    struct quiet_log {
        ucs_log_level_t saved = ucs::g_log_level;
        quiet_log() { ucs::log_set_level(UCS_LOG_LEVEL_FATAL); }
        ~quiet_log() { ucs::log_set_level(saved); }
    } quiet;
    CHECK(uct::mm::validate_mm_config(uct::mm::default_mm_config()) == UCS_OK);

    auto with = [](auto &&edit) {
        mm_config c = uct::mm::default_mm_config();
        edit(c);
        return uct::mm::validate_mm_config(c);
    };
    CHECK(with([](mm_config &c) { c.fifo_size = 48; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) { c.fifo_size = 1; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) { c.fifo_elem_size = 96; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) { c.fifo_elem_size = 32; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) { c.seg_size = 100; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) { c.seg_size = 0; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) { c.fifo_release_interval = 64; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) { c.rx_max_poll = 0; }) == UCS_ERR_INVALID_PARAM);
    CHECK(with([](mm_config &c) {
              c.fifo_size             = 4;
              c.fifo_release_interval = 2;
          }) == UCS_OK);

    /* iface_open refuses it too, instead of building a broken FIFO. */
    test::mm_entity e("posix", [] {
        mm_config c = uct::mm::default_mm_config();
        c.fifo_size = 3;
        return c;
    }());
    CHECK_FALSE(e.ok());
}

TEST_CASE("mm FIFO layout: control lines apart, elements cache-line aligned", "[mm]")
{
    CHECK(offsetof(uct::mm::fifo_ctl, tail) == uct::mm::CACHE_LINE);
    CHECK(offsetof(uct::mm::fifo_ctl, head) == 2 * uct::mm::CACHE_LINE);
    CHECK(uct::mm::FIFO_ELEMS_OFFSET % uct::mm::CACHE_LINE == 0);
    CHECK(uct::mm::fifo_bufs_offset(64, 128) == uct::mm::FIFO_ELEMS_OFFSET + 64 * 128);
    CHECK(uct::mm::fifo_total_size(64, 128, 8192) ==
          uct::mm::FIFO_ELEMS_OFFSET + 64 * 128 + 64 * 8192);

    uint64_t w = uct::mm::make_elem_word(1, uct::mm::elem_flag::BCOPY, 31, 8192);
    CHECK((w & uct::mm::elem_flag::OWNER) == 1);
    CHECK((w & uct::mm::elem_flag::BCOPY) != 0);
    CHECK(uct::mm::elem_am_id(w) == 31);
    CHECK(uct::mm::elem_length(w) == 8192);
}

struct loop_rx {
    uint64_t next = 0;
    uint64_t bad  = 0;

    static ucs_status_t handler(void *arg, void *data, size_t length, unsigned)
    {
        auto *self = static_cast<loop_rx *>(arg);
        uint64_t seq;
        std::memcpy(&seq, data, sizeof(seq));
        self->bad += (seq != self->next) || (length != 8 + (seq % 5));
        self->next = seq + 1;
        return UCS_OK;
    }
};

void loopback_laps(const char *tl)
{
    uct::mm::mm_config config    = uct::mm::default_mm_config();
    config.fifo_size             = 4; /* many laps, small release steps */
    config.fifo_release_interval = 2;
    config.rx_max_poll           = 3;
    test::mm_entity e(tl, config);
    REQUIRE(e.ok());
    loop_rx rx;
    REQUIRE(e.iface().set_am_handler(7, loop_rx::handler, &rx, 0) == UCS_OK);
    uct::ep *ep = e.connect(e.addresses());
    REQUIRE(ep != nullptr);

    uint64_t seq = 0, full = 0;
    const uint8_t payload[4] = {1, 2, 3, 4};
    while (seq < 1000) {
        ucs_status_t status = ep->am_short(7, seq, payload, unsigned(seq % 5));
        if (status == UCS_OK) {
            ++seq;
        } else {
            REQUIRE(status == UCS_ERR_NO_RESOURCE);
            ++full;
            CHECK(e.progress() > 0);
        }
    }
    while (e.progress() != 0) {
    }
    CHECK(rx.next == 1000);
    CHECK(rx.bad == 0);
    CHECK(full > 0);
    /* A progress() call delivers at most rx_max_poll messages. */
    for (int i = 0; i < 4; ++i) {
        REQUIRE(ep->am_short(7, seq++, payload, 0) == UCS_OK);
    }
    CHECK(e.progress() == 3);
    CHECK(e.progress() == 1);
}

TEST_CASE("posix: a small FIFO wraps through many laps in one process", "[mm][posix]")
{
    loopback_laps("posix");
}

TEST_CASE("sysv: a small FIFO wraps through many laps in one process", "[mm][sysv]")
{
    loopback_laps("sysv");
}

TEST_CASE("mm: resources and attributes", "[mm]")
{
    for (const char *tl : {"posix", "sysv"}) {
        test::mm_entity e(tl);
        REQUIRE(e.ok());
        std::vector<uct::tl_resource> tls;
        REQUIRE(e.md().query_tl_resources(&tls) == UCS_OK);
        REQUIRE(tls.size() == 1);
        CHECK(std::string(tls[0].tl_name) == tl);
        CHECK(std::string(tls[0].dev_name) == "memory");
        CHECK(tls[0].type == uct::device_type::SHM);
        CHECK(std::string(e.md().name()) == tl);
        const uint64_t need = uct::iface_flag::AM_SHORT | uct::iface_flag::AM_BCOPY |
                              uct::iface_flag::PENDING | uct::iface_flag::CONNECT_TO_IFACE;
        CHECK((e.attr().flags & need) == need);
        CHECK(e.attr().device_addr_len == 8);
        CHECK(e.attr().iface_addr_len == sizeof(uct::mm::iface_address));
        CHECK(e.iface().event_arm(uct::event_flag::RECV) == UCS_OK);
    }
}

} // namespace
