#include "info_options.h"

#include <ucp/api/ucp.h>
#include <ucs/config/types.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace info {

namespace {

bool bad(const char *fmt, const char *arg)
{
    std::fprintf(stderr, "ucx_info: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, "\n");
    usage(stderr);
    return false;
}

/* A positive count (-n, -N). */
bool parse_count(const char *text, size_t *value)
{
    char *end            = nullptr;
    errno                = 0;
    unsigned long long v = std::strtoull(text, &end, 10);
    if ((errno != 0) || (end == text) || (*end != '\0') || (text[0] == '-') || (v == 0)) {
        return false;
    }
    *value = size_t(v);
    return true;
}

/* -u: UCX's letters; w and e modify the others. */
bool parse_features(const char *text, options *opts)
{
    for (const char *p = text; *p != '\0'; ++p) {
        // clang-format off
        switch (*p) {
        case 'a': opts->features |= UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64; break;
        case 'r': opts->features |= UCP_FEATURE_RMA; break;
        case 't': opts->features |= UCP_FEATURE_TAG; break;
        case 's': opts->features |= UCP_FEATURE_STREAM; break;
        case 'm': opts->features |= UCP_FEATURE_AM; break;
        case 'w': opts->features |= UCP_FEATURE_WAKEUP; break;
        case 'e': opts->err_handling = true; break;
        default:  return false;
        }
        // clang-format on
    }
    return true;
}

bool parse_dev_types(const char *text, unsigned *types)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {
        {"all", dev_type::ALL},
        {"shm", dev_type::SHM},
        {"net", dev_type::NET},
        {"self", dev_type::SELF},
    };
    for (const auto &n : names) {
        if (std::strcmp(text, n.name) == 0) {
            *types = n.bits;
            return true;
        }
    }
    return false;
}

bool parse_placement(const char *text, placement *where)
{
    if (std::strcmp(text, "self") == 0) {
        *where = placement::SELF;
    } else if (std::strcmp(text, "intra") == 0) {
        *where = placement::INTRA;
    } else if (std::strcmp(text, "inter") == 0) {
        *where = placement::INTER;
    } else {
        return false;
    }
    return true;
}

bool anything_asked(const options &o)
{
    return o.version || o.devices || o.build || o.types || o.system || o.topology || o.memcpy_bw ||
           (o.config_flags & UCS_CONFIG_PRINT_CONFIG) || o.wants_ucp();
}

} // namespace

void usage(FILE *stream)
{
    std::fprintf(
        stream,
        "Usage: ucx_info [options]\n"
        "At least one of the following options has to be set:\n"
        "  -v              Show version information\n"
        "  -d              Show devices and transports\n"
        "  -b              Show build configuration\n"
        "  -y              Show type and structures information\n"
        "  -s              Show system information\n"
        "  -c              Show UCX configuration\n"
        "  -C              Comment-out default configuration values (with -c: a\n"
        "                  ucx.conf template)\n"
        "  -a              Show also hidden configuration\n"
        "  -f              Display fully decorated output (with -c: each field's\n"
        "                  documentation)\n"
        "\n"
        "UCP information (-u is required):\n"
        "  -p              Show UCP context information\n"
        "  -w              Show UCP worker information\n"
        "  -e              Show UCP endpoint configuration (an endpoint to this\n"
        "                  process's own worker, or to its own listener with -A)\n"
        "  -m <size>       Show UCP memory allocation method for a given size\n"
        "  -u <features>   UCP context features to use. String of one or more of:\n"
        "                    'a' : atomic operations\n"
        "                    'r' : remote memory access\n"
        "                    't' : tag matching\n"
        "                    's' : stream\n"
        "                    'm' : active messages\n"
        "                  Modifiers to use in combination with above features:\n"
        "                    'w' : wakeup\n"
        "                    'e' : error handling\n"
        "\n"
        "Other settings:\n"
        "  -t <name>       Filter devices information using specified transport (requires -d)\n"
        "  -n <count>      Estimated UCP endpoint count (for ucp_init)\n"
        "  -N <count>      Estimated UCP endpoint count per node (for ucp_init)\n"
        "  -D <type>       Set which device types to use when creating UCP context:\n"
        "                    'all'  : all possible devices (default)\n"
        "                    'shm'  : shared memory devices only\n"
        "                    'net'  : network devices only\n"
        "                    'self' : self transport only\n"
        "  -P <type>       Set peer process placement for printing UCP endpoint configuration:\n"
        "                    'self'  : same process (default)\n"
        "                    'intra' : same node (no self transport)\n"
        "                    'inter' : different node (network transports only)\n"
        "  -A <ip>         Local IP device address to use for creating\n"
        "                  endpoint in client/server mode\n"
        "  -6              IPv6 address specified with option -A\n"
        "  -T              Print system topology\n"
        "  -M              Print memory copy bandwidth\n"
        "  -h              Show this help message\n"
        "\n");
}

