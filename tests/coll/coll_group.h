/*
 * A group of processes for the collectives tests: the parent forks `size`
 * members, passes their worker addresses around, and each member connects
 * to all others, makes a team of them and runs the test body. Members
 * report through their exit code (0: passed) and a shared page of results
 * the parent reads after they exit.
 */
#ifndef TESTS_COLL_COLL_GROUP_H
#define TESTS_COLL_COLL_GROUP_H

#include "ucp_peer.h"

#include <coll/api/ucp_coll.h>

#include <functional>
#include <vector>

namespace coll_test {

/* One member process. */
struct member {
    ucp_test::peer p;
    ucp_coll_context_h ctx = nullptr;
    std::vector<ucp_ep_h> eps; /* by rank; eps[rank] is nullptr */
    ucp_team_h team  = nullptr;
    unsigned rank    = 0;
    unsigned size    = 0;
    uint64_t *shared = nullptr; /* shared_words words, all members */

    /* Progresses until a request of this library completes; frees it. */
    ucs_status_t wait(ucs_status_ptr_t request);

    /* Runs a collective to completion. */
    ucs_status_t run(const ucp_coll_args_t &args);
};

constexpr size_t shared_words = 1 << 16;

struct group_options {
    const char *tls = "posix,cma,self";
    ucp_test::settings extra; /* UCP settings */
    ucp_err_handling_mode_t err_mode = UCP_ERR_HANDLING_MODE_NONE;
    uint64_t team_key                = 1;
    bool teardown                    = true; /* false: members just exit after body */
    ucp_test::settings env;                  /* set in each member before anything */
};

/* Forks the members, runs body(member) in each; returns one exit code per
 * member (0: passed) in *codes and the shared words in *shared. */
void run_group(unsigned size, const group_options &options,
               const std::function<int(member &m)> &body, std::vector<int> *codes,
               std::vector<uint64_t> *shared = nullptr);

} // namespace coll_test

#endif
