/* Command line of ucp_soak. */
#ifndef TESTS_SOAK_SOAK_OPTIONS_H
#define TESTS_SOAK_SOAK_OPTIONS_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace soak {

struct options {
    double duration_s = 5; /* 0: until --volume */
    uint64_t volume   = 0; /* bytes each way, 0: until --duration */
    size_t max_size   = 8u << 20;
    unsigned window   = 8;
    uint64_t seed     = 1;
    std::string tls;          /* empty: UCX_TLS or all */
    double report_s     = 0;  /* progress line period, 0: none */
    double sample_s     = 0;  /* 0: duration / 40, within 0.1 .. 10 s */
    double warmup_s     = -1; /* <0: a fifth of the run */
    uint64_t rss_growth = 32u << 20;
    unsigned fd_growth  = 0;
    double stall_s      = 60;
    int server_port     = -1; /* --server PORT */
    std::string client_host;  /* --client HOST:PORT */
    int client_port             = -1;
    bool peer_errors            = false; /* UCP_ERR_HANDLING_MODE_PEER + ep error callback */
    bool expect_failure         = false; /* success = the peer's failure is reported */
    double drain_s              = 30;    /* after a failure, requests must end within this */
    double quiet_after_s        = 0;     /* with --expect-failure: stop sending after this */
    bool print_lanes            = false;
    bool allow_missing_imm_info = false; /* for UCX < 1.16 */
};

void usage(FILE *out);
/* False (message printed) on a bad command line. */
bool parse_options(int argc, char **argv, options *opts);

} // namespace soak

#endif
