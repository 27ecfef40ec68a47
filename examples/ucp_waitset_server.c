/*
 * ucp_waitset_server: one thread serving several workers and a counter
 * through a poll set and a wait set (<ucp/api/ucp_ext.h>), asleep when
 * there is nothing to do.
 *
 *   ucp_waitset_server [-w WORKERS] [-m MESSAGES]
 *
 * The program forks a client. The server has WORKERS workers (4 by
 * default), each with a tag receive posted at all times, and a counter,
 * `stop`; its serving thread loops:
 *   - ucp_pollset_poll: progresses every worker and the counter, and says
 *     which had events; a worker's completed receive is checked,
 *     acknowledged and reposted; the counter having moved ends the loop;
 *   - nothing happened: ucp_waitset_wait sleeps until a worker or the
 *     counter has something (or 10 s pass: an error).
 * The client connects an endpoint to every server worker and sends
 * MESSAGES messages (100 by default) to each in turn, one at a time,
 * waiting for each message's acknowledgement (a message back to it) so
 * that the server sleeps between messages; then it says it is done over
 * the socketpair, where a second server thread waits and adds 1 to `stop`
 * (a counter changed from another thread wakes the sleeping one). The
 * server checks every message's worker and number, and prints how often
 * it slept.
 */
#include <ucp/api/ucp.h>
#include <ucp/api/ucp_ext.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORKERS 64
#define DATA_TAG    1
#define ACK_TAG     2

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            return 1; \
        } \
    } while (0)

/* One worker: its context is shared, its receive buffer is its own. */
typedef struct {
    ucp_worker_h worker;
    ucp_ep_h ep;              /* server: back to the client; client: to this worker */
    uint32_t inbox[2];        /* worker index, message number */
    ucs_status_ptr_t request; /* the posted receive */
    int expected;             /* next message number */
} worker_t;

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

/* Our address out, the peer's in (malloc'ed). */
static int swap_addresses(int sock, ucp_worker_h worker, void **remote)
{
    ucp_address_t *address;
    size_t length;
    uint64_t remote_length;
    if (ucp_worker_get_address(worker, &address, &length) != UCS_OK) {
        return -1;
    }
    uint64_t length64 = length;
    int rc = write_all(sock, &length64, sizeof(length64)) | write_all(sock, address, length);
    ucp_worker_release_address(worker, address);
    if ((rc != 0) || (read_all(sock, &remote_length, sizeof(remote_length)) != 0) ||
        (remote_length > (1u << 20)) || ((*remote = malloc(remote_length)) == NULL)) {
        return -1;
    }
    return read_all(sock, *remote, remote_length);
}

static int connect_to(ucp_worker_h worker, void *remote, ucp_ep_h *ep)
{
    ucp_ep_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = remote;
    return (ucp_ep_create(worker, &params, ep) == UCS_OK) ? 0 : -1;
}

static ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t request)
{
    ucs_status_t status;
    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(request);
    return status;
}

static int open_workers(ucp_context_h *context, worker_t *workers, int count)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_worker_params_t worker_params;
    int i;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    if ((ucp_config_read(NULL, NULL, &config) != UCS_OK) ||
        (ucp_init(&params, config, context) != UCS_OK)) {
        return -1;
    }
    ucp_config_release(config);
    memset(&worker_params, 0, sizeof(worker_params));
    for (i = 0; i < count; ++i) {
        memset(&workers[i], 0, sizeof(workers[i]));
        if (ucp_worker_create(*context, &worker_params, &workers[i].worker) != UCS_OK) {
            return -1;
        }
    }
    return 0;
}

static void close_workers(ucp_context_h context, worker_t *workers, int count)
{
    ucp_request_param_t param;
    int i;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    for (i = 0; i < count; ++i) {
        if (workers[i].ep != NULL) {
            wait_request(workers[i].worker, ucp_ep_close_nbx(workers[i].ep, &param));
        }
        ucp_worker_destroy(workers[i].worker);
    }
    ucp_cleanup(context);
}

/* Posts worker w's next receive. */
static int post_receive(worker_t *w)
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    w->request = ucp_tag_recv_nbx(w->worker, w->inbox, sizeof(w->inbox), DATA_TAG, ~(ucp_tag_t)0,
                                  &param);
    return UCS_PTR_IS_ERR(w->request) ? -1 : 0;
}

