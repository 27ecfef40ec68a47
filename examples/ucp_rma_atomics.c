/*
 * ucp_rma_atomics: one-sided put/get and atomics between two processes.
 *
 *   ucp_rma_atomics [-i ITERATIONS]
 *
 * The program forks; parent (rank 0) and child (rank 1) swap their worker
 * addresses and a packed memory key over a socketpair, connect to each other
 * with ucp_ep_create(UCP_EP_PARAM_FIELD_REMOTE_ADDRESS), and then:
 *   1. rank 0 puts a string into rank 1's memory and flushes; rank 1 reads it
 *      locally;
 *   2. rank 1 gets a string that rank 0 wrote into its own memory;
 *   3. both ranks fetch-and-add 1 to a counter in rank 0's memory ITERATIONS
 *      times (rank 0 through an endpoint to itself); the final value must be
 *      exactly 2 * ITERATIONS;
 *   4. rank 1 compare-and-swaps a word in rank 0's memory from 0 to 7 (it
 *      must swap), then from 0 to 9 (it must not, and must find 7); rank 0
 *      then reads 7 in its memory.
 * The socketpair also serves as a barrier between the steps. Any failure
 * exits 1.
 */
#include <ucp/api/ucp.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define REGION_SIZE    4096
#define PUT_OFFSET     0   /* where rank 0 puts its string (in rank 1) */
#define GET_OFFSET     256 /* where rank 0 leaves a string for rank 1 to get */
#define COUNTER_OFFSET 512 /* the shared counter (in rank 0) */
#define LOCK_OFFSET    520 /* the compare-and-swap word (in rank 0) */

static const char put_text[] = "written by rank 0 with ucp_put_nbx";
static const char get_text[] = "read by rank 1 with ucp_get_nbx";

/* Everything one rank needs. */
typedef struct {
    int rank;
    int sock; /* our end of the socketpair */
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h peer_ep; /* to the other rank */
    ucp_ep_h self_ep; /* rank 0 only: to itself, for its own atomics */
    ucp_mem_h memh;
    char *region;       /* our mapped memory */
    uint64_t peer_base; /* the other rank's region address */
    ucp_rkey_h peer_rkey;
    uint64_t home_base;   /* rank 0's region, where the atomics go */
    ucp_rkey_h home_rkey; /* its key, unpacked for the endpoint we use */
    ucp_ep_h home_ep;
} rank_t;

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "[rank %d] ", r->rank); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            return -1; \
        } \
    } while (0)

#define CHECK_STATUS(_status, _what) \
    CHECK((_status) == UCS_OK, "%s: %s", _what, ucs_status_string(_status))

