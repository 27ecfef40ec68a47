/*
 * ucx_perftest's command line: UCX 1.13's options plus --loopback, --sweep,
 * --csv and --json. See usage() for the list.
 */
#ifndef BENCH_PERFTEST_OPTIONS_H
#define BENCH_PERFTEST_OPTIONS_H

#include "spec.h"

#include <string>
#include <vector>

namespace perftest {

enum class output_format {
    TABLE,   /* UCX's box and table */
    UCX_CSV, /* -v: UCX's box, then CSV lines as UCX prints them */
    CSV,     /* --csv: one header, one line per test, nothing else on stdout */
    JSON,    /* --json: one JSON document on stdout */
};

struct cli {
    test_spec spec; /* what the client asks for */
    bool have_test = false;
    std::string host; /* client: the server; empty: server */
    uint16_t port = 13337;
    bool ipv6     = false;
    bool loopback = false; /* --loopback / -l: fork the peer */
    bool sweep    = false;
    std::vector<std::string> sweep_tls; /* --sweep-tls (UCX_TLS values) */
    bool iters_given  = false;
    bool warmup_given = false;
    std::vector<int> cpus; /* -c */
    output_format format = output_format::TABLE;
    bool final_only      = false; /* -f */
    bool numeric         = false; /* -N */
    double percentile    = 50.0;  /* -R */
    std::string batch_file;       /* -b: the tests come from this file */
};

/* Parses argv. Returns true to run; false to exit with *exit_code (0 after
 * -h, 2 after a usage error, with the reason and the usage on stderr). */
bool parse_cli(int argc, char **argv, cli *out, int *exit_code);

void usage(FILE *stream);

} // namespace perftest

#endif
