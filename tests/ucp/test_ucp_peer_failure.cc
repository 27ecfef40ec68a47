/*
 * The fault matrix: a peer SIGKILLed in the middle of tag traffic, over
 * shared memory and over tcp, in PEER and NONE error modes.
 *
 * The survivor keeps a synchronous send outstanding that the victim never
 * receives (it can only fail once the victim is gone), takes part in an
 * eager or 64 MiB rendezvous stream, and kills the victim with a message
 * of the stream in flight. Then: in PEER mode the ep's error callback runs
 * once, within a bound from the kill; every outstanding request completes
 * (the sync send with an error, the stream's either with an error or with
 * its data intact); closing the ep (force or flush), destroying the worker
 * and the context return, in bounded time. In NONE mode nothing hangs
 * either, and the failure is logged.
 *
 * The victim is not reaped before the survivor has seen the failure: a
 * zombie must count as dead. Each case prints its detection time.
 */
#include "scoped_env.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>

#include <cerrno>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

using namespace ucp_test;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr ucp_tag_t TAG_HELLO = 1, TAG_DATA = 2, TAG_SYNC = 3;
constexpr size_t EAGER_SIZE = 4096;
constexpr size_t RNDV_SIZE  = size_t(64) << 20;
/* Stream messages that complete before the kill. */
constexpr unsigned WARMUP_EAGER = 50, WARMUP_RNDV = 2;
/* What the goal is (1 s), with slack for a loaded CI machine. */
constexpr auto DETECTION_BOUND = 2s;
constexpr auto CLOSE_BOUND     = 5s;

struct fault_case {
    const char *tls;
    bool rndv;
    bool victim_sends; /* else the victim receives */
    ucp_err_handling_mode_t mode;
    bool flush_close;           /* else force */
    bool client_server = false; /* survivor listens */
};

struct error_seen {
    int calls           = 0;
    ucs_status_t status = UCS_OK;
    clock_type::time_point when;
};

void on_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    auto *e = static_cast<error_seen *>(arg);
    if (e->calls++ == 0) {
        e->when   = clock_type::now();
        e->status = status;
    }
}

/* Message `seq` of the stream is `size` bytes of value seq. */
void fill(std::vector<uint8_t> &buffer, unsigned seq)
{
    std::memset(buffer.data(), int(seq & 0xff), buffer.size());
}

bool intact(const std::vector<uint8_t> &buffer, unsigned seq)
{
    const uint8_t value = uint8_t(seq);
    return std::all_of(buffer.begin(), buffer.end(), [value](uint8_t b) { return b == value; });
}

ucs_status_ptr_t send_data(peer &p, std::vector<uint8_t> &buffer, ucp_tag_t tag, bool sync = false)
{
    ucp_request_param_t param{};
    return sync ? ucp_tag_send_sync_nbx(p.ep, buffer.data(), buffer.size(), tag, &param) :
                  ucp_tag_send_nbx(p.ep, buffer.data(), buffer.size(), tag, &param);
}

ucs_status_ptr_t recv_data(peer &p, std::vector<uint8_t> &buffer, ucp_tag_t tag)
{
    ucp_request_param_t param{};
    return ucp_tag_recv_nbx(p.worker, buffer.data(), buffer.size(), tag, ~ucp_tag_t(0), &param);
}

/* One message each way: every lane the stream uses is wired up. */
bool greet(peer &p)
{
    std::vector<uint8_t> mine(8, 1), theirs(8, 0);
    ucs_status_ptr_t rreq = recv_data(p, theirs, TAG_HELLO);
    return (p.wait(send_data(p, mine, TAG_HELLO)) == UCS_OK) && (p.wait(rreq) == UCS_OK) &&
           (theirs == mine);
}

/* The victim: its side of the stream until it is killed. */
int victim(int fd, const fault_case &fc)
{
    peer v;
    TEST_CHILD_CHECK(v.init(fc.tls) == UCS_OK);
    if (fc.client_server) {
        uint16_t port = 0;
        TEST_CHILD_CHECK(test::recv_value(fd, &port));
        TEST_CHILD_CHECK(connect_client(v.worker, port, nullptr, &v.ep) == UCS_OK);
    } else {
        std::vector<uint8_t> remote;
        TEST_CHILD_CHECK(test::send_blob(fd, v.address()));
        TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
        TEST_CHILD_CHECK(v.connect(remote, fc.mode) == UCS_OK);
    }
    TEST_CHILD_CHECK(greet(v));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    std::vector<uint8_t> buffer(fc.rndv ? RNDV_SIZE : EAGER_SIZE);
    for (unsigned seq = 0;; ++seq) {
        if (fc.victim_sends) {
            fill(buffer, seq);
            TEST_CHILD_CHECK(v.wait(send_data(v, buffer, TAG_DATA)) == UCS_OK);
        } else {
            TEST_CHILD_CHECK(v.wait(recv_data(v, buffer, TAG_DATA)) == UCS_OK);
        }
    }
}

