/*
 * ucp_progress_probe: which RMA and atomic operations complete while their
 * target process does not call ucp_worker_progress.
 *
 * Two processes on this node (fork): the target maps two regions, one
 * allocated by UCP (ucp_mem_map ALLOCATE: shared memory where the transports
 * allow it) and one of its own memory registered with ucp_mem_map (as an
 * OpenSHMEM data segment or an MPI window on user memory), and sends their
 * keys. For each region, operation and target behaviour, the initiator
 * issues the operation, flushes its endpoint and progresses its own worker
 * for --timeout-ms; the operation "completes alone" if both finish in that
 * time. Then the target progresses and the cell must finish. The target
 * behaves in one of two ways while the initiator waits:
 *   idle  blocked in read(2), no UCP call at all;
 *   spin  calling ucp_atomic_op_nbx (fetch-add 0) on a word of its own
 *         memory in a loop, as an OpenSHMEM PE spinning on
 *         shmem_atomic_fetch of its own variable; those complete inside the
 *         call, and it never calls ucp_worker_progress.
 * Every value is checked: puts are read back, gets and fetching atomics
 * must return what the earlier operations left.
 *
 * Only the public UCP API is used, so the same binary runs on UCX 1.13
 * (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu). UCX_TLS chooses transports.
 *
 *   ucp_progress_probe [--timeout-ms N] [--check]
 *
 * --check (what the test suite runs on our libraries): exit 1 unless every
 * operation completes alone while the target spins, and every operation
 * on ALLOCATE memory completes alone while it is idle when UCX_TLS allows
 * shared memory (posix or sysv, or the default).
 */
#define _GNU_SOURCE
#include <ucp/api/ucp.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REGION_SIZE 4096
#define NUM_REGIONS 2
#define SETTLE_MS   5000 /* a cell must finish this soon once the target progresses */

enum { OP_PUT, OP_GET, OP_ADD, OP_FADD, OP_CSWAP, NUM_OPS };
static const char *const op_names[NUM_OPS] = {"put 8 B", "get 8 B", "atomic add", "fetch-add",
                                              "compare-swap"};
static const char *const region_names[NUM_REGIONS] = {"ALLOCATE", "user memory"};
enum { MODE_IDLE, MODE_SPIN, NUM_MODES };

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "ucp_progress_probe: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static void check_status(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        die(what, ucs_status_string(status));
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- the control socket: length-prefixed blobs and single bytes ---- */

static void write_all(int fd, const void *data, size_t length)
{
    const char *p = data;
    while (length > 0) {
        ssize_t n = write(fd, p, length);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            die("control socket write", strerror(errno));
        }
        p += n;
        length -= (size_t)n;
    }
}

static void read_all(int fd, void *data, size_t length)
{
    char *p = data;
    while (length > 0) {
        ssize_t n = read(fd, p, length);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            die("control socket read", n == 0 ? "peer closed" : strerror(errno));
        }
        p += n;
        length -= (size_t)n;
    }
}

static void send_blob(int fd, const void *data, size_t length)
{
    uint64_t len = length;
    write_all(fd, &len, sizeof(len));
    write_all(fd, data, length);
}

static void *recv_blob(int fd, size_t *length_p)
{
    uint64_t len;
    read_all(fd, &len, sizeof(len));
    if (len > (1u << 20)) {
        die("control socket", "blob too long");
    }
    void *data = malloc(len ? len : 1);
    read_all(fd, data, len);
    *length_p = len;
    return data;
}

static void send_byte(int fd, char c)
{
    write_all(fd, &c, 1);
}

static char recv_byte(int fd)
{
    char c;
    read_all(fd, &c, 1);
    return c;
}

static int readable(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

/* ---- UCP set-up shared by both sides ---- */

struct side {
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h peer;
};

static void side_init(struct side *s, int fd)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64,
    };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    ucp_address_t *address;
    size_t address_length;

    check_status(ucp_init(&params, NULL, &s->context), "ucp_init");
    check_status(ucp_worker_create(s->context, &wparams, &s->worker), "ucp_worker_create");
    check_status(ucp_worker_get_address(s->worker, &address, &address_length),
                 "ucp_worker_get_address");
    send_blob(fd, address, address_length);
    ucp_worker_release_address(s->worker, address);

    size_t peer_length;
    void *peer_address        = recv_blob(fd, &peer_length);
    ucp_ep_params_t ep_params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address    = peer_address,
    };
    check_status(ucp_ep_create(s->worker, &ep_params, &s->peer), "ucp_ep_create");
    free(peer_address);
}

