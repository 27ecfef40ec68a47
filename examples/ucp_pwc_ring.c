/*
 * ucp_pwc_ring: a producer fills a consumer's ring buffer with signalled
 * puts (put with completion ids, <ucp/api/ucp_pwc.h>).
 *
 *   ucp_pwc_ring [-n MESSAGES] [-s SLOTS]
 *
 * The program forks a consumer, which maps a ring of SLOTS slots of
 * SLOT_SIZE bytes and gives the producer its remote key. Message k goes
 * into slot k % SLOTS with ucp_pwc_put(); its remote id is k, so the
 * consumer's ucp_pwc_probe() returns k only once the message is in the
 * slot: no flag word in the slot, no second message, no polling of memory.
 * The consumer checks the message, then hands the slot back with a put of
 * 0 bytes whose remote id is k: a pure notification to the producer, who
 * never has more than SLOTS messages in the ring. Both sides only probe.
 *
 * Each message starts with its number and its length, and the rest is a
 * pattern of both; the consumer checks all of it. Any failure exits 1.
 */
#include <ucp/api/ucp.h>
#include <ucp/api/ucp_pwc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOT_SIZE 4096
#define MAX_SLOTS 1024

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "%s: ", role); \
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

/* Message k: its number, its length, then a pattern of both. */
static size_t message_length(uint64_t k)
{
    return 16 + (size_t)((k * 2654435761u) % (SLOT_SIZE - 16 + 1));
}

static uint8_t message_byte(uint64_t k, size_t i)
{
    return (uint8_t)(k * 31 + i * 7);
}

static void write_message(uint8_t *slot, uint64_t k)
{
    const uint64_t length = message_length(k);
    size_t i;
    memcpy(slot, &k, sizeof(k));
    memcpy(slot + 8, &length, sizeof(length));
    for (i = 16; i < length; ++i) {
        slot[i] = message_byte(k, i);
    }
}

