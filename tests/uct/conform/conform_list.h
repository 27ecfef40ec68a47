/*
 * The transports the conformance suite runs on, and how a test runs once per
 * transport. The list is `conform_transports` in tests/uct/meson.build,
 * compiled in as UCT_CONFORM_TRANSPORTS ("self,posix,..."); an entry is a
 * transport name, or "name:device" to pin a device (else the first device
 * the transport's md offers). Each entry is one Catch2 section of every
 * conformance test case, so `test_uct '[conform]' -c tcp:lo` runs one
 * transport and meson registers one test per entry (conform_<name>).
 *
 * A test that needs a capability the iface attributes do not list skips
 * with a warning naming the transport and the capability (CONFORM_NEEDS).
 */
#ifndef TESTS_UCT_CONFORM_CONFORM_LIST_H
#define TESTS_UCT_CONFORM_CONFORM_LIST_H

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

namespace test::conform {

struct transport_spec {
    std::string entry; /* as listed: "tcp:lo" */
    std::string tl;    /* "tcp" */
    std::string dev;   /* "lo", or empty for the first device */
};

const std::vector<transport_spec> &transports();

/* Runs `body` once per listed transport, each in a section named by its entry. */
void for_each_transport(const std::function<void(const transport_spec &)> &body);

} // namespace test::conform

/* A conformance test: `body` is a function taking a transport_spec. */
#define CONFORM_TEST_CASE(_name, _body) \
    TEST_CASE("conform: " _name, "[conform]") \
    { \
        test::conform::for_each_transport(_body); \
    }

/* Skips the rest of a test body when the pair's iface lacks iface_flag::_flag. */
#define CONFORM_NEEDS(_pair, _flag) \
    do { \
        if (!((_pair).attr().flags & uct::iface_flag::_flag)) { \
            WARN((_pair).name() << ": skipped: the iface attributes lack " #_flag); \
            return; \
        } \
    } while (0)

#endif
