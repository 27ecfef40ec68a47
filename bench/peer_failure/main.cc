/*
 * ucp_peer_failure: how long a UCP process takes to notice that its peer
 * was killed.
 *
 * Each run forks a victim that connects to this process (the survivor) by
 * worker address or through a listener (-c), exchanges a greeting, then
 * sends or receives a stream of tagged messages (-w eager|rndv|idle, -k
 * says which side is killed). The survivor keeps one synchronous send
 * outstanding that the victim never receives, joins the stream, and after
 * a random 0-250 ms of it SIGKILLs the victim with a message in flight (a
 * thread reaps it, as a launcher would).
 * It then progresses until the ep's error callback runs and its requests
 * complete, and reports, from just before kill():
 *   - callback:  the error callback (PEER mode only);
 *   - sync send: the outstanding synchronous send completing (with an error);
 *   - close:     ucp_ep_close_nbx (force), ucp_worker_destroy, ucp_cleanup.
 * Anything that does not happen within the timeout is reported as such.
 *
 * Public UCP API only: it runs on UCX 1.13 too
 * (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu).
 */
#include "../common/oob.h"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using clock_type = std::chrono::steady_clock;

enum class workload { idle, eager, rndv };

struct options {
    const char *tls              = nullptr; /* nullptr: UCX_TLS as set */
    ucp_err_handling_mode_t mode = UCP_ERR_HANDLING_MODE_PEER;
    workload work                = workload::eager;
    bool kill_sender             = true; /* the victim sends the stream */
    bool client_server           = false;
    bool flush_close             = false;
    unsigned runs                = 5;
    double timeout_sec           = 60;
    bool csv                     = false;
};

constexpr ucp_tag_t TAG_HELLO = 1, TAG_DATA = 2, TAG_SYNC = 3;
constexpr size_t EAGER_SIZE = 1024;
constexpr size_t RNDV_SIZE  = size_t(64) << 20;
/* Messages of the stream completed before the survivor kills the victim. */
constexpr unsigned WARMUP_EAGER = 200, WARMUP_RNDV = 2;
/* Then the stream goes on for a random time up to this long. */
constexpr int MAX_JITTER_US = 250000;

void usage(FILE *out)
{
    std::fprintf(
        out,
        "Usage: ucp_peer_failure [-t TLS] [-m peer|none] [-w eager|rndv|idle]\n"
        "                        [-k sender|receiver] [-c] [-f] [-n RUNS] [-T SEC] [--csv]\n"
        "  Kills a forked peer in the middle of a tag stream and times how long\n"
        "  this side takes to notice (error callback, outstanding requests) and\n"
        "  to close.\n"
        "  -t TLS    UCX_TLS for both sides (default: the environment's)\n"
        "  -m MODE   error handling mode of the eps (default peer)\n"
        "  -w WORK   the stream: eager (%zu B), rndv (%zu MiB) or idle (default eager)\n"
        "  -k SIDE   the side of the stream that is killed (default sender)\n"
        "  -c        connect through a listener on 127.0.0.1 instead of by address\n"
        "  -f        close the failed ep with a flush instead of force\n"
        "  -n RUNS   runs (default 5)\n"
        "  -T SEC    how long to wait for each event (default 60)\n"
        "  --csv     one line per run\n",
        EAGER_SIZE, RNDV_SIZE >> 20);
}