/* The second server thread: the client's "done" becomes a counter change. */
typedef struct {
    int sock;
    ucp_cntr_h stop;
} controller_t;

static void *controller(void *arg)
{
    controller_t *c = arg;
    char done;
    (void)read_all(c->sock, &done, 1); /* "done", or the client gone */
    ucp_cntr_add(c->stop, 1);          /* any thread: wakes the serving one */
    return NULL;
}

/* Worker `index` had events: each completed receive is checked,
 * acknowledged and reposted (a repost may complete at once, when the next
 * message is there already). */
static int serve(worker_t *workers, int index)
{
    worker_t *w = &workers[index];
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    for (;;) {
        if (w->request != NULL) {
            if (ucp_request_check_status(w->request) == UCS_INPROGRESS) {
                return 0; /* nothing (yet): a false positive of the poll is allowed */
            }
            ucp_request_free(w->request);
            w->request = NULL;
        }
        CHECK((w->inbox[0] == (uint32_t)index) && (w->inbox[1] == (uint32_t)w->expected),
              "worker %d: got message %u for worker %u, expected %d", index, w->inbox[1],
              w->inbox[0], w->expected);
        ++w->expected;
        CHECK(wait_request(w->worker, ucp_tag_send_nbx(w->ep, w->inbox, sizeof(w->inbox), ACK_TAG,
                                                       &param)) == UCS_OK,
              "ack failed");
        CHECK(post_receive(w) == 0, "cannot repost");
    }
}

static int run_server(int sock, int nworkers, int messages)
{
    ucp_context_h context;
    worker_t workers[MAX_WORKERS];
    ucp_cntr_params_t cntr_params;
    ucp_cntr_h stop;
    ucp_pollset_h pollset;
    ucp_waitset_h waitset;
    ucp_object_t object;
    controller_t control;
    pthread_t thread;
    long sleeps = 0, served = 0;
    int i, stopped          = 0;

    CHECK(open_workers(&context, workers, nworkers) == 0, "server: no workers");
    memset(&cntr_params, 0, sizeof(cntr_params));
    CHECK(ucp_cntr_create(workers[0].worker, &cntr_params, &stop) == UCS_OK, "server: no counter");
    CHECK((ucp_pollset_create(context, &pollset) == UCS_OK) &&
              (ucp_waitset_create(context, UCP_WAIT_FD, &waitset) == UCS_OK),
          "server: no sets");
    for (i = 0; i < nworkers; ++i) {
        void *remote;
        CHECK((swap_addresses(sock, workers[i].worker, &remote) == 0) &&
                  (connect_to(workers[i].worker, remote, &workers[i].ep) == 0),
              "server: cannot connect worker %d", i);
        free(remote);
        CHECK(post_receive(&workers[i]) == 0, "server: cannot post");
        object.type   = UCP_OBJECT_WORKER;
        object.handle = workers[i].worker;
        CHECK((ucp_pollset_add(pollset, &object, &workers[i]) == UCS_OK) &&
                  (ucp_waitset_add(waitset, &object) == UCS_OK),
              "server: cannot add worker");
    }
    object.type   = UCP_OBJECT_CNTR;
    object.handle = stop;
    CHECK((ucp_pollset_add(pollset, &object, &stop) == UCS_OK) &&
              (ucp_waitset_add(waitset, &object) == UCS_OK),
          "server: cannot add the counter");
    control.sock = sock;
    control.stop = stop;
    CHECK(pthread_create(&thread, NULL, controller, &control) == 0, "server: no thread");
    CHECK(write_all(sock, "r", 1) == 0, "server: client gone");

    while (!stopped) {
        void *ready[MAX_WORKERS + 1];
        int n = ucp_pollset_poll(pollset, ready, nworkers + 1);
        CHECK(n >= 0, "server: poll failed");
        for (i = 0; i < n; ++i) {
            if (ready[i] == (void *)&stop) {
                stopped = 1;
            } else {
                CHECK(serve(workers, (int)((worker_t *)ready[i] - workers)) == 0,
                      "server: bad message");
            }
        }
        if (n == 0) {
            ++sleeps;
            CHECK(ucp_waitset_wait(waitset, 10000) == UCS_OK,
                  "server: nothing for 10 s (a lost wake-up?)");
        }
    }
    pthread_join(thread, NULL);
    for (i = 0; i < nworkers; ++i) {
        CHECK(workers[i].expected == messages, "server: worker %d served %d messages of %d", i,
              workers[i].expected, messages);
        served += workers[i].expected;
    }
    printf("served %d workers from one thread: %d messages each, %ld in all, "
           "slept %ld times\n",
           nworkers, messages, served, sleeps);
    fflush(stdout);

    for (i = 0; i < nworkers; ++i) {
        object.type   = UCP_OBJECT_WORKER;
        object.handle = workers[i].worker;
        ucp_pollset_remove(pollset, &object);
        ucp_waitset_remove(waitset, &object);
        ucp_request_cancel(workers[i].worker, workers[i].request);
        wait_request(workers[i].worker, workers[i].request);
    }
    object.type   = UCP_OBJECT_CNTR;
    object.handle = stop;
    ucp_pollset_remove(pollset, &object);
    ucp_waitset_remove(waitset, &object);
    ucp_pollset_destroy(pollset);
    ucp_waitset_destroy(waitset);
    ucp_cntr_destroy(stop);
    close_workers(context, workers, nworkers);
    return 0;
}