/* Progresses until `req` is done; its status (INPROGRESS past the bound). */
ucs_status_t wait_bounded(peer &p, ucs_status_ptr_t req, std::chrono::milliseconds bound)
{
    if (!UCS_PTR_IS_PTR(req) || (req == nullptr)) {
        return UCS_PTR_STATUS(req);
    }
    test::poll_until([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
                     [&] { ucp_worker_progress(p.worker); }, bound);
    const ucs_status_t status = ucp_request_check_status(req);
    if (status != UCS_INPROGRESS) {
        ucp_request_free(req);
    }
    return status;
}

void run_fault_case(const fault_case &fc)
{
    env_guard env;
    /* Eager: messages in one piece or a few fragments, never rendezvous. */
    env.set("UCX_RNDV_THRESH", fc.rndv ? "64k" : "inf");
    const bool peer_mode = (fc.mode == UCP_ERR_HANDLING_MODE_PEER);
    log_capture capture; /* NONE mode logs the failure as an error */

    peer p;
    REQUIRE(p.init(fc.tls) == UCS_OK);
    test::child_process child([&fc](int fd) { return victim(fd, fc); });
    error_seen errors;
    std::optional<listening> server;
    if (fc.client_server) {
        REQUIRE(peer_mode);
        server.emplace();
        REQUIRE(server->listen(p.worker) == UCS_OK);
        REQUIRE(test::send_value(child.fd(), server->port()));
        REQUIRE(test::poll_until([&] { return !server->requests.empty(); },
                                 [&] { ucp_worker_progress(p.worker); }));
        REQUIRE(accept_request(p.worker, server->requests[0], nullptr, &p.ep, on_error, &errors) ==
                UCS_OK);
    } else {
        std::vector<uint8_t> remote;
        REQUIRE(test::recv_blob(child.fd(), &remote));
        REQUIRE(test::send_blob(child.fd(), p.address()));
        REQUIRE(p.connect(remote, fc.mode, peer_mode ? on_error : nullptr, &errors) == UCS_OK);
    }
    REQUIRE(greet(p));
    REQUIRE(test::sync_peer(child.fd()));

    /* Outstanding until the victim acknowledges it, which it never does. */
    std::vector<uint8_t> sync_payload(64, 9);
    ucs_status_ptr_t sync_req = send_data(p, sync_payload, TAG_SYNC, true);
    REQUIRE(UCS_PTR_IS_PTR(sync_req));
    REQUIRE(sync_req != nullptr);

    /* The stream: some messages complete, the next is in flight. */
    std::vector<uint8_t> buffer(fc.rndv ? RNDV_SIZE : EAGER_SIZE);
    const unsigned warmup       = fc.rndv ? WARMUP_RNDV : WARMUP_EAGER;
    ucs_status_ptr_t stream_req = nullptr;
    for (unsigned seq = 0; seq <= warmup; ++seq) {
        if (fc.victim_sends) {
            stream_req = recv_data(p, buffer, TAG_DATA);
        } else {
            fill(buffer, seq);
            stream_req = send_data(p, buffer, TAG_DATA);
        }
        REQUIRE(!UCS_PTR_IS_ERR(stream_req));
        if (seq < warmup) {
            REQUIRE(wait_bounded(p, stream_req, 30s) == UCS_OK);
            if (fc.victim_sends) {
                REQUIRE(intact(buffer, seq));
            }
        }
    }

    const auto t0 = clock_type::now();
    child.kill(SIGKILL);

    /* The failure is noticed; the sync send fails; the stream's request
     * completes one way or the other (a posted receive that matched
     * nothing belongs to no ep: it is canceled once the failure is known). */
    ucs_status_t sync_status = UCS_INPROGRESS, stream_status = UCS_INPROGRESS;
    clock_type::time_point sync_when{};
    const bool stream_done_early = (stream_req == nullptr);
    if (stream_done_early) {
        stream_status = UCS_OK;
    }
    bool canceled = false;
    test::poll_until(
        [&] {
        return (!peer_mode || (errors.calls > 0)) && (sync_status != UCS_INPROGRESS) &&
               (stream_status != UCS_INPROGRESS);
        },
        [&] {
        ucp_worker_progress(p.worker);
        if ((sync_status == UCS_INPROGRESS) &&
            ((sync_status = ucp_request_check_status(sync_req)) != UCS_INPROGRESS)) {
            sync_when = clock_type::now();
            ucp_request_free(sync_req);
        }
        if (stream_status == UCS_INPROGRESS) {
            stream_status = ucp_request_check_status(stream_req);
            if (stream_status != UCS_INPROGRESS) {
                ucp_request_free(stream_req);
            } else if (fc.victim_sends && !canceled && (sync_status != UCS_INPROGRESS)) {
                ucp_request_cancel(p.worker, stream_req);
                canceled = true;
            }
        }
    },
        10s);

    const double sync_ms = (sync_status != UCS_INPROGRESS) ?
                               std::chrono::duration<double, std::milli>(sync_when - t0).count() :
                               -1;
    const double callback_ms =
        (errors.calls > 0) ? std::chrono::duration<double, std::milli>(errors.when - t0).count() :
                             -1;
    std::printf("fault matrix: %-14s %-13s %-5s victim=%-8s mode=%-4s: callback %6.1f ms, "
                "sync send failed after %6.1f ms (%s), stream %s\n",
                fc.tls, fc.client_server ? "client-server" : "by address",
                fc.rndv ? "rndv" : "eager", fc.victim_sends ? "sender" : "receiver",
                peer_mode ? "peer" : "none", callback_ms, sync_ms, ucs_status_string(sync_status),
                ucs_status_string(stream_status));

    CHECK(sync_status != UCS_INPROGRESS);
    CHECK(sync_status != UCS_OK);
    CHECK(sync_ms < std::chrono::duration<double, std::milli>(DETECTION_BOUND).count());
    if (peer_mode) {
        CHECK(errors.calls == 1);
        CHECK(errors.status != UCS_OK);
        CHECK(callback_ms >= 0);
        CHECK(callback_ms < std::chrono::duration<double, std::milli>(DETECTION_BOUND).count());
        /* Sends on the failed ep fail at once. */
        ucs_status_ptr_t late = send_data(p, sync_payload, TAG_SYNC);
        CHECK(UCS_PTR_IS_ERR(late));
    } else {
        CHECK(capture.text().find("failed") != std::string::npos);
    }
    CHECK(stream_status != UCS_INPROGRESS);
    if ((stream_status == UCS_OK) && fc.victim_sends && !stream_done_early) {
        CHECK(intact(buffer, warmup)); /* completed: then completely */
    }

    /* Close, then tear down: all of it returns, in bounded time. */
    ucp_request_param_t cparam{};
    cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    cparam.flags        = fc.flush_close ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    const auto c0       = clock_type::now();
    const ucs_status_t close_status =
        wait_bounded(p, ucp_ep_close_nbx(p.ep, &cparam),
                     std::chrono::duration_cast<std::chrono::milliseconds>(CLOSE_BOUND));
    p.ep = nullptr;
    CHECK(close_status != UCS_INPROGRESS);
    if (!fc.flush_close) {
        CHECK(close_status == UCS_OK);
    }
    server.reset(); /* before its worker */
    p.close();
    CHECK(clock_type::now() - c0 < CLOSE_BOUND);
    CHECK(child.wait() == 128 + SIGKILL);
}

} // namespace

