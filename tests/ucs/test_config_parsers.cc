/*
 * Every configuration value type: accepted forms, rejected forms (which must
 * leave the destination untouched) and printing back.
 */
#include <catch2/catch.hpp>

#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include <cstdint>
#include <cstring>
#include <string>

using namespace ucs::config;

namespace {

/* Parses text that must be accepted. */
template <typename T>
T parse_ok(const parser &type, const char *text)
{
    T value{};
    INFO("text: '" << text << "'");
    REQUIRE(type.parse(text, &value, type));
    return value;
}

/* True if text is rejected and the destination bytes stay as they were. */
bool rejected(const parser &type, const char *text)
{
    unsigned char value[64];
    std::memset(value, 0x5a, sizeof(value));
    bool accepted = type.parse(text, value, type);
    if (accepted) {
        type.release(value, type);
        return false;
    }
    for (unsigned char byte : value) {
        if (byte != 0x5a) {
            return false;
        }
    }
    return true;
}

template <typename T>
std::string printed(const parser &type, T value)
{
    return type.print(&value, type);
}

/* parse -> print -> parse gives the same printed text. */
std::string round_trip(const parser &type, const char *text)
{
    unsigned char first[64] = {}, second[64] = {};
    REQUIRE(type.parse(text, first, type));
    std::string once = type.print(first, type);
    REQUIRE(type.parse(once.c_str(), second, type));
    std::string twice = type.print(second, type);
    CHECK(once == twice);
    type.release(first, type);
    type.release(second, type);
    return once;
}

} // namespace

TEST_CASE("int parser", "[config]")
{
    CHECK(parse_ok<int>(type_int, "17") == 17);
    CHECK(parse_ok<int>(type_int, "-5") == -5);
    CHECK(parse_ok<int>(type_int, " 8 ") == 8);
    CHECK(parse_ok<int>(type_int, "2147483647") == INT32_MAX);
    for (const char *bad : {"", "abc", "1.5", "5x", "99999999999", "+3", "0x10"}) {
        INFO(bad);
        CHECK(rejected(type_int, bad));
    }
    CHECK(printed(type_int, -42) == "-42");
    CHECK(round_trip(type_int, "123") == "123");
    CHECK(type_int.syntax(type_int) == "integer");
    CHECK(type_int.value_size == sizeof(int));
}

TEST_CASE("unsigned and unsigned long parsers", "[config]")
{
    CHECK(parse_ok<unsigned>(type_uint, "0") == 0u);
    CHECK(parse_ok<unsigned>(type_uint, "4294967295") == UINT32_MAX);
    CHECK(rejected(type_uint, "-1"));
    CHECK(rejected(type_uint, "4294967296"));
    CHECK(rejected(type_uint, "inf"));
    CHECK(printed(type_uint, 1024u) == "1024");

    CHECK(parse_ok<unsigned long>(type_ulong, "12345678901") == 12345678901ul);
    CHECK(parse_ok<unsigned long>(type_ulong, "inf") == ulong_inf);
    CHECK(parse_ok<unsigned long>(type_ulong, "AUTO") == ulong_auto);
    CHECK(rejected(type_ulong, "-1"));
    CHECK(rejected(type_ulong, "lots"));
    CHECK(printed(type_ulong, ulong_inf) == "inf");
    CHECK(printed(type_ulong, ulong_auto) == "auto");
    CHECK(round_trip(type_ulong, "77") == "77");
}