/* 0: parsed; -1: help; otherwise the exit code. */
int parse(int argc, char **argv, options *opts)
{
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if ((arg == "-h") || (arg == "--help")) {
            usage(stdout);
            return -1;
        }
        if (arg == "--csv" || arg == "-c" || arg == "-f") {
            (arg == "--csv" ? opts->csv :
             arg == "-c"    ? opts->client_server :
                              opts->flush_close) = true;
            continue;
        }
        if (i + 1 == argc) {
            std::fprintf(stderr, "ucp_peer_failure: bad option '%s'\n", arg.c_str());
            usage(stderr);
            return 2;
        }
        const std::string value = argv[++i];
        bool ok                 = true;
        if (arg == "-t") {
            opts->tls = argv[i];
        } else if (arg == "-m") {
            ok         = (value == "peer") || (value == "none");
            opts->mode = (value == "peer") ? UCP_ERR_HANDLING_MODE_PEER :
                                             UCP_ERR_HANDLING_MODE_NONE;
        } else if (arg == "-w") {
            ok         = (value == "eager") || (value == "rndv") || (value == "idle");
            opts->work = (value == "rndv") ? workload::rndv :
                         (value == "idle") ? workload::idle :
                                             workload::eager;
        } else if (arg == "-k") {
            ok                = (value == "sender") || (value == "receiver");
            opts->kill_sender = (value == "sender");
        } else if (arg == "-n") {
            opts->runs = unsigned(std::atoi(value.c_str()));
            ok         = (opts->runs > 0) && (opts->runs <= 1000);
        } else if (arg == "-T") {
            opts->timeout_sec = std::atof(value.c_str());
            ok                = opts->timeout_sec > 0;
        } else {
            ok = false;
        }
        if (!ok) {
            std::fprintf(stderr, "ucp_peer_failure: bad '%s %s'\n", arg.c_str(), value.c_str());
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

std::string library_path()
{
    Dl_info info{};
    if ((dladdr(reinterpret_cast<void *>(&ucp_worker_progress), &info) != 0) &&
        (info.dli_fname != nullptr)) {
        return info.dli_fname;
    }
    return "?";
}

double ms_since(clock_type::time_point t0, clock_type::time_point t)
{
    return std::chrono::duration<double, std::milli>(t - t0).count();
}

/* What the error callback saw. */
struct failure {
    std::atomic<bool> fired{false};
    clock_type::time_point when;
    ucs_status_t status = UCS_OK;
};

void on_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    auto *f   = static_cast<failure *>(arg);
    f->when   = clock_type::now();
    f->status = status;
    f->fired  = true;
}

/* One side: context, worker, endpoint (and a listener on the server). */
struct side {
    ucp_context_h context           = nullptr;
    ucp_worker_h worker             = nullptr;
    ucp_listener_h listener         = nullptr;
    ucp_conn_request_h conn_request = nullptr;
    ucp_ep_h ep                     = nullptr;
    failure failed;

    ~side()
    {
        if (listener != nullptr) {
            ucp_listener_destroy(listener);
        }
        if (worker != nullptr) {
            ucp_worker_destroy(worker);
        }
        if (context != nullptr) {
            ucp_cleanup(context);
        }
    }

    ucs_status_t init(const options &opts)
    {
        ucp_config_t *config;
        ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
        if (status != UCS_OK) {
            return status;
        }
        if (opts.tls != nullptr) {
            status = ucp_config_modify(config, "TLS", opts.tls);
        }
        if (status == UCS_OK) {
            ucp_params_t params{};
            params.field_mask = UCP_PARAM_FIELD_FEATURES;
            params.features   = UCP_FEATURE_TAG;
            status            = ucp_init(&params, config, &context);
        }
        ucp_config_release(config);
        if (status != UCS_OK) {
            return status;
        }
        ucp_worker_params_t wparams{};
        wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        return ucp_worker_create(context, &wparams, &worker);
    }

    void ep_params(const options &opts, ucp_ep_params_t *params)
    {
        params->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        params->err_mode = opts.mode;
        if (opts.mode == UCP_ERR_HANDLING_MODE_PEER) {
            params->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
            params->err_handler.cb  = on_error;
            params->err_handler.arg = &failed;
        }
    }

    std::vector<uint8_t> address()
    {
        ucp_address_t *addr;
        size_t length;
        if (ucp_worker_get_address(worker, &addr, &length) != UCS_OK) {
            return {};
        }
        std::vector<uint8_t> blob(reinterpret_cast<uint8_t *>(addr),
                                  reinterpret_cast<uint8_t *>(addr) + length);
        ucp_worker_release_address(worker, addr);
        return blob;
    }

    ucs_status_t connect_address(const options &opts, const std::vector<uint8_t> &remote)
    {
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t *>(remote.data());
        ep_params(opts, &params);
        return ucp_ep_create(worker, &params, &ep);
    }

    static void on_conn_request(ucp_conn_request_h request, void *arg)
    {
        static_cast<side *>(arg)->conn_request = request;
    }

    /* Server: a listener on 127.0.0.1, port chosen by the system. */
    ucs_status_t listen(uint16_t *port)
    {
        sockaddr_in addr{};
        addr.sin_family      = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ucp_listener_params_t params{};
        params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                            UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
        params.sockaddr.addrlen = sizeof(addr);
        params.conn_handler.cb  = on_conn_request;
        params.conn_handler.arg = this;
        ucs_status_t status     = ucp_listener_create(worker, &params, &listener);
        if (status != UCS_OK) {
            return status;
        }
        ucp_listener_attr_t attr{};
        attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
        status          = ucp_listener_query(listener, &attr);
        if (status == UCS_OK) {
            *port = ntohs(reinterpret_cast<const sockaddr_in *>(&attr.sockaddr)->sin_port);
        }
        return status;
    }

    ucs_status_t accept(const options &opts, clock_type::time_point deadline)
    {
        while ((conn_request == nullptr) && (clock_type::now() < deadline)) {
            ucp_worker_progress(worker);
        }
        if (conn_request == nullptr) {
            return UCS_ERR_TIMED_OUT;
        }
        ucp_ep_params_t params{};
        params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
        params.conn_request = conn_request;
        ep_params(opts, &params);
        return ucp_ep_create(worker, &params, &ep);
    }

    ucs_status_t connect_server(const options &opts, uint16_t port)
    {
        sockaddr_in addr{};
        addr.sin_family      = AF_INET;
        addr.sin_port        = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ucp_ep_params_t params{};
        params.field_mask       = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
        params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
        params.sockaddr.addrlen = sizeof(addr);
        ep_params(opts, &params);
        return ucp_ep_create(worker, &params, &ep);
    }

    /* Progresses until `request` is done or the deadline passes. */
    ucs_status_t wait(ucs_status_ptr_t request, clock_type::time_point deadline)
    {
        if (request == nullptr) {
            return UCS_OK;
        }
        if (UCS_PTR_IS_ERR(request)) {
            return UCS_PTR_STATUS(request);
        }
        ucs_status_t status;
        while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
            if (clock_type::now() > deadline) {
                ucp_request_cancel(worker, request);
                return UCS_ERR_TIMED_OUT;
            }
            ucp_worker_progress(worker);
        }
        ucp_request_free(request);
        return status;
    }

    ucs_status_ptr_t send(const void *buffer, size_t length, ucp_tag_t tag, bool sync)
    {
        ucp_request_param_t param{};
        return sync ? ucp_tag_send_sync_nbx(ep, buffer, length, tag, &param) :
                      ucp_tag_send_nbx(ep, buffer, length, tag, &param);
    }

    ucs_status_ptr_t recv(void *buffer, size_t length, ucp_tag_t tag)
    {
        ucp_request_param_t param{};
        return ucp_tag_recv_nbx(worker, buffer, length, tag, ~ucp_tag_t(0), &param);
    }
};

