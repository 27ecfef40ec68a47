/*
 * ucp_bad_input_probe: feeds corrupted remote keys and worker addresses to
 * ucp_ep_rkey_unpack and ucp_ep_create, the two calls that take bytes from
 * another process through the public API, and counts what the library does
 * with them: refuses (an error status), accepts (a valid-looking key or
 * address), crashes (a signal) or hangs (no answer in --timeout seconds).
 *
 * The corrupted inputs start from a real key (of a region the probe maps)
 * and a real address (of a second worker), made by the library under test,
 * and keep their full length: every byte flipped to a few values, runs of
 * random bytes, then random multi-byte corruption; plus every truncation
 * of the address to its first bytes with the rest zeroed.
 *
 * A child process works through the inputs and tells the parent, over a
 * pipe, which one it is about to try; if it dies or stalls, the parent
 * counts that input and starts a new child after it. Only the public UCP
 * API is used, so the same binary runs on UCX 1.13:
 *
 *   ucp_bad_input_probe [--random N] [--timeout S] [--check]
 *   LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu ucp_bad_input_probe
 *
 * --check (the test suite on our libraries): exit 1 on any crash or hang.
 */
#define _GNU_SOURCE
#include <ucp/api/ucp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum kind { KIND_RKEY, KIND_ADDRESS, NUM_KINDS };
static const char *const kind_names[NUM_KINDS] = {"remote keys", "worker addresses"};

enum outcome { REFUSED, ACCEPTED, CRASHED, HUNG, NUM_OUTCOMES };

/* What the child reports per input: its index, then one outcome byte. */
struct report {
    uint32_t index;
    uint8_t outcome;
};

struct world {
    ucp_context_h context;
    ucp_worker_h worker, other;
    ucp_ep_h ep; /* to `other`, for unpacking keys */
    ucp_mem_h memh;
    void *rkey_buffer;
    size_t rkey_length;
    ucp_address_t *address; /* of `other` */
    size_t address_length;
};

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "ucp_bad_input_probe: %s: %s\n", what, ucs_status_string(status));
    exit(2);
}

static void world_init(struct world *w)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64,
    };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    ucs_status_t status;

    memset(w, 0, sizeof(*w));
    if ((status = ucp_init(&params, NULL, &w->context)) != UCS_OK) {
        die("ucp_init", status);
    }
    if (((status = ucp_worker_create(w->context, &wparams, &w->worker)) != UCS_OK) ||
        ((status = ucp_worker_create(w->context, &wparams, &w->other)) != UCS_OK)) {
        die("ucp_worker_create", status);
    }
    if ((status = ucp_worker_get_address(w->other, &w->address, &w->address_length)) != UCS_OK) {
        die("ucp_worker_get_address", status);
    }
    ucp_ep_params_t ep_params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address    = w->address,
    };
    if ((status = ucp_ep_create(w->worker, &ep_params, &w->ep)) != UCS_OK) {
        die("ucp_ep_create", status);
    }
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
        .address = NULL,
        .length  = 65536,
        .flags   = UCP_MEM_MAP_ALLOCATE,
    };
    if ((status = ucp_mem_map(w->context, &mp, &w->memh)) != UCS_OK) {
        die("ucp_mem_map", status);
    }
    if ((status = ucp_rkey_pack(w->context, w->memh, &w->rkey_buffer, &w->rkey_length)) != UCS_OK) {
        die("ucp_rkey_pack", status);
    }
}

static void close_ep(ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = UCP_EP_CLOSE_FLAG_FORCE,
    };
    void *req = ucp_ep_close_nbx(ep, &param);
    if ((req != NULL) && !UCS_PTR_IS_ERR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(req);
    }
}

/* ---- the inputs: a deterministic list, the same for every library ---- */

static const uint8_t flip_values[] = {0x00, 0xff, 0x01, 0x80, 0x7f, 0x10};
#define NUM_FLIPS (sizeof(flip_values) / sizeof(flip_values[0]))

static uint64_t rng_next(uint64_t *state)
{
    /* splitmix64: reproducible across libraries and runs */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Inputs per kind for an original of `length` bytes. */
static uint32_t num_inputs(size_t length, uint32_t random_count, int kind)
{
    uint32_t n = (uint32_t)(length * NUM_FLIPS) + random_count;
    if (kind == KIND_ADDRESS) {
        n += (uint32_t)length; /* truncations */
    }
    return n;
}

/* Builds input `index` from `orig` into `out` (same length). */
static void make_input(const uint8_t *orig, size_t length, uint32_t index, int kind, uint8_t *out)
{
    memcpy(out, orig, length);
    if (index < length * NUM_FLIPS) {
        out[index / NUM_FLIPS] = flip_values[index % NUM_FLIPS];
        if (out[index / NUM_FLIPS] == orig[index / NUM_FLIPS]) {
            out[index / NUM_FLIPS] ^= 0x5a; /* always a change */
        }
        return;
    }
    index -= (uint32_t)(length * NUM_FLIPS);
    if ((kind == KIND_ADDRESS) && (index < length)) {
        memset(out + index, 0, length - index); /* only the first bytes survive */
        return;
    }
    uint64_t state         = 0x1234567ull + index * 7919ull + (uint64_t)kind;
    const unsigned changes = 1 + (unsigned)(rng_next(&state) % 8);
    for (unsigned i = 0; i < changes; ++i) {
        const size_t at  = (size_t)(rng_next(&state) % length);
        const size_t run = 1 + (size_t)(rng_next(&state) % 4);
        for (size_t j = at; (j < at + run) && (j < length); ++j) {
            out[j] = (uint8_t)rng_next(&state);
        }
    }
}

/* ---- the child ---- */

static int try_input(struct world *w, int kind, const uint8_t *input)
{
    if (kind == KIND_RKEY) {
        ucp_rkey_h rkey = NULL;
        if (ucp_ep_rkey_unpack(w->ep, input, &rkey) != UCS_OK) {
            return REFUSED;
        }
        ucp_rkey_destroy(rkey);
        return ACCEPTED;
    }
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address    = (const ucp_address_t *)input,
    };
    ucp_ep_h ep = NULL;
    if (ucp_ep_create(w->worker, &params, &ep) != UCS_OK) {
        return REFUSED;
    }
    close_ep(w->worker, ep);
    return ACCEPTED;
}