TEST_CASE("size parser understands units, inf and auto", "[config]")
{
    CHECK(parse_ok<size_t>(type_size, "17") == 17u);
    CHECK(parse_ok<size_t>(type_size, "8k") == 8192u);
    CHECK(parse_ok<size_t>(type_size, "8K") == 8192u);
    CHECK(parse_ok<size_t>(type_size, "8kb") == 8192u);
    CHECK(parse_ok<size_t>(type_size, "8KB") == 8192u);
    CHECK(parse_ok<size_t>(type_size, "1m") == (size_t(1) << 20));
    CHECK(parse_ok<size_t>(type_size, "4g") == (size_t(4) << 30));
    CHECK(parse_ok<size_t>(type_size, "2t") == (size_t(2) << 40));
    CHECK(parse_ok<size_t>(type_size, "100b") == 100u);
    CHECK(parse_ok<size_t>(type_size, "0") == 0u);
    CHECK(parse_ok<size_t>(type_size, "inf") == SIZE_MAX);
    CHECK(parse_ok<size_t>(type_size, "INF") == size_inf);
    CHECK(parse_ok<size_t>(type_size, "auto") == SIZE_MAX - 1);
    CHECK(size_auto == SIZE_MAX - 1);

    for (const char *bad :
         {"", "k", "8x", "-1", "1.5k", "8kbb", "99999999999t", "18446744073709551615", "auto8"}) {
        INFO(bad);
        CHECK(rejected(type_size, bad));
    }

    CHECK(printed(type_size, size_t(8192)) == "8K");
    CHECK(printed(type_size, size_t(1) << 20) == "1M");
    CHECK(printed(type_size, size_t(3) << 30) == "3G");
    CHECK(printed(type_size, size_t(1000)) == "1000");
    CHECK(printed(type_size, size_t(0)) == "0");
    CHECK(printed(type_size, size_inf) == "inf");
    CHECK(printed(type_size, size_auto) == "auto");
    CHECK(round_trip(type_size, "8k") == "8K");
    CHECK(round_trip(type_size, "1536") == "1536");
    CHECK(round_trip(type_size, "auto") == "auto");
}

TEST_CASE("double parser", "[config]")
{
    CHECK(parse_ok<double>(type_double, "1.5") == 1.5);
    CHECK(parse_ok<double>(type_double, "-2") == -2.0);
    CHECK(parse_ok<double>(type_double, "1e3") == 1000.0);
    for (const char *bad : {"", "abc", "nan", "1.5.2", "3x"}) {
        INFO(bad);
        CHECK(rejected(type_double, bad));
    }
    CHECK(printed(type_double, 0.25) == "0.25");
    CHECK(parse_ok<double>(type_double, printed(type_double, 0.1).c_str()) == 0.1);
    CHECK(round_trip(type_double, "3.75") == "3.75");
}

TEST_CASE("bool parser accepts every spelling in any case", "[config]")
{
    for (const char *yes : {"y", "Y", "yes", "YES", "on", "On", "1", "true", "TRUE"}) {
        INFO(yes);
        CHECK(parse_ok<int>(type_bool, yes) == 1);
    }
    for (const char *no : {"n", "N", "no", "No", "off", "OFF", "0", "false", "False"}) {
        INFO(no);
        CHECK(parse_ok<int>(type_bool, no) == 0);
    }
    for (const char *bad : {"", "maybe", "2", "yess", "t"}) {
        INFO(bad);
        CHECK(rejected(type_bool, bad));
    }
    CHECK(printed(type_bool, 1) == "y");
    CHECK(printed(type_bool, 0) == "n");
    CHECK(round_trip(type_bool, "on") == "y");
}

TEST_CASE("ternary and on/off/auto parsers", "[config]")
{
    using ternary = ucs_ternary_auto_value_t;
    CHECK(parse_ok<ternary>(type_ternary, "yes") == UCS_YES);
    CHECK(parse_ok<ternary>(type_ternary, "n") == UCS_NO);
    CHECK(parse_ok<ternary>(type_ternary, "TRY") == UCS_TRY);
    CHECK(parse_ok<ternary>(type_ternary, "auto") == UCS_AUTO);
    CHECK(rejected(type_ternary, "perhaps"));
    CHECK(printed(type_ternary, UCS_TRY) == "try");
    CHECK(printed(type_ternary, UCS_NO) == "no");
    CHECK(round_trip(type_ternary, "Auto") == "auto");

    using on_off = ucs_on_off_auto_value_t;
    CHECK(parse_ok<on_off>(type_on_off_auto, "on") == UCS_CONFIG_ON);
    CHECK(parse_ok<on_off>(type_on_off_auto, "OFF") == UCS_CONFIG_OFF);
    CHECK(parse_ok<on_off>(type_on_off_auto, "auto") == UCS_CONFIG_AUTO);
    CHECK(parse_ok<on_off>(type_on_off_auto, "yes") == UCS_CONFIG_ON);
    CHECK(rejected(type_on_off_auto, "try"));
    CHECK(printed(type_on_off_auto, UCS_CONFIG_AUTO) == "auto");
    CHECK(round_trip(type_on_off_auto, "1") == "on");
}