clock_type::duration patience(const options &opts)
{
    return std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(opts.timeout_sec));
}

size_t stream_size(const options &opts)
{
    return (opts.work == workload::rndv) ? RNDV_SIZE : EAGER_SIZE;
}

/* Connects `s` to the other side; both sides call it. */
bool connect(side &s, const options &opts, perf::oob &channel, bool survivor,
             clock_type::time_point deadline)
{
    if (opts.client_server) {
        uint16_t port = 0;
        if (survivor) {
            return (s.listen(&port) == UCS_OK) && channel.send(&port, sizeof(port)) &&
                   (s.accept(opts, deadline) == UCS_OK);
        }
        return channel.recv(&port, sizeof(port)) && (s.connect_server(opts, port) == UCS_OK);
    }
    std::vector<uint8_t> remote;
    return channel.exchange(s.address(), &remote) && (s.connect_address(opts, remote) == UCS_OK);
}

/* Both directions carry a message: every lane the stream needs is up. */
bool greet(side &s, clock_type::time_point deadline)
{
    uint64_t mine = 1, theirs = 0;
    ucs_status_ptr_t rreq = s.recv(&theirs, sizeof(theirs), TAG_HELLO);
    ucs_status_ptr_t sreq = s.send(&mine, sizeof(mine), TAG_HELLO, false);
    return (s.wait(sreq, deadline) == UCS_OK) && (s.wait(rreq, deadline) == UCS_OK) &&
           (theirs == 1);
}

/* The victim: its part of the stream until it is killed. */
int victim(const options &opts, perf::oob &channel)
{
    const auto deadline = clock_type::now() + 4 * patience(opts);
    side s;
    if ((s.init(opts) != UCS_OK) || !connect(s, opts, channel, false, deadline) ||
        !greet(s, deadline) || !channel.barrier()) {
        std::fprintf(stderr, "victim: setup failed\n");
        return 1;
    }
    std::vector<uint8_t> buffer(stream_size(opts), 0x5a);
    while (clock_type::now() < deadline) {
        if (opts.work == workload::idle) {
            ucp_worker_progress(s.worker);
        } else if (opts.kill_sender) {
            s.wait(s.send(buffer.data(), buffer.size(), TAG_DATA, false), deadline);
        } else {
            s.wait(s.recv(buffer.data(), buffer.size(), TAG_DATA), deadline);
        }
    }
    return 1; /* never reached: killed */
}

