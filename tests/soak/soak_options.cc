#include "soak_options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace soak {

void usage(FILE *out)
{
    std::fprintf(
        out,
        "Usage: ucp_soak [options]\n"
        "  Two processes exchange messages of random sizes over UCP tag matching in\n"
        "  both directions at once (sync sends, expected and unexpected arrivals,\n"
        "  wildcard receives, probe + ucp_tag_msg_recv_nbx, cancelled receives),\n"
        "  check every byte, and watch resident memory and open descriptors.\n"
        "  The peer is forked, unless --server/--client put it on another host.\n"
        "  --duration SEC     run for SEC seconds (default 5; 0: until --volume)\n"
        "  --volume SIZE      stop once SIZE bytes were sent each way (k/m/g suffix)\n"
        "  --max-size SIZE    largest message (default 8m; sizes are log-uniform from 1 B)\n"
        "  --window N         messages in flight each way (default 8)\n"
        "  --seed N           stream seed (default 1)\n"
        "  --tls LIST         UCX_TLS for both sides (default: the environment's)\n"
        "  --report SEC       print a progress line every SEC seconds\n"
        "  --sample SEC       RSS/fd sampling period (default: run / 40, 0.1 .. 10 s)\n"
        "  --warmup SEC       RSS/fd growth is checked after SEC (default: a fifth of the run)\n"
        "  --rss-growth SIZE  allowed RSS growth after the warm-up (default 32m)\n"
        "  --fd-growth N      allowed growth of open descriptors (default 0)\n"
        "  --stall SEC        fail when no message completes for SEC seconds (default 60;\n"
        "                     not with --expect-failure, which --duration bounds)\n"
        "  --server PORT      wait for the peer on TCP PORT (out-of-band channel)\n"
        "  --client HOST:PORT connect to a --server\n"
        "  --peer-errors      endpoints with UCP_ERR_HANDLING_MODE_PEER\n"
        "  --expect-failure   success means the peer's loss is reported (ep error or\n"
        "                     request error) and every request ends within --drain;\n"
        "                     implies --peer-errors; prints failure_unix_time\n"
        "  --drain SEC        bound for requests to end after a failure (default 30)\n"
        "  --quiet-after SEC  with --expect-failure: stop sending after SEC, keep the\n"
        "                     receives posted and wait on an idle connection; prints\n"
        "                     'quiet' once every own send has completed\n"
        "  --print-lanes      print ucp_ep_print_info of the endpoint\n"
        "  --allow-missing-imm-info\n"
        "                     count, but do not fail on, receives completed at once whose\n"
        "                     recv_info stayed unfilled (UCX before 1.16, e.g. Debian's 1.13)\n"
        "Exit: 0 pass, 1 a check failed, 2 bad command line.\n");
}

namespace {

bool parse_size(const char *text, uint64_t *value)
{
    char *end;
    errno    = 0;
    double v = std::strtod(text, &end);
    if ((errno != 0) || (end == text) || (v < 0)) {
        return false;
    }
    double scale = 1;
    // clang-format off
    switch (*end) {
    case 'k': case 'K': scale = 1024.0; ++end; break;
    case 'm': case 'M': scale = 1024.0 * 1024; ++end; break;
    case 'g': case 'G': scale = 1024.0 * 1024 * 1024; ++end; break;
    case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; ++end; break;
    default: break;
    }
    // clang-format on
    if ((*end == 'b') || (*end == 'B')) {
        ++end;
    }
    if (*end != '\0') {
        return false;
    }
    *value = uint64_t(v * scale);
    return true;
}

bool parse_seconds(const char *text, double *value)
{
    char *end;
    errno    = 0;
    double v = std::strtod(text, &end);
    if ((errno != 0) || (end == text) || (*end != '\0') || (v < 0)) {
        return false;
    }
    *value = v;
    return true;
}

bool parse_uint(const char *text, uint64_t *value, uint64_t max)
{
    char *end;
    errno                = 0;
    unsigned long long v = std::strtoull(text, &end, 0);
    if ((errno != 0) || (end == text) || (*end != '\0') || (text[0] == '-') || (v > max)) {
        return false;
    }
    *value = v;
    return true;
}

} // namespace