static int message_intact(const uint8_t *slot, uint64_t k)
{
    uint64_t number, length;
    size_t i;
    memcpy(&number, slot, sizeof(number));
    memcpy(&length, slot + 8, sizeof(length));
    if ((number != k) || (length != message_length(k))) {
        return 0;
    }
    for (i = 16; i < length; ++i) {
        if (slot[i] != message_byte(k, i)) {
            return 0;
        }
    }
    return 1;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A context and worker with RMA, and an ep to the peer on the other end of
 * `sock` (addresses exchanged over it). */
static int connect_peer(const char *role, int sock, ucp_context_h *context, ucp_worker_h *worker,
                        ucp_ep_h *ep)
{
    ucp_params_t params;
    ucp_worker_params_t worker_params;
    ucp_ep_params_t ep_params;
    ucp_address_t *address;
    size_t address_length;
    void *remote;
    uint64_t remote_length;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA;
    CHECK(ucp_init(&params, NULL, context) == UCS_OK, "ucp_init failed");
    memset(&worker_params, 0, sizeof(worker_params));
    CHECK(ucp_worker_create(*context, &worker_params, worker) == UCS_OK,
          "ucp_worker_create failed");
    CHECK(ucp_worker_get_address(*worker, &address, &address_length) == UCS_OK,
          "ucp_worker_get_address failed");
    CHECK(send_blob(sock, address, address_length) == 0, "cannot send the address");
    ucp_worker_release_address(*worker, address);
    CHECK(recv_blob(sock, &remote, &remote_length) == 0, "cannot receive an address");
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = remote;
    CHECK(ucp_ep_create(*worker, &ep_params, ep) == UCS_OK, "ucp_ep_create failed");
    free(remote);
    return 0;
}

static void close_peer(ucp_context_h context, ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t param;
    ucs_status_ptr_t request;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    request            = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(request)) {
        while (ucp_request_check_status(request) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(request);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
}

/* Probes for one remote completion; returns its id. */
static int next_remote(ucp_worker_h worker, uint64_t *id)
{
    ucp_pwc_probe_params_t params;
    ucp_pwc_completion_t completion;
    size_t count = 0;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS;
    params.flags      = UCP_PWC_PROBE_REMOTE;
    while (count == 0) {
        if (ucp_pwc_probe(worker, &params, &completion, 1, &count, NULL) != UCS_OK) {
            return -1;
        }
    }
    if (completion.status != UCS_OK) {
        return -1;
    }
    *id = completion.cid.u64;
    return 0;
}

static int consumer(int sock, uint64_t messages, unsigned slots)
{
    const char *role = "consumer";
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h ep;
    ucp_mem_map_params_t map_params;
    ucp_mem_h memh;
    ucp_mem_attr_t attr;
    void *key;
    size_t key_length;
    uint8_t *ring;
    uint64_t address, checked = 0;
    char done;

    if (connect_peer(role, sock, &context, &worker, &ep) != 0) {
        return 1;
    }
    memset(&map_params, 0, sizeof(map_params));
    map_params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    map_params.length     = (size_t)slots * SLOT_SIZE;
    map_params.flags      = UCP_MEM_MAP_ALLOCATE;
    CHECK(ucp_mem_map(context, &map_params, &memh) == UCS_OK, "ucp_mem_map failed");
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    CHECK(ucp_mem_query(memh, &attr) == UCS_OK, "ucp_mem_query failed");
    ring    = attr.address;
    address = (uint64_t)(uintptr_t)ring;
    CHECK(ucp_rkey_pack(context, memh, &key, &key_length) == UCS_OK, "ucp_rkey_pack failed");
    CHECK((send_blob(sock, key, key_length) == 0) &&
              (write_all(sock, &address, sizeof(address)) == 0),
          "cannot send the key");
    ucp_rkey_buffer_release(key);

    while (checked < messages) {
        uint64_t k;
        ucp_cid_t freed;
        ucs_status_t status;
        CHECK(next_remote(worker, &k) == 0, "probe failed");
        /* The id says the message is in its slot: read it there. */
        CHECK(k < messages, "message %llu out of range", (unsigned long long)k);
        CHECK(message_intact(ring + (k % slots) * SLOT_SIZE, k),
              "message %llu is not intact in slot %llu", (unsigned long long)k,
              (unsigned long long)(k % slots));
        ++checked;
        /* The slot back to the producer: a notification of 0 bytes. */
        memset(&freed, 0, sizeof(freed));
        freed.u64 = k;
        while ((status = ucp_pwc_put(ep, NULL, 0, 0, NULL, NULL, &freed, UCP_PWC_FLAG_NO_LCE)) ==
               UCS_ERR_NO_RESOURCE) {
            size_t count;
            ucp_pwc_probe(worker, NULL, NULL, 0, &count, NULL);
        }
        CHECK(status == UCS_OK, "cannot free slot %llu", (unsigned long long)(k % slots));
    }
    printf("consumer checked %llu messages in a ring of %u slots\n", (unsigned long long)checked,
           slots);
    fflush(stdout);
    /* Our notifications out before the producer closes. */
    CHECK(write_all(sock, "d", 1) == 0, "cannot tell the producer");
    CHECK(read_all(sock, &done, 1) == 0, "the producer went away");
    ucp_mem_unmap(context, memh);
    close_peer(context, worker, ep);
    return 0;
}

static int producer(int sock, uint64_t messages, unsigned slots)
{
    const char *role = "producer";
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h ep;
    ucp_rkey_h rkey;
    void *key;
    uint64_t key_length, ring, k, freed = 0, next = 0;
    uint8_t *staging, busy[MAX_SLOTS];
    double start;
    char done;

    if (connect_peer(role, sock, &context, &worker, &ep) != 0) {
        return 1;
    }
    CHECK((recv_blob(sock, &key, &key_length) == 0) && (read_all(sock, &ring, sizeof(ring)) == 0),
          "no key from the consumer");
    CHECK(ucp_ep_rkey_unpack(ep, key, &rkey) == UCS_OK, "ucp_ep_rkey_unpack failed");
    free(key);
    /* One staging buffer per slot: a message's source stays untouched until
     * the consumer hands its slot back (no local ids needed). */
    staging = malloc((size_t)slots * SLOT_SIZE);
    CHECK(staging != NULL, "out of memory");
    memset(busy, 0, sizeof(busy));

    start = now_us();
    while (freed < messages) {
        /* Fill the slots in turn while the next one is free. */
        while ((next < messages) && !busy[next % slots]) {
            uint8_t *source = staging + (next % slots) * SLOT_SIZE;
            ucp_cid_t id;
            ucs_status_t status;
            write_message(source, next);
            memset(&id, 0, sizeof(id));
            id.u64 = next;
            status = ucp_pwc_put(ep, source, message_length(next),
                                 ring + (next % slots) * SLOT_SIZE, rkey, NULL, &id,
                                 UCP_PWC_FLAG_NO_LCE);
            if (status == UCS_ERR_NO_RESOURCE) {
                break; /* the consumer's id queue is full: probe first */
            }
            CHECK(status == UCS_OK, "ucp_pwc_put failed");
            busy[next % slots] = 1;
            ++next;
        }
        /* Slots may come back in any order: each says which it is. */
        CHECK(next_remote(worker, &k) == 0, "probe failed");
        CHECK((k < next) && busy[k % slots],
              "slot of message %llu freed twice or before it "
              "was sent",
              (unsigned long long)k);
        busy[k % slots] = 0;
        ++freed;
    }
    printf("producer sent %llu messages through a ring of %u slots (%.2f us per message)\n",
           (unsigned long long)messages, slots, (now_us() - start) / (double)messages);
    fflush(stdout);
    CHECK(read_all(sock, &done, 1) == 0, "the consumer went away");
    CHECK(write_all(sock, "g", 1) == 0, "cannot tell the consumer");
    ucp_rkey_destroy(rkey);
    free(staging);
    close_peer(context, worker, ep);
    return 0;
}

int main(int argc, char **argv)
{
    const char *role  = "ucp_pwc_ring";
    uint64_t messages = 10000;
    unsigned slots    = 16;
    int pair[2], opt, status, rc;
    pid_t pid;

    while ((opt = getopt(argc, argv, "n:s:")) != -1) {
        if (opt == 'n') {
            messages = strtoull(optarg, NULL, 10);
        } else if (opt == 's') {
            slots = (unsigned)atoi(optarg);
        } else {
            fprintf(stderr, "usage: %s [-n MESSAGES] [-s SLOTS]\n", argv[0]);
            return 1;
        }
    }
    CHECK((messages >= 1) && (slots >= 1) && (slots <= MAX_SLOTS),
          "need at least one message and 1 to %d slots", MAX_SLOTS);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0, "socketpair failed");
    pid = fork();
    CHECK(pid >= 0, "fork failed");
    if (pid == 0) {
        close(pair[0]);
        _exit(consumer(pair[1], messages, slots));
    }
    close(pair[1]);
    rc = producer(pair[0], messages, slots);
    close(pair[0]);
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
    if ((rc != 0) || !WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "the producer or the consumer failed\n");
        return 1;
    }
    printf("all %llu messages passed the ring\n", (unsigned long long)messages);
    return 0;
}