TEST_CASE("a peer killed during tag traffic: detected in time, requests fail, "
          "close and cleanup return",
          "[ucp_fault]")
{
    fault_case fc;
    fc.tls          = GENERATE("posix,cma,self", "tcp");
    fc.rndv         = GENERATE(false, true);
    fc.victim_sends = GENERATE(true, false);
    fc.mode         = GENERATE(UCP_ERR_HANDLING_MODE_PEER, UCP_ERR_HANDLING_MODE_NONE);
    fc.flush_close  = GENERATE(false, true);
    CAPTURE(fc.tls, fc.rndv, fc.victim_sends, fc.mode, fc.flush_close);
    run_fault_case(fc);
}

TEST_CASE("a client killed during tag traffic: the server's accepted ep fails in time",
          "[ucp_fault]")
{
    fault_case fc;
    fc.tls           = GENERATE("posix,cma,self", "tcp");
    fc.rndv          = GENERATE(false, true);
    fc.victim_sends  = GENERATE(true, false);
    fc.mode          = UCP_ERR_HANDLING_MODE_PEER;
    fc.flush_close   = fc.victim_sends;
    fc.client_server = true;
    CAPTURE(fc.tls, fc.rndv, fc.victim_sends);
    run_fault_case(fc);
}

/* A 64 MiB rendezvous pulled over two adapters (keys of both mds) when the
 * peer dies: both lanes' gets fail, the pull and the sync send complete with
 * an error, nothing is left behind. */
