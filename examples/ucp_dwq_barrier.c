/*
 * ucp_dwq_barrier: a barrier built only from deferred work (triggered
 * operations on completion counters, <ucp/api/ucp_ext.h>).
 *
 *   ucp_dwq_barrier [-n PROCESSES] [-i BARRIERS]
 *
 * The program forks PROCESSES ranks (4 by default); the parent only passes
 * their worker addresses around over socketpairs. Each rank then runs
 * BARRIERS dissemination barriers. A barrier of R = ceil(log2(PROCESSES))
 * rounds is posted at once, as 2R triggered operations on one counter,
 * `rounds`:
 *
 *   round k receive:  starts when rounds >= base + k, adds 1 to rounds
 *   round k send:     starts when rounds >= base + k, to rank + 2^k
 *
 * so round k's message goes out, and round k's receive is posted, only
 * after the rounds before it were received. After posting, the rank only
 * waits on the counter (ucp_cntr_wait progresses the worker, and sleeps
 * when there is nothing to do): the operations start one another with no
 * other call of the application.
 *
 * To check the barrier, every rank adds 1 to a shared-memory count of the
 * barrier before posting it, and after the barrier finds the count equal
 * to PROCESSES. Any failure exits 1.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS, beside the POSIX the build asks for */

#include <ucp/api/ucp.h>
#include <ucp/api/ucp_ext.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCESSES 64
#define BARRIER_TAG   0xba00000000000000ull

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

/* Parameters of an operation that starts when `trigger` reaches
 * `threshold`, counting its completion on `cntr` if not NULL. */
static ucp_ext_request_param_t triggered(ucp_cntr_h trigger, uint64_t threshold, ucp_cntr_h cntr)
{
    ucp_ext_request_param_t ext;
    memset(&ext, 0, sizeof(ext));
    ext.base.op_attr_mask = UCP_OP_ATTR_FIELD_EXT;
    ext.ext_field_mask    = UCP_EXT_PARAM_FIELD_TRIGGER |
                         ((cntr != NULL) ? UCP_EXT_PARAM_FIELD_CNTR : 0);
    ext.trigger_cntr      = trigger;
    ext.trigger_threshold = threshold;
    ext.cntr              = cntr;
    return ext;
}