/* Progresses until the request is done or the deadline passes. */
static int wait_until(ucp_worker_h worker, void *request, double deadline, ucs_status_t *status_p)
{
    if (request == NULL) {
        *status_p = UCS_OK;
        return 1;
    }
    if (UCS_PTR_IS_ERR(request)) {
        *status_p = UCS_PTR_STATUS(request);
        return 1;
    }
    for (;;) {
        ucs_status_t status = ucp_request_check_status(request);
        if (status != UCS_INPROGRESS) {
            ucp_request_free(request);
            *status_p = status;
            return 1;
        }
        if (now_ms() > deadline) {
            return 0;
        }
        ucp_worker_progress(worker);
    }
}

static void side_close(struct side *s)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = UCP_EP_CLOSE_FLAG_FORCE,
    };
    ucs_status_t status;
    if (!wait_until(s->worker, ucp_ep_close_nbx(s->peer, &param), now_ms() + SETTLE_MS, &status)) {
        die("ucp_ep_close_nbx", "did not finish");
    }
    ucp_worker_destroy(s->worker);
    ucp_cleanup(s->context);
}

/* ---- target ---- */

static int run_target(int fd)
{
    struct side s;
    ucp_mem_h memh[NUM_REGIONS];
    void *user_region;

    side_init(&s, fd);
    if (posix_memalign(&user_region, 4096, REGION_SIZE) != 0) {
        die("posix_memalign", NULL);
    }
    memset(user_region, 0, REGION_SIZE);
    for (int r = 0; r < NUM_REGIONS; ++r) {
        ucp_mem_map_params_t mp = {
            .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                          UCP_MEM_MAP_PARAM_FIELD_FLAGS,
            .address = (r == 0) ? NULL : user_region,
            .length  = REGION_SIZE,
            .flags   = (r == 0) ? UCP_MEM_MAP_ALLOCATE : 0,
        };
        ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
        void *rkey_buffer;
        size_t rkey_length;
        check_status(ucp_mem_map(s.context, &mp, &memh[r]), "ucp_mem_map");
        check_status(ucp_mem_query(memh[r], &attr), "ucp_mem_query");
        memset(attr.address, 0, REGION_SIZE);
        uint64_t address = (uintptr_t)attr.address;
        check_status(ucp_rkey_pack(s.context, memh[r], &rkey_buffer, &rkey_length),
                     "ucp_rkey_pack");
        send_blob(fd, &address, sizeof(address));
        send_blob(fd, rkey_buffer, rkey_length);
        ucp_rkey_buffer_release(rkey_buffer);
    }

    /* The word the target spins on: in its own user region, through a key
     * of its own and an endpoint to itself. */
    ucp_address_t *self_address;
    size_t self_length;
    ucp_ep_h self_ep;
    ucp_rkey_h self_rkey;
    void *self_rkey_buffer;
    size_t self_rkey_length;
    check_status(ucp_worker_get_address(s.worker, &self_address, &self_length),
                 "ucp_worker_get_address");
    ucp_ep_params_t self_params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address    = self_address,
    };
    check_status(ucp_ep_create(s.worker, &self_params, &self_ep), "ucp_ep_create(self)");
    ucp_worker_release_address(s.worker, self_address);
    check_status(ucp_rkey_pack(s.context, memh[1], &self_rkey_buffer, &self_rkey_length),
                 "ucp_rkey_pack(self)");
    check_status(ucp_ep_rkey_unpack(self_ep, self_rkey_buffer, &self_rkey),
                 "ucp_ep_rkey_unpack(self)");
    ucp_rkey_buffer_release(self_rkey_buffer);
    const uint64_t spin_word = (uintptr_t)user_region + REGION_SIZE - sizeof(uint64_t);
    const uint64_t zero      = 0;
    uint64_t fetched;
    ucp_request_param_t spin_param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER,
        .datatype     = ucp_dt_make_contig(sizeof(uint64_t)),
        .reply_buffer = &fetched,
    };

    for (;;) {
        const char mode = recv_byte(fd);
        if (mode == 'Q') {
            break;
        }
        send_byte(fd, 'A'); /* in that mode from now on */
        if (mode == 'S') {
            unsigned n = 0;
            do {
                void *req = ucp_atomic_op_nbx(self_ep, UCP_ATOMIC_OP_ADD, &zero, 1, spin_word,
                                              self_rkey, &spin_param);
                if (req != NULL) {
                    /* Not complete inside the call: this library's own
                     * memory needs progress, which the spin would give. */
                    ucs_status_t status;
                    wait_until(s.worker, req, now_ms() + SETTLE_MS, &status);
                }
            } while (((++n & 1023) != 0) || !readable(fd));
        }
        if (recv_byte(fd) != 'R') {
            die("target", "protocol error");
        }
        while (!readable(fd)) {
            ucp_worker_progress(s.worker);
        }
        if (recv_byte(fd) != 'N') {
            die("target", "protocol error");
        }
    }

    ucp_rkey_destroy(self_rkey);
    {
        ucp_request_param_t param = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
            .flags        = UCP_EP_CLOSE_FLAG_FORCE,
        };
        ucs_status_t status;
        wait_until(s.worker, ucp_ep_close_nbx(self_ep, &param), now_ms() + SETTLE_MS, &status);
    }
    send_byte(fd, 'D');
    /* Serve the initiator's close, then close ours. */
    while (!readable(fd)) {
        ucp_worker_progress(s.worker);
    }
    for (int r = 0; r < NUM_REGIONS; ++r) {
        ucp_mem_unmap(s.context, memh[r]);
    }
    side_close(&s);
    free(user_region);
    return 0;
}