TEST_CASE("a peer killed during a rendezvous split over two verbs adapters", "[ucp_rc_verbs]")
{
    UCP_TEST_SKIP_WITHOUT_RC_VERBS();
    test::scoped_env devices("VERBS_EMU_DEVICES", "2");
    fault_case fc;
    fc.tls          = "rc_verbs,tcp";
    fc.rndv         = true;
    fc.victim_sends = GENERATE(true, false);
    fc.mode         = UCP_ERR_HANDLING_MODE_PEER;
    fc.flush_close  = false;
    CAPTURE(fc.victim_sends);
    run_fault_case(fc);
}

namespace {

constexpr size_t CUT_SHORT_SIZE = size_t(2) << 20; /* 256 fragments: 4 FIFOs full */

/* Connects, then starts a message the survivor does not consume and says
 * so: it is stuck with its first fragments in the survivor's FIFO. */
int cut_short_sender(int fd, const char *tls)
{
    peer v;
    TEST_CHILD_CHECK(v.init(tls) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, v.address()));
    TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
    TEST_CHILD_CHECK(v.connect(remote, UCP_ERR_HANDLING_MODE_PEER) == UCS_OK);
    TEST_CHILD_CHECK(greet(v));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    std::vector<uint8_t> message(CUT_SHORT_SIZE, 5);
    ucs_status_ptr_t req = send_data(v, message, TAG_DATA);
    TEST_CHILD_CHECK(UCS_PTR_IS_PTR(req) && (req != nullptr));
    for (int i = 0; i < 1000; ++i) {
        ucp_worker_progress(v.worker);
    }
    TEST_CHILD_CHECK(ucp_request_check_status(req) == UCS_INPROGRESS);
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    for (;;) {
        ucp_worker_progress(v.worker);
    }
}

/* Connects and sleeps on the test socket until killed. */
int idle_peer(int fd, const char *tls)
{
    peer v;
    TEST_CHILD_CHECK(v.init(tls) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, v.address()));
    TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
    TEST_CHILD_CHECK(v.connect(remote, UCP_ERR_HANDLING_MODE_PEER) == UCS_OK);
    TEST_CHILD_CHECK(greet(v));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    uint8_t never;
    test::recv_value(fd, &never);
    return 0;
}

} // namespace

TEST_CASE("a message cut short by its sender's death fails its receive, posted or not",
          "[ucp_fault]")
{
    const bool posted = GENERATE(true, false);
    CAPTURE(posted);
    env_guard env;
    env.set("UCX_RNDV_THRESH", "inf"); /* eager fragments through the FIFO */
    const char *tls = "posix,self";
    peer p;
    REQUIRE(p.init(tls) == UCS_OK);
    test::child_process child([tls](int fd) { return cut_short_sender(fd, tls); });
    std::vector<uint8_t> remote;
    REQUIRE(test::recv_blob(child.fd(), &remote));
    REQUIRE(test::send_blob(child.fd(), p.address()));
    error_seen errors;
    REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, on_error, &errors) == UCS_OK);
    REQUIRE(greet(p));
    REQUIRE(test::sync_peer(child.fd()));

    std::vector<uint8_t> buffer(CUT_SHORT_SIZE, 0);
    ucs_status_ptr_t req = posted ? recv_data(p, buffer, TAG_DATA) : nullptr;
    /* Not progressing meanwhile: the sender is stuck mid-message. */
    uint8_t started = 0;
    REQUIRE(test::recv_value(child.fd(), &started));
    child.kill(SIGKILL);

    REQUIRE(test::poll_until([&] { return errors.calls > 0; },
                             [&] { ucp_worker_progress(p.worker); }, 10s));
    if (!posted) {
        /* Its first fragments arrived unexpected; its receive comes late. */
        req = recv_data(p, buffer, TAG_DATA);
    }
    /* (A late receive may fail at once.) */
    const ucs_status_t status = wait_bounded(p, req, 10s);
    CHECK(status != UCS_INPROGRESS);
    CHECK(status != UCS_OK);
    CHECK(errors.calls == 1);
    CHECK(child.wait() == 128 + SIGKILL);
}

