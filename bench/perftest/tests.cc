#include "tests.h"

#include <cstring>

namespace perftest {

namespace {

using perf::test_kind;

constexpr test_kind NO_UCT = test_kind::AM_SHORT_LAT;

const test_info test_table[] = {
    {"tag_lat", api_kind::UCP, ucp_cmd::TAG, NO_UCT, pattern::PINGPONG, "tag match latency",
     "latency", 1},
    {"tag_bw", api_kind::UCP, ucp_cmd::TAG, NO_UCT, pattern::STREAM_UNI, "tag match bandwidth",
     "overhead", 32},
    {"tag_sync_lat", api_kind::UCP, ucp_cmd::TAG_SYNC, NO_UCT, pattern::PINGPONG,
     "tag sync match latency", "latency", 1},
    {"tag_sync_bw", api_kind::UCP, ucp_cmd::TAG_SYNC, NO_UCT, pattern::STREAM_UNI,
     "tag sync match bandwidth", "overhead", 32},
    {"ucp_put_lat", api_kind::UCP, ucp_cmd::PUT, NO_UCT, pattern::PINGPONG, "put latency",
     "latency", 1},
    {"ucp_put_bw", api_kind::UCP, ucp_cmd::PUT, NO_UCT, pattern::STREAM_UNI, "put bandwidth",
     "overhead", 32},
    {"ucp_put_flush_lat", api_kind::UCP, ucp_cmd::PUT_FLUSH, NO_UCT, pattern::STREAM_UNI,
     "put + ep flush latency (remote completion, as shmem_put + shmem_quiet)", "latency", 1},
    {"ucp_get", api_kind::UCP, ucp_cmd::GET, NO_UCT, pattern::STREAM_UNI,
     "get latency / bandwidth / message rate", "latency", 1},
    {"ucp_add", api_kind::UCP, ucp_cmd::ADD, NO_UCT, pattern::STREAM_UNI,
     "atomic add bandwidth / message rate", "overhead", 1},
    {"ucp_fadd", api_kind::UCP, ucp_cmd::FADD, NO_UCT, pattern::STREAM_UNI,
     "atomic fetch-and-add latency / bandwidth / rate", "latency", 1},
    {"ucp_swap", api_kind::UCP, ucp_cmd::SWAP, NO_UCT, pattern::STREAM_UNI,
     "atomic swap latency / bandwidth / rate", "latency", 1},
    {"ucp_cswap", api_kind::UCP, ucp_cmd::CSWAP, NO_UCT, pattern::STREAM_UNI,
     "atomic compare-and-swap latency / bandwidth / rate", "latency", 1},
    {"stream_bw", api_kind::UCP, ucp_cmd::STREAM, NO_UCT, pattern::STREAM_UNI, "stream bandwidth",
     "overhead", 1},
    {"stream_lat", api_kind::UCP, ucp_cmd::STREAM, NO_UCT, pattern::PINGPONG, "stream latency",
     "latency", 1},
    {"ucp_am_lat", api_kind::UCP, ucp_cmd::AM, NO_UCT, pattern::PINGPONG, "am latency", "latency",
     1},
    {"ucp_am_bw", api_kind::UCP, ucp_cmd::AM, NO_UCT, pattern::STREAM_UNI,
     "am bandwidth / message rate", "overhead", 32},

    {"am_short_lat", api_kind::UCT, ucp_cmd::AM, test_kind::AM_SHORT_LAT, pattern::PINGPONG,
     "uct active message (short) latency", "latency", 1},
    {"am_bcopy_lat", api_kind::UCT, ucp_cmd::AM, test_kind::AM_BCOPY_LAT, pattern::PINGPONG,
     "uct active message (bcopy) latency", "latency", 1},
    {"am_short_bw", api_kind::UCT, ucp_cmd::AM, test_kind::AM_SHORT_BW, pattern::STREAM_UNI,
     "uct active message (short) bandwidth / message rate", "overhead", 1},
    {"am_bcopy_bw", api_kind::UCT, ucp_cmd::AM, test_kind::AM_BCOPY_BW, pattern::STREAM_UNI,
     "uct active message (bcopy) bandwidth / message rate", "overhead", 1},
    {"put_zcopy_bw", api_kind::UCT, ucp_cmd::PUT, test_kind::PUT_ZCOPY_BW, pattern::STREAM_UNI,
     "uct put (zcopy) bandwidth / message rate", "overhead", 1},
    {"get_zcopy_bw", api_kind::UCT, ucp_cmd::GET, test_kind::GET_ZCOPY_BW, pattern::STREAM_UNI,
     "uct get (zcopy) bandwidth / message rate", "overhead", 1},
    {"am_zcopy_lat", api_kind::UCT, ucp_cmd::AM, test_kind::AM_ZCOPY_LAT, pattern::PINGPONG,
     "uct active message (zcopy) latency", "latency", 1},
    {"am_zcopy_bw", api_kind::UCT, ucp_cmd::AM, test_kind::AM_ZCOPY_BW, pattern::STREAM_UNI,
     "uct active message (zcopy) bandwidth / message rate", "overhead", 1},
    {"am_shortiov_lat", api_kind::UCT, ucp_cmd::AM, test_kind::AM_SHORTIOV_LAT, pattern::PINGPONG,
     "uct active message (short iov) latency", "latency", 1},
    {"am_shortiov_bw", api_kind::UCT, ucp_cmd::AM, test_kind::AM_SHORTIOV_BW, pattern::STREAM_UNI,
     "uct active message (short iov) bandwidth / message rate", "overhead", 1},
    {"put_short_lat", api_kind::UCT, ucp_cmd::PUT, test_kind::PUT_SHORT_LAT, pattern::PINGPONG,
     "uct put (short) latency", "latency", 1},
    {"put_bcopy_lat", api_kind::UCT, ucp_cmd::PUT, test_kind::PUT_BCOPY_LAT, pattern::PINGPONG,
     "uct put (bcopy) latency", "latency", 1},
    {"put_zcopy_lat", api_kind::UCT, ucp_cmd::PUT, test_kind::PUT_ZCOPY_LAT, pattern::PINGPONG,
     "uct put (zcopy) latency", "latency", 1},
    {"put_short_bw", api_kind::UCT, ucp_cmd::PUT, test_kind::PUT_SHORT_BW, pattern::STREAM_UNI,
     "uct put (short) bandwidth / message rate", "overhead", 1},
    {"put_bcopy_bw", api_kind::UCT, ucp_cmd::PUT, test_kind::PUT_BCOPY_BW, pattern::STREAM_UNI,
     "uct put (bcopy) bandwidth / message rate", "overhead", 1},
    {"get_bcopy_bw", api_kind::UCT, ucp_cmd::GET, test_kind::GET_BCOPY_BW, pattern::STREAM_UNI,
     "uct get (bcopy) bandwidth / message rate", "overhead", 1},
    {"add_lat", api_kind::UCT, ucp_cmd::ADD, test_kind::ADD_LAT, pattern::PINGPONG,
     "uct atomic add latency", "latency", 1},
    {"add_mr", api_kind::UCT, ucp_cmd::ADD, test_kind::ADD_MR, pattern::STREAM_UNI,
     "uct atomic add message rate", "overhead", 1},
    {"fadd", api_kind::UCT, ucp_cmd::FADD, test_kind::FADD, pattern::STREAM_UNI,
     "uct atomic fetch-and-add latency / rate", "latency", 1},
    {"swap", api_kind::UCT, ucp_cmd::SWAP, test_kind::SWAP, pattern::STREAM_UNI,
     "uct atomic swap latency / rate", "latency", 1},
    {"cswap", api_kind::UCT, ucp_cmd::CSWAP, test_kind::CSWAP, pattern::STREAM_UNI,
     "uct atomic compare-and-swap latency / rate", "latency", 1},
};

struct ucx_alias {
    const char *ucx_name;
    const char *layout;
    const char *ours;
};

const ucx_alias ucx_aliases[] = {
    {"am_lat", "short", "am_short_lat"},   {"am_lat", "bcopy", "am_bcopy_lat"},
    {"am_lat", "zcopy", "am_zcopy_lat"},   {"am_lat", "shortiov", "am_shortiov_lat"},
    {"am_bw", "short", "am_short_bw"},     {"am_bw", "bcopy", "am_bcopy_bw"},
    {"am_bw", "zcopy", "am_zcopy_bw"},     {"am_bw", "shortiov", "am_shortiov_bw"},
    {"put_lat", "short", "put_short_lat"}, {"put_lat", "bcopy", "put_bcopy_lat"},
    {"put_lat", "zcopy", "put_zcopy_lat"}, {"put_bw", "short", "put_short_bw"},
    {"put_bw", "bcopy", "put_bcopy_bw"},   {"put_bw", "zcopy", "put_zcopy_bw"},
    {"get", "bcopy", "get_bcopy_bw"},      {"get", "zcopy", "get_zcopy_bw"},
};

/* UCX's uct names that take a layout (-D); its atomics are ours too. */
const char *const ucx_uct_names[] = {
    "am_lat", "put_lat", "get", "am_bw", "put_bw",
};

} // namespace

const test_info *find_test(const char *name)
{
    for (const auto &t : test_table) {
        if (std::strcmp(t.name, name) == 0) {
            return &t;
        }
    }
    return nullptr;
}

const test_info *test_by_index(unsigned index)
{
    return (index < test_count()) ? &test_table[index] : nullptr;
}

unsigned test_index(const test_info *info)
{
    return unsigned(info - test_table);
}

unsigned test_count()
{
    return sizeof(test_table) / sizeof(test_table[0]);
}

const test_info *find_ucx_uct_alias(const char *ucx_name, const char *layout)
{
    for (const auto &a : ucx_aliases) {
        if ((std::strcmp(a.ucx_name, ucx_name) == 0) && (std::strcmp(a.layout, layout) == 0)) {
            return find_test(a.ours);
        }
    }
    return nullptr;
}

bool is_ucx_uct_name(const char *name)
{
    for (const char *n : ucx_uct_names) {
        if (std::strcmp(n, name) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace perftest