struct run_result {
    bool setup_ok                = false;
    double callback_ms           = -1; /* -1: did not happen */
    ucs_status_t callback_status = UCS_OK;
    double sync_ms               = -1;
    ucs_status_t sync_status     = UCS_INPROGRESS;
    ucs_status_t stream_status   = UCS_INPROGRESS;
    double close_ms              = -1;
    ucs_status_t close_status    = UCS_INPROGRESS;
    double teardown_ms           = -1;
};

/* Progresses until `request` is done; its status and when, or INPROGRESS. */
void poll_request(ucs_status_ptr_t *request, ucs_status_t *status, clock_type::time_point *when)
{
    if (*request == nullptr) {
        return;
    }
    if (UCS_PTR_IS_ERR(*request)) {
        *status  = UCS_PTR_STATUS(*request);
        *when    = clock_type::now();
        *request = nullptr;
        return;
    }
    ucs_status_t st = ucp_request_check_status(*request);
    if (st != UCS_INPROGRESS) {
        *status = st;
        *when   = clock_type::now();
        ucp_request_free(*request);
        *request = nullptr;
    }
}

run_result survivor_run(const options &opts)
{
    run_result r;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        return r;
    }
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        ::close(fds[0]);
        perf::fd_oob channel(fds[1], false);
        _exit(victim(opts, channel));
    }
    ::close(fds[1]);
    perf::fd_oob channel(fds[0], true);
    const auto patience = ::patience(opts);
    auto deadline       = clock_type::now() + patience;

    auto *s = new side;
    if ((s->init(opts) != UCS_OK) || !connect(*s, opts, channel, true, deadline) ||
        !greet(*s, deadline) || !channel.barrier()) {
        std::fprintf(stderr, "survivor: setup failed\n");
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        delete s;
        return r;
    }
    r.setup_ok = true;

    /* A synchronous send the victim never receives: it waits for the
     * victim's acknowledgement, which can only fail now. */
    uint64_t sync_payload     = 7;
    ucs_status_ptr_t sync_req = s->send(&sync_payload, sizeof(sync_payload), TAG_SYNC, true);

    /* The stream: some messages complete, it goes on for a random time (so
     * the kill falls anywhere in the library's own periods), then the kill
     * hits a message in flight. */
    std::vector<uint8_t> buffer(stream_size(opts), 0x3c);
    const bool receiving  = opts.kill_sender;
    const unsigned warmup = (opts.work == workload::rndv) ? WARMUP_RNDV : WARMUP_EAGER;
    std::mt19937_64 rng(std::random_device{}());
    const auto kill_at =
        clock_type::now() +
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, MAX_JITTER_US)(rng));
    ucs_status_ptr_t stream_req = nullptr;
    for (unsigned i = 0; (opts.work != workload::idle); ++i) {
        stream_req = receiving ? s->recv(buffer.data(), buffer.size(), TAG_DATA) :
                                 s->send(buffer.data(), buffer.size(), TAG_DATA, false);
        if ((i >= warmup) && (clock_type::now() >= kill_at)) {
            break;
        }
        s->wait(stream_req, deadline);
        stream_req = nullptr;
    }
    while ((opts.work == workload::idle) && (clock_type::now() < kill_at)) {
        ucp_worker_progress(s->worker);
    }

    if ((stream_req == nullptr) && (opts.work != workload::idle)) {
        r.stream_status = UCS_OK; /* done at once, before the kill */
    }
    const auto t0 = clock_type::now();
    kill(pid, SIGKILL);
    std::thread reaper([pid] { waitpid(pid, nullptr, 0); });

    deadline = t0 + patience;
    clock_type::time_point sync_when{}, stream_when{};
    bool waiting_callback = (opts.mode == UCP_ERR_HANDLING_MODE_PEER);
    while (clock_type::now() < deadline) {
        ucp_worker_progress(s->worker);
        poll_request(&sync_req, &r.sync_status, &sync_when);
        poll_request(&stream_req, &r.stream_status, &stream_when);
        if (waiting_callback && s->failed.fired) {
            waiting_callback  = false;
            r.callback_ms     = ms_since(t0, s->failed.when);
            r.callback_status = s->failed.status;
        }
        const bool failure_known = (opts.mode == UCP_ERR_HANDLING_MODE_PEER) ?
                                       !waiting_callback :
                                       (sync_req == nullptr);
        if (failure_known && (sync_req == nullptr) && receiving && (stream_req != nullptr)) {
            /* A posted receive belongs to no ep: nothing fails it. */
            ucp_request_cancel(s->worker, stream_req);
        }
        if (!waiting_callback && (sync_req == nullptr) && (stream_req == nullptr)) {
            break;
        }
    }
    if (sync_req == nullptr) {
        r.sync_ms = ms_since(t0, sync_when);
    }
    reaper.join();

    /* Close and tear down; a hang here is caught by the alarm in main(). */
    const auto c0 = clock_type::now();
    for (ucs_status_ptr_t *req : {&sync_req, &stream_req}) {
        if (*req != nullptr) {
            ucp_request_cancel(s->worker, *req);
        }
    }
    ucp_request_param_t cparam{};
    cparam.op_attr_mask        = UCP_OP_ATTR_FIELD_FLAGS;
    cparam.flags               = opts.flush_close ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t close_req = ucp_ep_close_nbx(s->ep, &cparam);
    r.close_status             = s->wait(close_req, clock_type::now() + patience);
    r.close_ms                 = ms_since(c0, clock_type::now());
    for (ucs_status_ptr_t *req : {&sync_req, &stream_req}) {
        if (*req != nullptr) {
            s->wait(*req, clock_type::now() + patience);
        }
    }
    const auto d0 = clock_type::now();
    delete s;
    r.teardown_ms = ms_since(d0, clock_type::now());
    return r;
}