bool parse_options(int argc, char **argv, options *opts, int *exit_code)
{
    int c;
    *exit_code = EXIT_USAGE;
    opterr     = 0;
    while ((c = getopt(argc, argv, ":vdbysTMcCafpwem:u:t:n:N:D:P:A:6h")) != -1) {
        const char opt[2] = {char(optopt), '\0'};
        // clang-format off
        switch (c) {
        case 'v': opts->version = true; break;
        case 'd': opts->devices = true; break;
        case 'b': opts->build = true; break;
        case 'y': opts->types = true; break;
        case 's': opts->system = true; break;
        case 'T': opts->topology = true; break;
        case 'M': opts->memcpy_bw = true; break;
        case 'c': opts->config_flags |= UCS_CONFIG_PRINT_CONFIG; break;
        case 'C': opts->config_flags |= UCS_CONFIG_PRINT_COMMENT_DEFAULT; break;
        case 'a': opts->config_flags |= UCS_CONFIG_PRINT_HIDDEN; break;
        case 'f':
            opts->config_flags |= UCS_CONFIG_PRINT_DOC | UCS_CONFIG_PRINT_HEADER;
            break;
        case 'p': opts->ucp_context = true; break;
        case 'w': opts->ucp_worker = true; break;
        case 'e': opts->ucp_ep = true; break;
        case 'm':
            if (optarg[0] == '\0') {
                return bad("-m needs a memory size (e.g. 1m)%s", "");
            }
            opts->mem_size = optarg;
            break;
        case 'u':
            if (!parse_features(optarg, opts)) {
                return bad("bad UCP features '%s' (letters of a, r, t, s, m, w, e)",
                           optarg);
            }
            break;
        case 't': opts->tl_filter = optarg; break;
        case 'n':
            if (!parse_count(optarg, &opts->num_eps)) {
                return bad("bad endpoint count '%s' (a positive number)", optarg);
            }
            break;
        case 'N':
            if (!parse_count(optarg, &opts->num_ppn)) {
                return bad("bad endpoint count per node '%s' (a positive number)", optarg);
            }
            break;
        case 'D':
            if (!parse_dev_types(optarg, &opts->dev_types)) {
                return bad("bad device type '%s' (all, shm, net or self)", optarg);
            }
            break;
        case 'P':
            if (!parse_placement(optarg, &opts->peer)) {
                return bad("bad peer placement '%s' (self, intra or inter)", optarg);
            }
            break;
        case 'A': opts->ip_address = optarg; break;
        case '6': opts->ipv6 = true; break;
        case 'h':
            usage(stdout);
            *exit_code = 0;
            return false;
        case ':':
            return bad("option -%s needs a value", opt);
        default:
            return bad("invalid option -%s", opt);
        }
        // clang-format on
    }
    if (optind < argc) {
        return bad("unexpected argument '%s'", argv[optind]);
    }
    if (!anything_asked(*opts)) {
        usage(stderr);
        *exit_code = EXIT_NOTHING;
        return false;
    }
    if (opts->wants_ucp() && !(opts->features & ~uint64_t(UCP_FEATURE_WAKEUP))) {
        return bad("Please select at least one of 'a','r','t','s','m' UCP features "
                   "using -u switch.%s",
                   "");
    }
    if (opts->ipv6 && opts->ip_address.empty()) {
        return bad("-6 is for the address of -A%s", "");
    }
    *exit_code = 0;
    return true;
}

} // namespace info