bool parse_options(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        if ((opt == "-h") || (opt == "--help")) {
            usage(stdout);
            std::exit(0);
        }
        if (opt == "--peer-errors") {
            o->peer_errors = true;
            continue;
        }
        if (opt == "--expect-failure") {
            o->expect_failure = o->peer_errors = true;
            continue;
        }
        if (opt == "--print-lanes") {
            o->print_lanes = true;
            continue;
        }
        if (opt == "--allow-missing-imm-info") {
            o->allow_missing_imm_info = true;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "ucp_soak: %s needs a value\n", opt.c_str());
            return false;
        }
        const char *val = argv[++i];
        uint64_t u      = 0;
        bool ok         = true;
        if (opt == "--duration") {
            ok = parse_seconds(val, &o->duration_s);
        } else if (opt == "--volume") {
            ok = parse_size(val, &o->volume);
        } else if (opt == "--max-size") {
            ok          = parse_size(val, &u) && (u >= 1) && (u <= (1ull << 30));
            o->max_size = size_t(u);
        } else if (opt == "--window") {
            ok        = parse_uint(val, &u, 1024) && (u >= 1);
            o->window = unsigned(u);
        } else if (opt == "--seed") {
            ok = parse_uint(val, &o->seed, UINT64_MAX);
        } else if (opt == "--tls") {
            o->tls = val;
        } else if (opt == "--report") {
            ok = parse_seconds(val, &o->report_s);
        } else if (opt == "--sample") {
            ok = parse_seconds(val, &o->sample_s) && (o->sample_s > 0);
        } else if (opt == "--warmup") {
            ok = parse_seconds(val, &o->warmup_s);
        } else if (opt == "--rss-growth") {
            ok = parse_size(val, &o->rss_growth);
        } else if (opt == "--fd-growth") {
            ok           = parse_uint(val, &u, 1u << 20);
            o->fd_growth = unsigned(u);
        } else if (opt == "--stall") {
            ok = parse_seconds(val, &o->stall_s) && (o->stall_s > 0);
        } else if (opt == "--drain") {
            ok = parse_seconds(val, &o->drain_s);
        } else if (opt == "--quiet-after") {
            ok = parse_seconds(val, &o->quiet_after_s) && (o->quiet_after_s > 0);
        } else if (opt == "--server") {
            ok             = parse_uint(val, &u, 65535) && (u > 0);
            o->server_port = int(u);
        } else if (opt == "--client") {
            const char *colon = std::strrchr(val, ':');
            ok = (colon != nullptr) && (colon != val) && parse_uint(colon + 1, &u, 65535) &&
                 (u > 0);
            if (ok) {
                o->client_host.assign(val, colon);
                o->client_port = int(u);
            }
        } else {
            std::fprintf(stderr, "ucp_soak: unknown option %s\n", opt.c_str());
            return false;
        }
        if (!ok) {
            std::fprintf(stderr, "ucp_soak: bad value '%s' for %s\n", val, opt.c_str());
            return false;
        }
    }
    if ((o->duration_s == 0) && (o->volume == 0)) {
        std::fprintf(stderr, "ucp_soak: --duration 0 needs a --volume\n");
        return false;
    }
    if ((o->server_port > 0) && !o->client_host.empty()) {
        std::fprintf(stderr, "ucp_soak: --server and --client exclude each other\n");
        return false;
    }
    if ((o->quiet_after_s > 0) && !o->expect_failure) {
        std::fprintf(stderr, "ucp_soak: --quiet-after needs --expect-failure\n");
        return false;
    }
    if (o->expect_failure && (o->duration_s == 0)) {
        std::fprintf(stderr, "ucp_soak: --expect-failure needs a --duration bound\n");
        return false;
    }
    return true;
}

} // namespace soak