TEST_CASE("a worker asleep on its event fd wakes up when its peer is killed", "[ucp_fault]")
{
    const char *tls = GENERATE("posix,cma,self", "sysv,cma,self", "tcp");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init(tls, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP) == UCS_OK);
    test::child_process child([tls](int fd) { return idle_peer(fd, tls); });
    std::vector<uint8_t> remote;
    REQUIRE(test::recv_blob(child.fd(), &remote));
    REQUIRE(test::send_blob(child.fd(), p.address()));
    error_seen errors;
    REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, on_error, &errors) == UCS_OK);
    REQUIRE(greet(p));
    REQUIRE(test::sync_peer(child.fd()));

    int efd = -1;
    REQUIRE(ucp_worker_get_efd(p.worker, &efd) == UCS_OK);
    REQUIRE(test::poll_until([&] { return ucp_worker_arm(p.worker) == UCS_OK; },
                             [&] { ucp_worker_progress(p.worker); }, 10s));
    struct pollfd pfd = {efd, POLLIN, 0};
    CHECK(poll(&pfd, 1, 0) == 0); /* nothing to do while the peer lives */

    const auto t0 = clock_type::now();
    child.kill(SIGKILL);
    REQUIRE(poll(&pfd, 1, 10000) == 1);
    const auto woke = clock_type::now();
    /* The usual loop of a sleeping application: progress while there is
     * work, arm, sleep. Arming finds the dead peer (BUSY). */
    REQUIRE(test::poll_until([&] { return errors.calls > 0; },
                             [&] {
        if ((ucp_worker_progress(p.worker) == 0) && (ucp_worker_arm(p.worker) == UCS_OK)) {
            poll(&pfd, 1, 1000);
        }
    },
                             10s));
    const double woke_ms     = std::chrono::duration<double, std::milli>(woke - t0).count();
    const double callback_ms = std::chrono::duration<double, std::milli>(errors.when - t0).count();
    std::printf("fault matrix: %-14s asleep: woke after %.1f ms, callback %.1f ms\n", tls, woke_ms,
                callback_ms);
    CHECK(callback_ms < std::chrono::duration<double, std::milli>(DETECTION_BOUND).count());
    CHECK(errors.calls == 1);
    CHECK(child.wait() == 128 + SIGKILL);
}

namespace {

/* Makes pidfd_open fail with ENOSYS in this process (and its children), as
 * on a kernel before 5.3 or under a container's seccomp profile. */
bool block_pidfd_open()
{
#if defined(__x86_64__) && defined(SYS_pidfd_open)
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
    return (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) &&
           (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0) &&
           (syscall(SYS_pidfd_open, getpid(), 0) == -1) && (errno == ENOSYS);
#else
    return false;
#endif
}

/* A survivor without pidfds: kills its own victim, reports the time to the
 * error callback (ms) over `fd`. */
int survivor_without_pidfd(int fd)
{
    const char *tls = "posix,cma,self";
    TEST_CHILD_CHECK(block_pidfd_open());
    peer p;
    TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
    test::child_process child([tls](int vfd) { return idle_peer(vfd, tls); });
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::recv_blob(child.fd(), &remote));
    TEST_CHILD_CHECK(test::send_blob(child.fd(), p.address()));
    error_seen errors;
    TEST_CHILD_CHECK(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, on_error, &errors) == UCS_OK);
    TEST_CHILD_CHECK(greet(p));
    TEST_CHILD_CHECK(test::sync_peer(child.fd()));
    std::vector<uint8_t> payload(64, 1);
    ucs_status_ptr_t sync_req = send_data(p, payload, TAG_SYNC, true);
    TEST_CHILD_CHECK(UCS_PTR_IS_PTR(sync_req) && (sync_req != nullptr));

    const auto t0 = clock_type::now();
    child.kill(SIGKILL); /* a zombie: /proc shows it as such */
    test::poll_until([&] { return errors.calls > 0; }, [&] { ucp_worker_progress(p.worker); }, 10s);
    TEST_CHILD_CHECK(errors.calls == 1);
    const double ms = std::chrono::duration<double, std::milli>(errors.when - t0).count();
    TEST_CHILD_CHECK(wait_bounded(p, sync_req, 10s) != UCS_OK);
    TEST_CHILD_CHECK(test::send_value(fd, ms));
    TEST_CHILD_CHECK(child.wait() == 128 + SIGKILL);
    return 0;
}

} // namespace

