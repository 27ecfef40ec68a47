#include <catch2/catch.hpp>

#include "scoped_env.h"
#include "uct_test_util.h"

#include <cstdlib>

using test::scoped_env;

TEST_CASE("UCX_MM_* variables configure the shared-memory iface", "[mm]")
{
    {
        scoped_env elem("UCX_MM_FIFO_ELEM_SIZE", "256");
        test::uct_entity e("posix");
        REQUIRE(e.ok());
        CHECK(e.attr().am.max_short == 256 - 8);
    }
    {
        scoped_env seg("UCX_MM_SEG_SIZE", "16k");
        test::uct_entity e("sysv");
        REQUIRE(e.ok());
        CHECK(e.attr().am.max_bcopy == 16384);
    }
    {
        test::uct_entity e("posix");
        REQUIRE(e.ok());
        CHECK(e.attr().am.max_short == 128 - 8);
    }
}

TEST_CASE("a malformed UCX_MM_* value refuses to open the iface", "[mm]")
{
    scoped_env bad("UCX_MM_FIFO_SIZE", "63");
    test::uct_entity e("posix");
    CHECK_FALSE(e.ok());
    CHECK(e.error().find("Invalid parameter") != std::string::npos);
}