static int run_client(int sock, int nworkers, int messages)
{
    ucp_context_h context;
    worker_t workers[MAX_WORKERS];
    ucp_request_param_t param;
    char ready;
    int i, m;

    /* One worker of ours per server worker: simple, and each has an ep. */
    CHECK(open_workers(&context, workers, nworkers) == 0, "client: no workers");
    for (i = 0; i < nworkers; ++i) {
        void *remote;
        CHECK((swap_addresses(sock, workers[i].worker, &remote) == 0) &&
                  (connect_to(workers[i].worker, remote, &workers[i].ep) == 0),
              "client: cannot connect worker %d", i);
        free(remote);
    }
    CHECK(read_all(sock, &ready, 1) == 0, "client: server gone");
    memset(&param, 0, sizeof(param));
    for (m = 0; m < messages; ++m) {
        for (i = 0; i < nworkers; ++i) {
            uint32_t message[2] = {(uint32_t)i, (uint32_t)m}, ack[2];
            ucs_status_ptr_t r;
            CHECK(wait_request(workers[i].worker,
                               ucp_tag_send_nbx(workers[i].ep, message, sizeof(message), DATA_TAG,
                                                &param)) == UCS_OK,
                  "client: send failed");
            r = ucp_tag_recv_nbx(workers[i].worker, ack, sizeof(ack), ACK_TAG, ~(ucp_tag_t)0,
                                 &param);
            CHECK(wait_request(workers[i].worker, r) == UCS_OK, "client: no ack");
            CHECK((ack[0] == message[0]) && (ack[1] == message[1]), "client: wrong ack");
        }
    }
    CHECK(write_all(sock, "d", 1) == 0, "client: server gone");
    close_workers(context, workers, nworkers);
    return 0;
}

int main(int argc, char **argv)
{
    int nworkers = 4, messages = 100, opt, pair[2], status, rc;
    pid_t child;
    while ((opt = getopt(argc, argv, "w:m:")) != -1) {
        if (opt == 'w') {
            nworkers = atoi(optarg);
        } else if (opt == 'm') {
            messages = atoi(optarg);
        } else {
            fprintf(stderr, "usage: %s [-w WORKERS] [-m MESSAGES]\n", argv[0]);
            return 1;
        }
    }
    CHECK((nworkers >= 1) && (nworkers <= MAX_WORKERS) && (messages >= 1),
          "need 1 to %d workers and at least one message", MAX_WORKERS);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0, "socketpair failed");
    child = fork();
    CHECK(child >= 0, "fork failed");
    if (child == 0) {
        close(pair[0]);
        _exit(run_client(pair[1], nworkers, messages));
    }
    close(pair[1]);
    rc = run_server(pair[0], nworkers, messages);
    close(pair[0]);
    CHECK(waitpid(child, &status, 0) == child, "waitpid failed");
    CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0), "the client failed");
    if (rc == 0) {
        printf("all messages served\n");
    }
    return rc;
}