void on_alarm(int)
{
    static const char msg[] = "ucp_peer_failure: a run hung (4 x the timeout)\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(3);
}

std::string ms_text(double ms)
{
    if (ms < 0) {
        return "none";
    }
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", ms);
    return text;
}

double median(std::vector<double> v)
{
    if (v.empty()) {
        return -1;
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    options opts;
    int rc = parse(argc, argv, &opts);
    if (rc != 0) {
        return (rc < 0) ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);

    const char *work = (opts.work == workload::rndv) ? "rndv" :
                       (opts.work == workload::idle) ? "idle" :
                                                       "eager";
    const char *tls  = (opts.tls != nullptr)               ? opts.tls :
                       (std::getenv("UCX_TLS") != nullptr) ? std::getenv("UCX_TLS") :
                                                             "(default)";
    if (opts.csv) {
        std::printf("run,callback_ms,sync_send_ms,sync_status,stream_status,close_ms,"
                    "teardown_ms\n");
    } else {
        std::printf("# ucp_peer_failure: %s, TLS=%s, mode=%s, %s stream, %s killed, "
                    "%s, %s close\n",
                    library_path().c_str(), tls,
                    (opts.mode == UCP_ERR_HANDLING_MODE_PEER) ? "peer" : "none", work,
                    opts.kill_sender ? "sender" : "receiver",
                    opts.client_server ? "client-server" : "by address",
                    opts.flush_close ? "flush" : "force");
        std::printf("%4s %12s %14s %24s %24s %10s %12s\n", "run", "callback_ms", "sync_send_ms",
                    "sync_status", "stream_status", "close_ms", "teardown_ms");
    }
    std::vector<double> callbacks, syncs;
    unsigned failures = 0;
    for (unsigned run = 0; run < opts.runs; ++run) {
        alarm(unsigned(opts.timeout_sec * 4) + 10);
        run_result r = survivor_run(opts);
        alarm(0);
        if (!r.setup_ok) {
            ++failures;
            continue;
        }
        if (r.callback_ms >= 0) {
            callbacks.push_back(r.callback_ms);
        }
        if (r.sync_ms >= 0) {
            syncs.push_back(r.sync_ms);
        }
        const char *fmt = opts.csv ? "%u,%s,%s,%s,%s,%s,%s\n" :
                                     "%4u %12s %14s %24s %24s %10s %12s\n";
        std::printf(fmt, run, ms_text(r.callback_ms).c_str(), ms_text(r.sync_ms).c_str(),
                    ucs_status_string(r.sync_status), ucs_status_string(r.stream_status),
                    ms_text(r.close_ms).c_str(), ms_text(r.teardown_ms).c_str());
        std::fflush(stdout);
    }
    if (!opts.csv) {
        std::printf("# median: callback %s ms (%zu of %u runs), sync send %s ms "
                    "(%zu of %u runs)\n",
                    ms_text(median(callbacks)).c_str(), callbacks.size(), opts.runs,
                    ms_text(median(syncs)).c_str(), syncs.size(), opts.runs);
    }
    return (failures != 0) ? 1 : 0;
}