/* ---- initiator ---- */

struct region {
    uint64_t address;
    ucp_rkey_h rkey;
    uint64_t expected; /* value of its first word after the operations so far */
};

static void *issue(struct side *s, struct region *r, int op, uint64_t *operand, uint64_t *result)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
        .datatype     = ucp_dt_make_contig(1),
    };
    switch (op) {
    case OP_PUT:
        *operand = r->expected = r->expected * 31 + 7;
        return ucp_put_nbx(s->peer, operand, sizeof(*operand), r->address, r->rkey, &param);
    case OP_GET:
        return ucp_get_nbx(s->peer, result, sizeof(*result), r->address, r->rkey, &param);
    default:
        break;
    }
    param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    if (op == OP_ADD) {
        *operand = 3;
        r->expected += 3;
        return ucp_atomic_op_nbx(s->peer, UCP_ATOMIC_OP_ADD, operand, 1, r->address, r->rkey,
                                 &param);
    }
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.reply_buffer = result;
    if (op == OP_FADD) {
        *operand = 5;
        r->expected += 5;
        return ucp_atomic_op_nbx(s->peer, UCP_ATOMIC_OP_ADD, operand, 1, r->address, r->rkey,
                                 &param);
    }
    /* compare-swap: compares with *operand, swaps in *result */
    *operand = r->expected;
    *result  = r->expected + 1000;
    r->expected += 1000;
    return ucp_atomic_op_nbx(s->peer, UCP_ATOMIC_OP_CSWAP, operand, 1, r->address, r->rkey, &param);
}

/* One cell: returns whether it completed without the target's progress. */
static int run_cell(struct side *s, int fd, struct region *r, int op, int mode, double timeout_ms)
{
    uint64_t operand = 0, result = ~0ull;
    const uint64_t before           = r->expected;
    ucp_request_param_t flush_param = {.op_attr_mask = 0};
    ucs_status_t op_status = UCS_OK, flush_status = UCS_OK;

    send_byte(fd, (mode == MODE_SPIN) ? 'S' : 'I');
    if (recv_byte(fd) != 'A') {
        die("initiator", "protocol error");
    }
    void *op_req    = issue(s, r, op, &operand, &result);
    void *flush_req = NULL;
    double deadline = now_ms() + timeout_ms;
    int op_done     = wait_until(s->worker, op_req, deadline, &op_status);
    int flush_done  = 0;
    if (op_done) {
        flush_req  = ucp_ep_flush_nbx(s->peer, &flush_param);
        flush_done = wait_until(s->worker, flush_req, deadline, &flush_status);
    }
    const int alone = op_done && flush_done;

    send_byte(fd, 'R'); /* the target progresses from now on */
    deadline = now_ms() + SETTLE_MS;
    if (!op_done && !wait_until(s->worker, op_req, deadline, &op_status)) {
        die(op_names[op], "did not complete while the target progressed");
    }
    if (!flush_done) {
        if (flush_req == NULL) {
            flush_req = ucp_ep_flush_nbx(s->peer, &flush_param);
        }
        if (!wait_until(s->worker, flush_req, deadline, &flush_status)) {
            die("flush", "did not complete while the target progressed");
        }
    }
    check_status(op_status, op_names[op]);
    check_status(flush_status, "ucp_ep_flush_nbx");
    if (((op == OP_GET) || (op == OP_FADD) || (op == OP_CSWAP)) && (result != before)) {
        fprintf(stderr, "ucp_progress_probe: %s returned %llu, expected %llu\n", op_names[op],
                (unsigned long long)result, (unsigned long long)before);
        exit(2);
    }
    send_byte(fd, 'N');
    return alone;
}