TEST_CASE("enum parser matches names in any case", "[config]")
{
    constexpr parser levels = type_enum(ucs::log_level_names);
    CHECK(levels.arg_count == UCS_LOG_LEVEL_LAST);
    CHECK(parse_ok<unsigned>(levels, "debug") == UCS_LOG_LEVEL_DEBUG);
    CHECK(parse_ok<unsigned>(levels, "WARN") == UCS_LOG_LEVEL_WARN);
    CHECK(parse_ok<unsigned>(levels, "poll") == UCS_LOG_LEVEL_TRACE_POLL);
    CHECK(rejected(levels, "nonsense"));
    CHECK(rejected(levels, ""));
    CHECK(printed(levels, unsigned(UCS_LOG_LEVEL_INFO)) == "info");
    CHECK(round_trip(levels, "Trace") == "trace");

    std::string syntax = levels.syntax(levels);
    CHECK(syntax.rfind("one of: fatal, error, warn, diag, info", 0) == 0);
    CHECK(syntax.find("poll") != std::string::npos);

    static constexpr const char *colors[] = {"red", "green", "blue", nullptr};
    constexpr parser color                = type_enum_list(colors);
    CHECK(color.arg_count == 3);
    CHECK(parse_ok<unsigned>(color, "Blue") == 2u);
    CHECK(rejected(color, "yellow"));
    CHECK(color.syntax(color) == "one of: red, green, blue");
}

TEST_CASE("string parser copies the text", "[config]")
{
    const char *text = "hello world";
    char *value      = parse_ok<char *>(type_string, text);
    REQUIRE(value != nullptr);
    CHECK(value != text);
    CHECK(std::string(value) == text);
    CHECK(printed(type_string, value) == text);

    char *copy = nullptr;
    REQUIRE(type_string.clone(&value, &copy, type_string) == UCS_OK);
    CHECK(copy != value);
    CHECK(std::string(copy) == text);

    type_string.release(&value, type_string);
    CHECK(value == nullptr);
    type_string.release(&copy, type_string);

    char *empty = parse_ok<char *>(type_string, "");
    REQUIRE(empty != nullptr);
    CHECK(*empty == '\0');
    type_string.release(&empty, type_string);
}

TEST_CASE("string list parser splits on commas", "[config]")
{
    auto list = parse_ok<ucs_config_names_array_t>(type_string_list, "shm,tcp");
    REQUIRE(list.count == 2);
    CHECK(std::string(list.names[0]) == "shm");
    CHECK(std::string(list.names[1]) == "tcp");
    CHECK(printed(type_string_list, list) == "shm,tcp");

    ucs_config_names_array_t copy{};
    REQUIRE(type_string_list.clone(&list, &copy, type_string_list) == UCS_OK);
    REQUIRE(copy.count == 2);
    CHECK(copy.names != list.names);
    CHECK(copy.names[1] != list.names[1]);
    CHECK(std::string(copy.names[1]) == "tcp");

    type_string_list.release(&list, type_string_list);
    CHECK(list.count == 0);
    CHECK(list.names == nullptr);
    type_string_list.release(&copy, type_string_list);

    auto trimmed = parse_ok<ucs_config_names_array_t>(type_string_list, " a , b ");
    REQUIRE(trimmed.count == 2);
    CHECK(std::string(trimmed.names[0]) == "a");
    CHECK(std::string(trimmed.names[1]) == "b");
    type_string_list.release(&trimmed, type_string_list);

    auto empty = parse_ok<ucs_config_names_array_t>(type_string_list, "");
    CHECK(empty.count == 0);
    CHECK(printed(type_string_list, empty) == "");

    CHECK(rejected(type_string_list, "a,,b"));
    CHECK(rejected(type_string_list, "a,"));
    CHECK(rejected(type_string_list, ","));
    CHECK(round_trip(type_string_list, "rc_x,ud_x,sm") == "rc_x,ud_x,sm");
}