/* A posted operation completes by itself: its request is let go. */
static int posted(ucs_status_ptr_t request)
{
    if (UCS_PTR_IS_ERR(request)) {
        return 0;
    }
    if (request != NULL) {
        ucp_request_free(request);
    }
    return 1;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int run_rank(int rank, int nprocs, int barriers, int sock, atomic_uint *entered)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_worker_params_t worker_params;
    ucp_address_t *address;
    size_t address_length;
    ucp_ep_h eps[MAX_PROCESSES];
    ucp_cntr_params_t cntr_params;
    ucp_cntr_h rounds, sent;
    ucp_request_param_t close_param;
    unsigned nrounds = 0;
    uint8_t token    = 0;
    double start;
    int r, b;
    unsigned k;

    while ((1 << nrounds) < nprocs) {
        ++nrounds;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    /* WAKEUP: ucp_cntr_wait sleeps when progress finds nothing, so more
     * ranks than cores do not spin against each other. */
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    CHECK(ucp_config_read(NULL, NULL, &config) == UCS_OK, "ucp_config_read failed");
    CHECK(ucp_init(&params, config, &context) == UCS_OK, "ucp_init failed");
    ucp_config_release(config);
    memset(&worker_params, 0, sizeof(worker_params));
    CHECK(ucp_worker_create(context, &worker_params, &worker) == UCS_OK,
          "ucp_worker_create failed");
    CHECK(ucp_worker_get_address(worker, &address, &address_length) == UCS_OK,
          "ucp_worker_get_address failed");
    CHECK(send_blob(sock, address, address_length) == 0, "cannot send the address");
    ucp_worker_release_address(worker, address);
    for (r = 0; r < nprocs; ++r) {
        ucp_ep_params_t ep_params;
        void *remote;
        uint64_t remote_length;
        CHECK(recv_blob(sock, &remote, &remote_length) == 0, "cannot receive an address");
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = remote;
        CHECK(ucp_ep_create(worker, &ep_params, &eps[r]) == UCS_OK, "ucp_ep_create failed");
        free(remote);
    }

    memset(&cntr_params, 0, sizeof(cntr_params));
    CHECK(ucp_cntr_create(worker, &cntr_params, &rounds) == UCS_OK, "ucp_cntr_create failed");
    CHECK(ucp_cntr_create(worker, &cntr_params, &sent) == UCS_OK, "ucp_cntr_create failed");

    start = now_us();
    for (b = 0; b < barriers; ++b) {
        const uint64_t base = (uint64_t)b * nrounds;
        atomic_fetch_add(&entered[b], 1);
        for (k = 0; k < nrounds; ++k) {
            const ucp_tag_t tag          = BARRIER_TAG | ((uint64_t)b << 8) | k;
            ucp_ext_request_param_t recv = triggered(rounds, base + k, rounds);
            ucp_ext_request_param_t send = triggered(rounds, base + k, sent);
            CHECK(posted(ucp_tag_recv_nbx(worker, &token, sizeof(token), tag, ~(ucp_tag_t)0,
                                          &recv.base)),
                  "cannot post a receive");
            CHECK(posted(ucp_tag_send_nbx(eps[(rank + (1 << k)) % nprocs], &token, sizeof(token),
                                          tag, &send.base)),
                  "cannot post a send");
        }
        /* Only waiting: progress starts the operations. */
        CHECK(ucp_cntr_wait(rounds, base + nrounds, 60000) == UCS_OK, "barrier %d did not complete",
              b);
        CHECK(atomic_load(&entered[b]) == (unsigned)nprocs,
              "left barrier %d while only %u of %d processes had entered it", b,
              atomic_load(&entered[b]), nprocs);
    }
    if (rank == 0) {
        printf("%d processes passed %d barriers built from deferred work "
               "(%.2f us per barrier)\n",
               nprocs, barriers, (now_us() - start) / barriers);
        fflush(stdout); /* the rank leaves with _exit */
    }
    /* Our sends done before closing. */
    CHECK(ucp_cntr_wait(sent, (uint64_t)barriers * nrounds, 60000) == UCS_OK,
          "sends did not complete");
    CHECK(ucp_cntr_read_err(rounds) + ucp_cntr_read_err(sent) == 0, "operations failed");
    /* Everyone done before anyone closes (the parent answers when all are). */
    CHECK(write_all(sock, "d", 1) == 0, "cannot tell the parent");
    CHECK(read_all(sock, &token, 1) == 0, "the parent went away");
    memset(&close_param, 0, sizeof(close_param));
    close_param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    close_param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    for (r = 0; r < nprocs; ++r) {
        ucs_status_ptr_t request = ucp_ep_close_nbx(eps[r], &close_param);
        if (UCS_PTR_IS_PTR(request)) {
            while (ucp_request_check_status(request) == UCS_INPROGRESS) {
                ucp_worker_progress(worker);
            }
            ucp_request_free(request);
        }
    }
    ucp_cntr_destroy(rounds);
    ucp_cntr_destroy(sent);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return 0;
}

int main(int argc, char **argv)
{
    int nprocs = 4, barriers = 100, rank = -1, failed = 0;
    int socks[MAX_PROCESSES];
    pid_t pids[MAX_PROCESSES];
    void *addresses[MAX_PROCESSES];
    uint64_t lengths[MAX_PROCESSES];
    atomic_uint *entered;
    int opt, r, s;

    while ((opt = getopt(argc, argv, "n:i:")) != -1) {
        if (opt == 'n') {
            nprocs = atoi(optarg);
        } else if (opt == 'i') {
            barriers = atoi(optarg);
        } else {
            fprintf(stderr, "usage: %s [-n PROCESSES] [-i BARRIERS]\n", argv[0]);
            return 1;
        }
    }
    CHECK((nprocs >= 2) && (nprocs <= MAX_PROCESSES) && (barriers >= 1),
          "need 2 to %d processes and at least one barrier", MAX_PROCESSES);
    entered = mmap(NULL, sizeof(*entered) * (size_t)barriers, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(entered != MAP_FAILED, "mmap failed");
    for (r = 0; r < barriers; ++r) {
        atomic_init(&entered[r], 0);
    }
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
            _exit(run_rank(r, nprocs, barriers, pair[1], entered));
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
        char done;
        failed |= (read_all(socks[r], &done, 1) != 0);
    }
    for (r = 0; r < nprocs; ++r) {
        failed |= (write_all(socks[r], "g", 1) != 0);
        free(addresses[r]);
    }
    for (r = 0; r < nprocs; ++r) {
        int status;
        failed |= (waitpid(pids[r], &status, 0) != pids[r]) || !WIFEXITED(status) ||
                  (WEXITSTATUS(status) != 0);
        close(socks[r]);
    }
    munmap(entered, sizeof(*entered) * (size_t)barriers);
    if (failed) {
        fprintf(stderr, "some rank failed\n");
        return 1;
    }
    printf("all %d ranks passed\n", nprocs);
    return 0;
}