static int shared_memory_allowed(void)
{
    const char *tls = getenv("UCX_TLS");
    if ((tls == NULL) || (*tls == '\0') || !strcmp(tls, "all")) {
        return 1;
    }
    if (*tls == '^') {
        return 0; /* keep it simple: not checked */
    }
    return strstr(tls, "posix") || strstr(tls, "sysv") || strstr(tls, "shm") ||
           !strcmp(tls, "sm") || !strncmp(tls, "sm,", 3) || strstr(tls, ",sm");
}

static int run_initiator(int fd, double timeout_ms, int check)
{
    struct side s;
    struct region regions[NUM_REGIONS];
    int alone[NUM_REGIONS][NUM_OPS][NUM_MODES];
    int failures = 0;

    side_init(&s, fd);
    for (int r = 0; r < NUM_REGIONS; ++r) {
        size_t length;
        uint64_t *address = recv_blob(fd, &length);
        if (length != sizeof(uint64_t)) {
            die("initiator", "bad region address");
        }
        regions[r].address  = *address;
        regions[r].expected = 0;
        free(address);
        void *rkey_buffer = recv_blob(fd, &length);
        check_status(ucp_ep_rkey_unpack(s.peer, rkey_buffer, &regions[r].rkey),
                     "ucp_ep_rkey_unpack");
        free(rkey_buffer);
    }
    for (int r = 0; r < NUM_REGIONS; ++r) {
        for (int mode = 0; mode < NUM_MODES; ++mode) {
            for (int op = 0; op < NUM_OPS; ++op) {
                alone[r][op][mode] = run_cell(&s, fd, &regions[r], op, mode, timeout_ms);
            }
        }
    }
    send_byte(fd, 'Q');
    if (recv_byte(fd) != 'D') {
        die("initiator", "protocol error");
    }
    for (int r = 0; r < NUM_REGIONS; ++r) {
        ucp_rkey_destroy(regions[r].rkey);
    }
    side_close(&s);
    send_byte(fd, 'E');

    const char *tls = getenv("UCX_TLS");
    printf("# UCX_TLS=%s, completes without the target's progress (%.0f ms allowed)\n",
           tls ? tls : "(default)", timeout_ms);
    printf("%-12s %-13s %-11s %-11s\n", "memory", "operation", "target idle", "target spins");
    for (int r = 0; r < NUM_REGIONS; ++r) {
        for (int op = 0; op < NUM_OPS; ++op) {
            printf("%-12s %-13s %-11s %-11s\n", region_names[r], op_names[op],
                   alone[r][op][MODE_IDLE] ? "yes" : "no", alone[r][op][MODE_SPIN] ? "yes" : "no");
            if (check && !alone[r][op][MODE_SPIN]) {
                fprintf(stderr, "FAIL: %s on %s waits for a target that spins\n", op_names[op],
                        region_names[r]);
                ++failures;
            }
            if (check && (r == 0) && shared_memory_allowed() && !alone[r][op][MODE_IDLE]) {
                fprintf(stderr,
                        "FAIL: %s on ALLOCATE memory waits for an idle target "
                        "although shared memory is allowed\n",
                        op_names[op]);
                ++failures;
            }
        }
    }
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    double timeout_ms = 300;
    int check         = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--check")) {
            check = 1;
        } else if (!strcmp(argv[i], "--timeout-ms") && (i + 1 < argc)) {
            timeout_ms = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--timeout-ms N] [--check]\n", argv[0]);
            return 2;
        }
    }
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        die("socketpair", strerror(errno));
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        die("fork", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        int rc = run_target(fds[1]);
        recv_byte(fds[1]); /* the initiator closed first */
        _exit(rc);
    }
    close(fds[1]);
    int rc = run_initiator(fds[0], timeout_ms, check);
    int wstatus;
    if ((waitpid(pid, &wstatus, 0) != pid) || !WIFEXITED(wstatus) || (WEXITSTATUS(wstatus) != 0)) {
        fprintf(stderr, "ucp_progress_probe: the target failed\n");
        return 2;
    }
    return rc;
}
