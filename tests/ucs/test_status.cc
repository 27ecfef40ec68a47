#include <catch2/catch.hpp>

#include <ucs/type/status.h>

#include <cstring>
#include <set>
#include <string>

TEST_CASE("status codes keep UCX's values and one-byte size", "[status]")
{
    STATIC_REQUIRE(sizeof(ucs_status_t) == 1);
    CHECK(UCS_OK == 0);
    CHECK(UCS_INPROGRESS == 1);
    CHECK(UCS_ERR_NO_RESOURCE == -2);
    CHECK(UCS_ERR_INVALID_PARAM == -5);
    CHECK(UCS_ERR_MESSAGE_TRUNCATED == -9);
    CHECK(UCS_ERR_CANCELED == -16);
    CHECK(UCS_ERR_CONNECTION_RESET == -25);
    CHECK(UCS_ERR_ENDPOINT_TIMEOUT == -80);
    CHECK(UCS_ERR_LAST == -100);
}

TEST_CASE("every named status has its own non-empty text", "[status]")
{
    std::set<std::string> seen;
    for (int code = 1; code >= -25; --code) {
        const char *text = ucs_status_string(static_cast<ucs_status_t>(code));
        REQUIRE(text != nullptr);
        CHECK(std::strlen(text) > 0);
        CHECK(seen.insert(text).second);
    }
    CHECK(std::string(ucs_status_string(UCS_OK)) == "Success");
    CHECK(std::string(ucs_status_string(UCS_ERR_ENDPOINT_TIMEOUT)) == "Endpoint timeout");
}

TEST_CASE("unnamed status codes are described, not NULL", "[status]")
{
    std::string link = ucs_status_string(static_cast<ucs_status_t>(-45));
    std::string ep   = ucs_status_string(static_cast<ucs_status_t>(-65));
    std::string odd  = ucs_status_string(static_cast<ucs_status_t>(-33));
    CHECK(link.find("-45") != std::string::npos);
    CHECK(link.find("Link") != std::string::npos);
    CHECK(ep.find("Endpoint") != std::string::npos);
    CHECK(odd.find("-33") != std::string::npos);
}

TEST_CASE("status pointers encode errors in the top addresses", "[status]")
{
    void *ok  = UCS_STATUS_PTR(UCS_OK);
    void *err = UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    int object;
    void *ptr = &object;

    CHECK(ok == nullptr);
    CHECK_FALSE(UCS_PTR_IS_ERR(ok));
    CHECK_FALSE(UCS_PTR_IS_PTR(ok));
    CHECK(UCS_PTR_IS_ERR(err));
    CHECK_FALSE(UCS_PTR_IS_PTR(err));
    CHECK(UCS_PTR_STATUS(err) == UCS_ERR_NO_MEMORY);
    CHECK(UCS_PTR_IS_PTR(ptr));
    CHECK(UCS_PTR_STATUS(ptr) == UCS_INPROGRESS);
    CHECK(UCS_IS_LINK_ERROR(static_cast<ucs_status_t>(-50)));
    CHECK_FALSE(UCS_IS_LINK_ERROR(UCS_ERR_NO_MEMORY));
    CHECK(UCS_IS_ENDPOINT_ERROR(UCS_ERR_ENDPOINT_TIMEOUT));
}