static int child_main(int fd, int kind, uint32_t first, uint32_t random_count)
{
    struct world w;
    world_init(&w);
    const uint8_t *orig  = (kind == KIND_RKEY) ? (const uint8_t *)w.rkey_buffer :
                                                 (const uint8_t *)w.address;
    const size_t length  = (kind == KIND_RKEY) ? w.rkey_length : w.address_length;
    const uint32_t total = num_inputs(length, random_count, kind);
    /* Zeroed room after the input: ucp_ep_create and ucp_ep_rkey_unpack
     * take no length, an address or key announces its own (ours: up to
     * 64 KiB), so a corrupted one makes any library read that far; the
     * caller owning those bytes is the API's contract, not the check. */
    uint8_t *input = calloc(1, length + 65536);
    for (uint32_t i = first; i < total; ++i) {
        struct report rep = {i, 0xff}; /* "about to try" */
        if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep)) {
            return 3;
        }
        make_input(orig, length, i, kind, input);
        rep.outcome = (uint8_t)try_input(&w, kind, input);
        if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep)) {
            return 3;
        }
    }
    struct report done = {total, 0xfe};
    return (write(fd, &done, sizeof(done)) == (ssize_t)sizeof(done)) ? 0 : 3;
}

/* ---- the parent ---- */

static void run_kind(int kind, uint32_t random_count, double timeout_s,
                     unsigned long counts[NUM_OUTCOMES])
{
    uint32_t next = 0;
    for (;;) {
        int fds[2];
        if (pipe(fds) != 0) {
            perror("pipe");
            exit(2);
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            /* The library logs every refusal: keep the table readable. */
            if (!getenv("PROBE_VERBOSE")) {
                int null_fd = open("/dev/null", O_WRONLY);
                dup2(null_fd, STDOUT_FILENO);
                dup2(null_fd, STDERR_FILENO);
            }
            _exit(child_main(fds[1], kind, next, random_count));
        }
        close(fds[1]);
        uint32_t trying = next;
        int finished = 0, stalled = 0;
        for (;;) {
            struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
            int ready         = poll(&pfd, 1, (int)(timeout_s * 1000));
            if (ready == 0) {
                stalled = 1;
                break;
            }
            struct report rep;
            ssize_t n = read(fds[0], &rep, sizeof(rep));
            if (n != (ssize_t)sizeof(rep)) {
                break; /* the child died */
            }
            if (rep.outcome == 0xfe) {
                finished = 1;
                break;
            }
            if (rep.outcome == 0xff) {
                trying = rep.index;
            } else if (rep.outcome < NUM_OUTCOMES) {
                ++counts[rep.outcome];
                trying = rep.index + 1;
            }
        }
        if (stalled) {
            kill(pid, SIGKILL);
        }
        int wstatus = 0;
        waitpid(pid, &wstatus, 0);
        close(fds[0]);
        if (finished) {
            return;
        }
        if (stalled) {
            ++counts[HUNG];
        } else if (WIFSIGNALED(wstatus)) {
            ++counts[CRASHED];
        } else if (trying == next) {
            /* Exited before trying anything: the set-up failed. */
            fprintf(stderr, "ucp_bad_input_probe: the child exited with %d before input %u\n",
                    WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, trying);
            exit(2);
        } else {
            ++counts[CRASHED]; /* exit() from inside the library */
        }
        next = trying + 1;
    }
}

int main(int argc, char **argv)
{
    uint32_t random_count = 2000;
    double timeout_s      = 10;
    int check             = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--random") && (i + 1 < argc)) {
            random_count = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--timeout") && (i + 1 < argc)) {
            timeout_s = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--check")) {
            check = 1;
        } else {
            fprintf(stderr, "usage: %s [--random N] [--timeout S] [--check]\n", argv[0]);
            return 2;
        }
    }

    unsigned long failures = 0;
    printf("%-17s %8s %8s %8s %8s %8s\n", "input", "tried", "refused", "accepted", "crashed",
           "hung");
    for (int kind = 0; kind < NUM_KINDS; ++kind) {
        unsigned long counts[NUM_OUTCOMES] = {0};
        run_kind(kind, random_count, timeout_s, counts);
        const unsigned long tried = counts[REFUSED] + counts[ACCEPTED] + counts[CRASHED] +
                                    counts[HUNG];
        printf("%-17s %8lu %8lu %8lu %8lu %8lu\n", kind_names[kind], tried, counts[REFUSED],
               counts[ACCEPTED], counts[CRASHED], counts[HUNG]);
        failures += counts[CRASHED] + counts[HUNG];
    }
    fflush(stdout);
    return (check && (failures != 0)) ? 1 : 0;
}