TEST_CASE("allow-list parser: all, names, negated names", "[config]")
{
    auto all = parse_ok<ucs_config_allow_list_t>(type_allow_list, "all");
    CHECK(all.mode == UCS_CONFIG_ALLOW_LIST_ALLOW_ALL);
    CHECK(all.array.count == 0);
    CHECK(printed(type_allow_list, all) == "all");

    auto some = parse_ok<ucs_config_allow_list_t>(type_allow_list, "mlx5_0:1,eth0");
    CHECK(some.mode == UCS_CONFIG_ALLOW_LIST_ALLOW);
    REQUIRE(some.array.count == 2);
    CHECK(std::string(some.array.names[0]) == "mlx5_0:1");
    CHECK(std::string(some.array.names[1]) == "eth0");
    CHECK(printed(type_allow_list, some) == "mlx5_0:1,eth0");

    auto negated = parse_ok<ucs_config_allow_list_t>(type_allow_list, "^tcp,self");
    CHECK(negated.mode == UCS_CONFIG_ALLOW_LIST_NEGATE);
    REQUIRE(negated.array.count == 2);
    CHECK(std::string(negated.array.names[0]) == "tcp");
    CHECK(printed(type_allow_list, negated) == "^tcp,self");

    ucs_config_allow_list_t copy{};
    REQUIRE(type_allow_list.clone(&negated, &copy, type_allow_list) == UCS_OK);
    CHECK(copy.mode == UCS_CONFIG_ALLOW_LIST_NEGATE);
    CHECK(copy.array.names != negated.array.names);
    CHECK(printed(type_allow_list, copy) == "^tcp,self");

    for (auto *list : {&all, &some, &negated, &copy}) {
        type_allow_list.release(list, type_allow_list);
        CHECK(list->array.count == 0);
    }

    CHECK(rejected(type_allow_list, "^"));
    CHECK(rejected(type_allow_list, "a,,b"));
    CHECK(round_trip(type_allow_list, "ALL") == "all");
    CHECK(round_trip(type_allow_list, "^x") == "^x");
}

TEST_CASE("time parser: units, seconds by default, inf and auto", "[config]")
{
    CHECK(parse_ok<double>(type_time, "10us") == Approx(10e-6));
    CHECK(parse_ok<double>(type_time, "2ms") == Approx(2e-3));
    CHECK(parse_ok<double>(type_time, "1s") == 1.0);
    CHECK(parse_ok<double>(type_time, "100ns") == Approx(100e-9));
    CHECK(parse_ok<double>(type_time, "3") == 3.0);
    CHECK(parse_ok<double>(type_time, "1.5s") == 1.5);
    CHECK(parse_ok<double>(type_time, "0") == 0.0);
    CHECK(parse_ok<double>(type_time, "inf") == time_inf);
    CHECK(parse_ok<double>(type_time, "auto") == time_auto);

    for (const char *bad : {"", "s", "-1s", "10xs", "10 us x", "fast", "nan"}) {
        INFO(bad);
        CHECK(rejected(type_time, bad));
    }

    CHECK(printed(type_time, 10e-6) == "10us");
    CHECK(printed(type_time, 2e-3) == "2ms");
    CHECK(printed(type_time, 1.5) == "1.5s");
    CHECK(printed(type_time, 100e-9) == "100ns");
    CHECK(printed(type_time, time_inf) == "inf");
    CHECK(printed(type_time, time_auto) == "auto");
    CHECK(round_trip(type_time, "250us") == "250us");
    CHECK(round_trip(type_time, "0.5") == "500ms");
}

TEST_CASE("bandwidth parser: bytes and bits, binary multipliers, auto", "[config]")
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    CHECK(parse_ok<double>(type_bw, "auto") == bw_auto);
    CHECK(parse_ok<double>(type_bw, "12GBs") == 12 * gib);
    CHECK(parse_ok<double>(type_bw, "100MB/s") == 100.0 * 1024 * 1024);
    CHECK(parse_ok<double>(type_bw, "1.5Gbps") == 1.5 * gib / 8);
    CHECK(parse_ok<double>(type_bw, "10KBps") == 10240.0);
    CHECK(parse_ok<double>(type_bw, "1000") == 1000.0);
    CHECK(parse_ok<double>(type_bw, "800b") == 100.0);
    CHECK(parse_ok<double>(type_bw, "2TB") == 2 * gib * 1024);

    for (const char *bad : {"", "100M", "12GXs", "-1GBs", "abc", "5GBsx", "GBs"}) {
        INFO(bad);
        CHECK(rejected(type_bw, bad));
    }

    CHECK(printed(type_bw, 12 * gib) == "12GBs");
    CHECK(printed(type_bw, bw_auto) == "auto");
    CHECK(printed(type_bw, 512.0) == "512Bs");
    CHECK(round_trip(type_bw, "1.5Gbps") == "192MBs");
    CHECK(round_trip(type_bw, "100MB/s") == "100MBs");
}
