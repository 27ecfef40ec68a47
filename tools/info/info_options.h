/*
 * ucx_info's command line: UCX 1.13's flags, with UCX's meanings and exit
 * codes (usage errors 255, nothing asked for 254, -h 0).
 */
#ifndef TOOLS_INFO_INFO_OPTIONS_H
#define TOOLS_INFO_INFO_OPTIONS_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace info {

/* -P: where the peer of the -e endpoint is. */
enum class placement { SELF, INTRA, INTER };

/* -D bits: which kinds of devices the UCP context may use. */
namespace dev_type {
constexpr unsigned NET  = 1u << 0;
constexpr unsigned SHM  = 1u << 1;
constexpr unsigned SELF = 1u << 2;
constexpr unsigned ACC  = 1u << 3;
constexpr unsigned ALL  = NET | SHM | SELF | ACC;
} // namespace dev_type

struct options {
    /* What to print. */
    bool version          = false; /* -v */
    bool devices          = false; /* -d */
    bool build            = false; /* -b */
    bool types            = false; /* -y */
    bool system           = false; /* -s */
    bool topology         = false; /* -T */
    bool memcpy_bw        = false; /* -M */
    unsigned config_flags = 0;     /* -c -f -a -C: ucs_config_print_flags_t */
    bool ucp_context      = false; /* -p */
    bool ucp_worker       = false; /* -w */
    bool ucp_ep           = false; /* -e */
    std::string mem_size;          /* -m, empty: not asked */

    /* How. */
    uint64_t features = 0;                /* -u: UCP_FEATURE_* */
    bool err_handling = false;            /* -u ...e */
    std::string tl_filter;                /* -t */
    size_t num_eps     = 0;               /* -n, 0: not given */
    size_t num_ppn     = 0;               /* -N, 0: not given */
    unsigned dev_types = dev_type::ALL;   /* -D */
    placement peer     = placement::SELF; /* -P */
    std::string ip_address;               /* -A */
    bool ipv6 = false;                    /* -6 */

    bool wants_ucp() const { return ucp_context || ucp_worker || ucp_ep || !mem_size.empty(); }
};

/* UCX's exit codes: ucx_info returns -1 and -2 from main. */
constexpr int EXIT_USAGE   = 255;
constexpr int EXIT_NOTHING = 254;

/* Parses argv. Returns true to go on; false to exit with *exit_code (the
 * reason and the usage already printed). */
bool parse_options(int argc, char **argv, options *opts, int *exit_code);

void usage(FILE *stream);

} // namespace info

#endif