/* Socket helpers: whole buffers, and a length-prefixed blob. */
static int send_all(int sock, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(sock, p, len);
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* While waiting for the peer we keep progressing our worker: a transport
 * without remote atomics (tcp) has them served by the target's progress. */
static int recv_all(int sock, ucp_worker_h worker, void *buf, size_t len)
{
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    char *p           = buf;
    while (len > 0) {
        ssize_t n;

        if (poll(&pfd, 1, 0) == 0) {
            ucp_worker_progress(worker);
            continue;
        }
        n = read(sock, p, len);
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Send ours, receive theirs (malloc'ed); socketpair buffers hold both. */
static int exchange_blob(int sock, ucp_worker_h worker, const void *mine, size_t my_len,
                         void **theirs, size_t *their_len)
{
    uint64_t len = my_len;

    if (send_all(sock, &len, sizeof(len)) || send_all(sock, mine, my_len) ||
        recv_all(sock, worker, &len, sizeof(len))) {
        return -1;
    }
    *theirs    = malloc(len);
    *their_len = len;
    return ((*theirs == NULL) || recv_all(sock, worker, *theirs, len)) ? -1 : 0;
}

/* Both ranks reach this point before either goes on. */
static int barrier(rank_t *r)
{
    char token = 'b';
    return (send_all(r->sock, &token, 1) || recv_all(r->sock, r->worker, &token, 1)) ? -1 : 0;
}

static ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t request)
{
    ucs_status_t status;

    if (request == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(request);
    return status;
}

/* A 64-bit atomic with a result. Fetch-add: adds value. Compare-and-swap:
 * value is what the word is expected to hold, and *result holds the new
 * value going in (UCP's convention) and the old word coming out. */
static ucs_status_t atomic64(rank_t *r, ucp_atomic_op_t op, uint64_t value, uint64_t offset,
                             uint64_t *result)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    param.reply_buffer = result;
    return wait_request(r->worker, ucp_atomic_op_nbx(r->home_ep, op, &value, 1,
                                                     r->home_base + offset, r->home_rkey, &param));
}

static ucp_ep_h connect_to(rank_t *r, const void *address)
{
    ucp_ep_params_t params;
    ucp_ep_h ep;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = (const ucp_address_t *)address;
    return (ucp_ep_create(r->worker, &params, &ep) == UCS_OK) ? ep : NULL;
}

/* Set up: context, worker, memory, and the exchange with the peer. */
static int setup(rank_t *r)
{
    ucp_params_t ctx_params;
    ucp_worker_params_t worker_params;
    ucp_mem_map_params_t map_params;
    ucp_mem_attr_t mem_attr;
    ucp_address_t *my_addr;
    size_t my_addr_len, peer_addr_len, rkey_len, peer_rkey_len;
    void *peer_addr, *rkey_buf, *peer_rkey_buf;
    uint64_t my_base, *peer_base;
    size_t base_len;
    ucp_config_t *config;
    ucs_status_t status;

    status = ucp_config_read(NULL, NULL, &config);
    CHECK_STATUS(status, "ucp_config_read");
    memset(&ctx_params, 0, sizeof(ctx_params));
    ctx_params.field_mask = UCP_PARAM_FIELD_FEATURES;
    ctx_params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    status                = ucp_init(&ctx_params, config, &r->context);
    ucp_config_release(config);
    CHECK_STATUS(status, "ucp_init");

    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status                    = ucp_worker_create(r->context, &worker_params, &r->worker);
    CHECK_STATUS(status, "ucp_worker_create");

    /* Let UCP allocate the memory: it picks what its transports can reach. */
    memset(&map_params, 0, sizeof(map_params));
    map_params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    map_params.length     = REGION_SIZE;
    map_params.flags      = UCP_MEM_MAP_ALLOCATE;
    status                = ucp_mem_map(r->context, &map_params, &r->memh);
    CHECK_STATUS(status, "ucp_mem_map");
    mem_attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    status              = ucp_mem_query(r->memh, &mem_attr);
    CHECK_STATUS(status, "ucp_mem_query");
    CHECK(mem_attr.length >= REGION_SIZE, "mapped only %zu bytes", mem_attr.length);
    r->region = mem_attr.address;
    memset(r->region, 0, REGION_SIZE);
    if (r->rank == 0) {
        strcpy(r->region + GET_OFFSET, get_text); /* for rank 1 to get */
    }

    /* Swap worker addresses and connect. */
    status = ucp_worker_get_address(r->worker, &my_addr, &my_addr_len);
    CHECK_STATUS(status, "ucp_worker_get_address");
    CHECK(exchange_blob(r->sock, r->worker, my_addr, my_addr_len, &peer_addr, &peer_addr_len) == 0,
          "address exchange failed");
    r->peer_ep = connect_to(r, peer_addr);
    CHECK(r->peer_ep != NULL, "cannot connect to the peer");
    if (r->rank == 0) {
        r->self_ep = connect_to(r, my_addr);
        CHECK(r->self_ep != NULL, "cannot connect to myself");
    }
    ucp_worker_release_address(r->worker, my_addr);
    free(peer_addr);

    /* Swap the region's address and packed key. */
    status = ucp_rkey_pack(r->context, r->memh, &rkey_buf, &rkey_len);
    CHECK_STATUS(status, "ucp_rkey_pack");
    my_base = (uint64_t)(uintptr_t)r->region;
    CHECK(exchange_blob(r->sock, r->worker, &my_base, sizeof(my_base), (void **)&peer_base,
                        &base_len) == 0 &&
              base_len == sizeof(my_base),
          "address exchange failed");
    CHECK(exchange_blob(r->sock, r->worker, rkey_buf, rkey_len, &peer_rkey_buf, &peer_rkey_len) ==
              0,
          "key exchange failed");
    r->peer_base = *peer_base;
    free(peer_base);
    status = ucp_ep_rkey_unpack(r->peer_ep, peer_rkey_buf, &r->peer_rkey);
    free(peer_rkey_buf);
    CHECK_STATUS(status, "ucp_ep_rkey_unpack");

    /* The atomics target rank 0's region: rank 1 through its endpoint to
     * rank 0, rank 0 through its endpoint to itself with its own key. */
    if (r->rank == 0) {
        status = ucp_ep_rkey_unpack(r->self_ep, rkey_buf, &r->home_rkey);
        CHECK_STATUS(status, "ucp_ep_rkey_unpack (own key)");
        r->home_base = my_base;
        r->home_ep   = r->self_ep;
    } else {
        r->home_rkey = r->peer_rkey;
        r->home_base = r->peer_base;
        r->home_ep   = r->peer_ep;
    }
    ucp_rkey_buffer_release(rkey_buf);
    return barrier(r);
}

static int put_and_get(rank_t *r)
{
    ucp_request_param_t param = {0};
    char text[64];
    ucs_status_t status;

    if (r->rank == 0) {
        status = wait_request(r->worker,
                              ucp_put_nbx(r->peer_ep, put_text, sizeof(put_text),
                                          r->peer_base + PUT_OFFSET, r->peer_rkey, &param));
        CHECK_STATUS(status, "ucp_put_nbx");
        /* Completion of a put means the buffer may be reused; the flush
         * makes the data visible at the target. */
        status = wait_request(r->worker, ucp_ep_flush_nbx(r->peer_ep, &param));
        CHECK_STATUS(status, "ucp_ep_flush_nbx");
        printf("[rank 0] put %zu bytes into rank 1 and flushed\n", sizeof(put_text));
    }
    CHECK(barrier(r) == 0, "barrier failed");
    if (r->rank == 1) {
        CHECK(memcmp(r->region + PUT_OFFSET, put_text, sizeof(put_text)) == 0,
              "the put data did not arrive");
        printf("[rank 1] found in my memory: \"%s\"\n", r->region + PUT_OFFSET);

        memset(text, 0, sizeof(text));
        status = wait_request(r->worker,
                              ucp_get_nbx(r->peer_ep, text, sizeof(get_text),
                                          r->peer_base + GET_OFFSET, r->peer_rkey, &param));
        CHECK_STATUS(status, "ucp_get_nbx");
        CHECK(strcmp(text, get_text) == 0, "get returned \"%s\"", text);
        printf("[rank 1] got from rank 0: \"%s\"\n", text);
    }
    return barrier(r);
}

static int fetch_add(rank_t *r, int iterations)
{
    uint64_t fetched, previous = 0, total = 0;
    ucs_status_t status;
    int i;

    for (i = 0; i < iterations; ++i) {
        status = atomic64(r, UCP_ATOMIC_OP_ADD, 1, COUNTER_OFFSET, &fetched);
        CHECK_STATUS(status, "fetch-add");
        /* The counter only grows, so what one rank fetches grows too. */
        CHECK((i == 0) || (fetched > previous), "fetched %lu after %lu", (unsigned long)fetched,
              (unsigned long)previous);
        previous = fetched;
    }
    CHECK(barrier(r) == 0, "barrier failed");
    /* Everybody is done: a fetch-add of 0 reads the final value. */
    status = atomic64(r, UCP_ATOMIC_OP_ADD, 0, COUNTER_OFFSET, &total);
    CHECK_STATUS(status, "fetch-add 0");
    CHECK(total == 2 * (uint64_t)iterations, "counter is %lu, expected %lu", (unsigned long)total,
          2 * (unsigned long)iterations);
    printf("[rank %d] %d fetch-adds done, counter is %lu as expected\n", r->rank, iterations,
           (unsigned long)total);
    return barrier(r);
}

static int compare_and_swap(rank_t *r)
{
    uint64_t result;
    ucs_status_t status;

    if (r->rank == 1) {
        /* The word is 0: the first swap happens ... */
        result = 7;
        status = atomic64(r, UCP_ATOMIC_OP_CSWAP, 0, LOCK_OFFSET, &result);
        CHECK_STATUS(status, "compare-and-swap");
        CHECK(result == 0, "compare-and-swap 0 -> 7 found %lu", (unsigned long)result);
        printf("[rank 1] compare-and-swap 0 -> 7 in rank 0: swapped\n");

        /* ... the second one expects 0 again, finds 7 and changes nothing. */
        result = 9;
        status = atomic64(r, UCP_ATOMIC_OP_CSWAP, 0, LOCK_OFFSET, &result);
        CHECK_STATUS(status, "compare-and-swap");
        CHECK(result == 7, "compare-and-swap 0 -> 9 found %lu", (unsigned long)result);
        printf("[rank 1] compare-and-swap 0 -> 9 in rank 0: not swapped, found 7\n");
    }
    CHECK(barrier(r) == 0, "barrier failed");
    if (r->rank == 0) {
        /* The atomics completed before the barrier: our memory shows them. */
        result = *(volatile uint64_t *)(r->region + LOCK_OFFSET);
        CHECK(result == 7, "the compare-and-swap word holds %lu", (unsigned long)result);
        printf("[rank 0] the compare-and-swap word in my memory is 7\n");
    }
    return barrier(r);
}

/* Close endpoints (flushing), release keys and memory. */
static int teardown(rank_t *r)
{
    ucp_request_param_t param = {0};
    ucs_status_t status;
    int ret = 0;

    if (r->rank == 0 && r->home_rkey != NULL) {
        ucp_rkey_destroy(r->home_rkey);
    }
    if (r->peer_rkey != NULL) {
        ucp_rkey_destroy(r->peer_rkey);
    }
    /* Nobody closes while the other may still be using its memory. */
    if (barrier(r) != 0) {
        ret = -1;
    }
    if (r->self_ep != NULL) {
        status = wait_request(r->worker, ucp_ep_close_nbx(r->self_ep, &param));
        ret |= (status == UCS_OK) ? 0 : -1;
    }
    if (r->peer_ep != NULL) {
        status = wait_request(r->worker, ucp_ep_close_nbx(r->peer_ep, &param));
        ret |= (status == UCS_OK) ? 0 : -1;
    }
    if (r->memh != NULL) {
        ucp_mem_unmap(r->context, r->memh);
    }
    if (r->worker != NULL) {
        ucp_worker_destroy(r->worker);
    }
    if (r->context != NULL) {
        ucp_cleanup(r->context);
    }
    return ret;
}

static int run_rank(int rank, int sock, int iterations)
{
    rank_t rank_state, *r = &rank_state;
    int ret;

    memset(r, 0, sizeof(*r));
    r->rank = rank;
    r->sock = sock;
    ret     = setup(r);
    if (ret == 0) {
        ret = put_and_get(r);
    }
    if (ret == 0) {
        ret = fetch_add(r, iterations);
    }
    if (ret == 0) {
        ret = compare_and_swap(r);
    }
    if (teardown(r) != 0 && ret == 0) {
        fprintf(stderr, "[rank %d] teardown failed\n", rank);
        ret = -1;
    }
    close(sock);
    return ret;
}

int main(int argc, char **argv)
{
    long iterations = 1000;
    int fds[2], status, opt, ret;
    pid_t child;

    while ((opt = getopt(argc, argv, "i:h")) != -1) {
        if (opt == 'i') {
            iterations = strtol(optarg, NULL, 10);
        } else {
            fprintf(stderr, "Usage: %s [-i ITERATIONS]\n", argv[0]);
            return (opt == 'h') ? 0 : 1;
        }
    }
    if ((iterations < 1) || (iterations > 100000000)) {
        fprintf(stderr, "bad iteration count\n");
        return 1;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        perror("socketpair");
        return 1;
    }
    fflush(stdout); /* nothing buffered may be printed twice */
    child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        close(fds[0]);
        /* If rank 0 dies, our socket reads fail and we exit too. */
        exit((run_rank(1, fds[1], (int)iterations) == 0) ? 0 : 1);
    }
    close(fds[1]);
    ret = run_rank(0, fds[0], (int)iterations);
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "rank 1 failed\n");
        ret = -1;
    }
    printf("%s\n", (ret == 0) ? "all RMA and atomic checks passed" : "FAILED");
    return (ret == 0) ? 0 : 1;
}
