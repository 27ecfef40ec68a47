/*
 * ucp_allreduce: an allreduce across N processes with the collectives of
 * <coll/api/ucp_coll.h> (libucp_coll).
 *
 *   ucp_allreduce [-n PROCESSES] [-c COUNT] [-i ITERATIONS]
 *
 * The program forks PROCESSES ranks (4 by default); the parent only passes
 * their worker addresses around over socketpairs. Each rank makes a
 * collectives context on its worker before giving out its address, connects
 * to every other rank, makes a team of them (rank = position), and runs
 * ITERATIONS allreduces (SUM of COUNT doubles; rank r contributes r + i for
 * element i), checking every element of every result: the sum over ranks is
 * n(n-1)/2 + n*i, exact in doubles. Any failure exits 1.
 */
#define _DEFAULT_SOURCE 1

#include <coll/api/ucp_coll.h>
#include <ucp/api/ucp.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCESSES 64

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "rank %d: ", rank); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            return 1; \
        } \
    } while (0)

/* Writes or reads exactly `length` bytes on a socket. */
static int write_all(int fd, const void *data, size_t length)
{
    const char *p = data;
    while (length > 0) {
        ssize_t n = write(fd, p, length);
        if (n <= 0) {
            return -1;
        }
        p += n;
        length -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *data, size_t length)
{
    char *p = data;
    while (length > 0) {
        ssize_t n = read(fd, p, length);
        if (n <= 0) {
            return -1;
        }
        p += n;
        length -= (size_t)n;
    }
    return 0;
}

/* A length-prefixed blob; *data is malloc'ed by the reader. */
static int send_blob(int fd, const void *data, uint64_t length)
{
    return (write_all(fd, &length, sizeof(length)) == 0) ? write_all(fd, data, length) : -1;
}

static int recv_blob(int fd, void **data, uint64_t *length)
{
    if ((read_all(fd, length, sizeof(*length)) != 0) || (*length > (1u << 20))) {
        return -1;
    }
    *data = malloc(*length);
    return (*data != NULL) ? read_all(fd, *data, *length) : -1;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Progresses until a collectives request completes; its status. */
static ucs_status_t wait_coll(ucp_worker_h worker, ucs_status_ptr_t request)
{
    ucs_status_t status;
    if (request == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_coll_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_coll_request_free(request);
    return status;
}

static int run_rank(int rank, int nprocs, size_t count, int iterations, int sock)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_worker_params_t worker_params;
    ucp_address_t *address;
    size_t address_length, i;
    ucp_ep_h eps[MAX_PROCESSES];
    ucp_coll_context_h coll;
    ucp_team_params_t team_params;
    ucp_team_h team;
    ucp_coll_args_t args, barrier;
    ucp_request_param_t close_param;
    ucs_status_ptr_t closes[MAX_PROCESSES];
    double *in, *out, start;
    int r, it;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_AM; /* collectives travel as active messages */
    CHECK(ucp_config_read(NULL, NULL, &config) == UCS_OK, "ucp_config_read failed");
    CHECK(ucp_init(&params, config, &context) == UCS_OK, "ucp_init failed");
    ucp_config_release(config);
    memset(&worker_params, 0, sizeof(worker_params));
    CHECK(ucp_worker_create(context, &worker_params, &worker) == UCS_OK,
          "ucp_worker_create failed");
    /* Before the address leaves: a peer may send as soon as it has it. */
    CHECK(ucp_coll_context_create(worker, &coll) == UCS_OK, "ucp_coll_context_create failed");
    CHECK(ucp_worker_get_address(worker, &address, &address_length) == UCS_OK,
          "ucp_worker_get_address failed");
    CHECK(send_blob(sock, address, address_length) == 0, "cannot send the address");
    ucp_worker_release_address(worker, address);
    for (r = 0; r < nprocs; ++r) {
        ucp_ep_params_t ep_params;
        void *remote;
        uint64_t remote_length;
        CHECK(recv_blob(sock, &remote, &remote_length) == 0, "cannot receive an address");
        eps[r] = NULL;
        if (r != rank) {
            memset(&ep_params, 0, sizeof(ep_params));
            ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
            ep_params.address    = remote;
            CHECK(ucp_ep_create(worker, &ep_params, &eps[r]) == UCS_OK, "ucp_ep_create failed");
        }
        free(remote);
    }

    memset(&team_params, 0, sizeof(team_params));
    team_params.field_mask = UCP_TEAM_PARAM_FIELD_EPS | UCP_TEAM_PARAM_FIELD_KEY;
    team_params.eps        = eps;
    team_params.size       = (unsigned)nprocs;
    team_params.my_rank    = (unsigned)rank;
    team_params.key        = 1;
    CHECK(wait_coll(worker, ucp_team_create_nbx(coll, &team_params, &team, NULL)) == UCS_OK,
          "the team was not made");

    in  = malloc(count * sizeof(double) + 1);
    out = malloc(count * sizeof(double) + 1);
    CHECK((in != NULL) && (out != NULL), "out of memory");
    for (i = 0; i < count; ++i) {
        in[i] = rank + (double)i;
    }
    memset(&args, 0, sizeof(args));
    args.field_mask = UCP_COLL_ARGS_FIELD_OP;
    args.coll       = UCP_COLL_ALLREDUCE;
    args.sbuf       = in;
    args.rbuf       = out;
    args.count      = count;
    args.dt         = UCP_COLL_DT_DOUBLE;
    args.op         = UCP_COLL_OP_SUM;
    start           = now_us();
    for (it = 0; it < iterations; ++it) {
        memset(out, 0, count * sizeof(double));
        CHECK(wait_coll(worker, ucp_coll_nbx(team, &args, NULL)) == UCS_OK, "allreduce %d failed",
              it);
        for (i = 0; i < count; ++i) {
            const double want = nprocs * (nprocs - 1) / 2.0 + (double)nprocs * (double)i;
            CHECK(out[i] == want, "allreduce %d element %zu is %g, not %g", it, i, out[i], want);
        }
    }
    if (rank == 0) {
        printf("%d processes: %d allreduces of %zu doubles correct (%.2f us each)\n", nprocs,
               iterations, count, (now_us() - start) / iterations);
        fflush(stdout);
    }
    free(in);
    free(out);

    /* Everyone done before anyone closes. */
    memset(&barrier, 0, sizeof(barrier));
    barrier.coll = UCP_COLL_BARRIER;
    CHECK(wait_coll(worker, ucp_coll_nbx(team, &barrier, NULL)) == UCS_OK, "barrier failed");
    CHECK(ucp_team_destroy(team) == UCS_OK, "ucp_team_destroy failed");
    CHECK(ucp_coll_context_destroy(coll) == UCS_OK, "ucp_coll_context_destroy failed");
    /* Flushing closes, all started before waiting: each completes when the
     * peer's side closes too. */
    memset(&close_param, 0, sizeof(close_param));
    for (r = 0; r < nprocs; ++r) {
        closes[r] = (eps[r] != NULL) ? ucp_ep_close_nbx(eps[r], &close_param) : NULL;
    }
    for (r = 0; r < nprocs; ++r) {
        if (UCS_PTR_IS_PTR(closes[r])) {
            while (ucp_request_check_status(closes[r]) == UCS_INPROGRESS) {
                ucp_worker_progress(worker);
            }
            ucp_request_free(closes[r]);
        }
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return 0;
}

int main(int argc, char **argv)
{
    int nprocs = 4, iterations = 100, rank = -1, failed = 0;
    size_t count = 1024;
    int socks[MAX_PROCESSES];
    pid_t pids[MAX_PROCESSES];
    void *addresses[MAX_PROCESSES];
    uint64_t lengths[MAX_PROCESSES];
    int opt, r, s;

    while ((opt = getopt(argc, argv, "n:c:i:")) != -1) {
        if (opt == 'n') {
            nprocs = atoi(optarg);
        } else if (opt == 'c') {
            count = (size_t)strtoul(optarg, NULL, 0);
        } else if (opt == 'i') {
            iterations = atoi(optarg);
        } else {
            fprintf(stderr, "usage: %s [-n PROCESSES] [-c COUNT] [-i ITERATIONS]\n", argv[0]);
            return 1;
        }
    }
    CHECK((nprocs >= 1) && (nprocs <= MAX_PROCESSES) && (iterations >= 1),
          "need 1 to %d processes and at least one iteration", MAX_PROCESSES);
    for (r = 0; r < nprocs; ++r) {
        int pair[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0, "socketpair failed");
        pids[r] = fork();
        CHECK(pids[r] >= 0, "fork failed");
        if (pids[r] == 0) {
            for (s = 0; s < r; ++s) {
                close(socks[s]);
            }
            close(pair[0]);
            rank = r;
            _exit(run_rank(r, nprocs, count, iterations, pair[1]));
        }
        close(pair[1]);
        socks[r] = pair[0];
    }
    /* Every rank's address to every rank. */
    for (r = 0; r < nprocs; ++r) {
        CHECK(recv_blob(socks[r], &addresses[r], &lengths[r]) == 0, "no address from rank %d", r);
    }
    for (r = 0; r < nprocs; ++r) {
        for (s = 0; s < nprocs; ++s) {
            CHECK(send_blob(socks[r], addresses[s], lengths[s]) == 0, "cannot send addresses");
        }
    }
    for (r = 0; r < nprocs; ++r) {
        int status;
        failed |= (waitpid(pids[r], &status, 0) != pids[r]) || !WIFEXITED(status) ||
                  (WEXITSTATUS(status) != 0);
        close(socks[r]);
        free(addresses[r]);
    }
    if (failed) {
        fprintf(stderr, "some rank failed\n");
        return 1;
    }
    printf("all %d ranks passed\n", nprocs);
    return 0;
}