TEST_CASE("without pidfds (seccomp), a killed shm peer is found through /proc", "[ucp_fault]")
{
#if !defined(__x86_64__)
    WARN("the seccomp filter of this test is written for x86_64: not run");
    return;
#endif
    test::child_process survivor(survivor_without_pidfd);
    double ms = -1;
    REQUIRE(test::recv_value(survivor.fd(), &ms));
    CHECK(survivor.wait() == 0);
    std::printf("fault matrix: posix,cma,self without pidfds: callback %.1f ms\n", ms);
    CHECK(ms >= 0);
    CHECK(ms < std::chrono::duration<double, std::milli>(DETECTION_BOUND).count());
}

namespace {

constexpr unsigned MANY_EPS = 8;

/* The victim of many eps: receives one message on each, says so, then
 * progresses until it is killed. */
int many_eps_victim(int fd, const char *tls)
{
    peer v;
    TEST_CHILD_CHECK(v.init(tls) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, v.address()));
    TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
    for (unsigned i = 0; i < MANY_EPS; ++i) {
        uint8_t byte = 0;
        ucp_tag_recv_info_t info;
        TEST_CHILD_CHECK(v.recv(&byte, 1, TAG_DATA, ~ucp_tag_t(0), &info) == UCS_OK);
        TEST_CHILD_CHECK(byte == 1);
    }
    TEST_CHILD_CHECK(test::send_value(fd, MANY_EPS));
    for (;;) {
        ucp_worker_progress(v.worker);
    }
}

} // namespace

TEST_CASE("every ep to a killed peer fails, each once", "[ucp_fault]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init(tls) == UCS_OK);
    test::child_process child([tls](int fd) { return many_eps_victim(fd, tls); });
    std::vector<uint8_t> remote;
    REQUIRE(test::recv_blob(child.fd(), &remote));
    REQUIRE(test::send_blob(child.fd(), p.address()));

    /* Each ep of its own: over tcp each has its own connection, so the kill
     * fails all their lanes in one progress. */
    std::vector<ucp_ep_h> eps(MANY_EPS);
    std::vector<error_seen> errors(MANY_EPS);
    for (unsigned i = 0; i < MANY_EPS; ++i) {
        REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, on_error, &errors[i]) == UCS_OK);
        eps[i]       = p.ep;
        uint8_t byte = 1;
        ucp_request_param_t param{};
        REQUIRE(p.wait(ucp_tag_send_nbx(eps[i], &byte, 1, TAG_DATA, &param)) == UCS_OK);
    }
    /* Progressing: a connection may still hold a message that completed. */
    unsigned received = 0;
    REQUIRE(p.recv_value_progress(child.fd(), &received));
    REQUIRE(received == MANY_EPS);

    child.kill(SIGKILL);
    const bool all_failed = test::poll_until(
        [&] {
        return std::all_of(errors.begin(), errors.end(),
                           [](const error_seen &e) { return e.calls > 0; });
        },
        [&] { ucp_worker_progress(p.worker); }, DETECTION_BOUND);
    CHECK(all_failed);
    /* More progress reports nothing twice. */
    for (int i = 0; i < 1000; ++i) {
        ucp_worker_progress(p.worker);
    }
    for (unsigned i = 0; i < MANY_EPS; ++i) {
        CAPTURE(i);
        CHECK(errors[i].calls == 1);
        CHECK(errors[i].status != UCS_OK);
        uint8_t byte = 1;
        ucp_request_param_t param{};
        ucs_status_ptr_t late = ucp_tag_send_nbx(eps[i], &byte, 1, TAG_DATA, &param);
        CHECK(UCS_PTR_IS_ERR(late));
        ucp_request_param_t cparam{};
        cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        CHECK(wait_bounded(p, ucp_ep_close_nbx(eps[i], &cparam), 5000ms) == UCS_OK);
    }
    p.ep = nullptr;
    p.close();
    CHECK(child.wait() == 128 + SIGKILL);
}
