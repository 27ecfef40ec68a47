/*
 * Fuzz target: the collectives' message handler (coll::am_handler, what UCP
 * calls for an AM of the collectives' layered id), fed a peer's bytes while
 * a collective waits for that peer.
 *
 * Two workers of this process (UCX_TLS=posix,self) are the two ranks of a
 * team (key fuzz_team_key). Each input gets fresh collectives contexts and
 * a fresh team: rank 0 starts an 8-double allreduce (collective 1 of the
 * team), the input's messages go to rank 0's handler as if rank 1 had sent
 * them, then rank 1 starts its allreduce and both workers are progressed
 * until both collectives are over (done or failed: a collective still
 * waiting after that many progress calls is a hang, and aborts). Then the
 * team and the contexts are destroyed: libFuzzer's leak check sees any
 * early message the handler kept.
 *
 * Input: a sequence of messages, each
 *     u8 how, u16 length (little-endian), `length` bytes
 *     (fewer when the input ends first)
 * how & 1: the first 24 bytes are the user header (wire_hdr) and the rest
 * the data, as a message above coll::inline_max travels; else no user
 * header, the 24-byte header leads the data, as an inline one. how & 0x80:
 * progress both workers once before the next message.
 *
 * Data is given without UCP_AM_RECV_ATTR_FLAG_DATA or _RNDV: with them the
 * handler may keep a UCP descriptor and hand it back to UCP later, which
 * the fuzzer cannot forge; the handler's parsing is the same either way,
 * and UCP's own AM target (fuzz_ucp_am) covers the descriptors.
 */
#include "fuzz_common.h"

#include <coll/api/ucp_coll.h>
#include <coll/context.h>
#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr uint64_t fuzz_team_key  = 1;
constexpr size_t count            = 8;
constexpr unsigned progress_limit = 200000;

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_coll_am: %s\n", what);
        std::abort();
    }
}

struct ranks {
    ucp_context_h context  = nullptr;
    ucp_worker_h worker[2] = {};
    ucp_ep_h ep[2]         = {}; /* ep[0]: rank 0 to rank 1; ep[1]: rank 1 to rank 0 */
};

ranks *g_ranks = nullptr;

void progress_both()
{
    ucp_worker_progress(g_ranks->worker[0]);
    ucp_worker_progress(g_ranks->worker[1]);
}

/* Progresses both ranks until a collectives `request` is over; its status. */
ucs_status_t wait_coll(ucs_status_ptr_t request)
{
    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status = UCS_INPROGRESS;
    for (unsigned i = 0; (i < progress_limit) &&
                         ((status = ucp_coll_request_check_status(request)) == UCS_INPROGRESS);
         ++i) {
        progress_both();
    }
    check(status != UCS_INPROGRESS, "a collective hangs");
    ucp_coll_request_free(request);
    return status;
}

void setup()
{
    g_ranks = new ranks;
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_AM;
    check(ucp_init(&params, nullptr, &g_ranks->context) == UCS_OK, "ucp_init");
    ucp_address_t *address[2];
    size_t length[2];
    for (int r = 0; r < 2; ++r) {
        ucp_worker_params_t wp{};
        check(ucp_worker_create(g_ranks->context, &wp, &g_ranks->worker[r]) == UCS_OK,
              "ucp_worker_create");
        check(ucp_worker_get_address(g_ranks->worker[r], &address[r], &length[r]) == UCS_OK,
              "ucp_worker_get_address");
    }
    for (int r = 0; r < 2; ++r) {
        ucp_ep_params_t ep_params{};
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = address[1 - r];
        check(ucp_ep_create(g_ranks->worker[r], &ep_params, &g_ranks->ep[r]) == UCS_OK,
              "ucp_ep_create");
    }
    for (int r = 0; r < 2; ++r) {
        ucp_worker_release_address(g_ranks->worker[r], address[r]);
    }
}

/* One input's collectives: contexts and a team of the two ranks. */
struct session {
    ucp_coll_context_h coll[2] = {};
    ucp_team_h team[2]         = {};

    session()
    {
        ucs_status_ptr_t created[2];
        for (int r = 0; r < 2; ++r) {
            check(ucp_coll_context_create(g_ranks->worker[r], &coll[r]) == UCS_OK,
                  "ucp_coll_context_create");
        }
        for (int r = 0; r < 2; ++r) {
            ucp_ep_h eps[2] = {};
            eps[1 - r]      = g_ranks->ep[r];
            ucp_team_params_t tp{};
            tp.field_mask = UCP_TEAM_PARAM_FIELD_EPS | UCP_TEAM_PARAM_FIELD_KEY;
            tp.eps        = eps;
            tp.size       = 2;
            tp.my_rank    = unsigned(r);
            tp.key        = fuzz_team_key;
            created[r]    = ucp_team_create_nbx(coll[r], &tp, &team[r], nullptr);
            check(!UCS_PTR_IS_ERR(created[r]), "ucp_team_create_nbx");
        }
        for (int r = 0; r < 2; ++r) {
            check(wait_coll(created[r]) == UCS_OK, "team creation");
        }
    }

    ~session()
    {
        for (int r = 0; r < 2; ++r) {
            ucp_team_destroy(team[r]);
        }
        for (int r = 0; r < 2; ++r) {
            ucp_coll_context_destroy(coll[r]);
        }
    }
};

ucs_status_ptr_t start_allreduce(ucp_team_h team, const double *in, double *out)
{
    ucp_coll_args_t args{};
    args.field_mask = UCP_COLL_ARGS_FIELD_OP;
    args.coll       = UCP_COLL_ALLREDUCE;
    args.sbuf       = in;
    args.rbuf       = out;
    args.count      = count;
    args.dt         = UCP_COLL_DT_DOUBLE;
    args.op         = UCP_COLL_OP_SUM;
    /* An error at once is a legal answer: rank 1 may start a collective
     * that rank 0 already aborted. */
    return ucp_coll_nbx(team, &args, nullptr);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    fuzz::init_env("posix,self");
    setup();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    session s;
    double sbuf[2][count], rbuf[2][count];
    for (size_t i = 0; i < count; ++i) {
        sbuf[0][i] = double(i);
        sbuf[1][i] = double(2 * i);
    }
    ucs_status_ptr_t first = start_allreduce(s.team[0], sbuf[0], rbuf[0]);

    fuzz::cursor in(data, size);
    uint8_t how;
    uint16_t length;
    while (in.get(&how) && in.get(&length)) {
        const uint8_t *bytes;
        /* A copy of its own: reading past `length` shows up under ASan. */
        const size_t got = in.take(length, &bytes);
        std::vector<uint8_t> message(bytes, bytes + got);
        ucp_am_recv_param_t param{};
        param.reply_ep             = g_ranks->ep[0];
        const size_t header_length = ((how & 1) && (got >= sizeof(coll::wire_hdr))) ?
                                         sizeof(coll::wire_hdr) :
                                         0;
        const ucs_status_t status  = coll::am_handler(s.coll[0], message.data(), header_length,
                                                      message.data() + header_length,
                                                      got - header_length, &param);
        check(status == UCS_OK, "the handler kept data it was not allowed to keep");
        if (how & 0x80) {
            progress_both();
        }
    }

    ucs_status_ptr_t second = start_allreduce(s.team[1], sbuf[1], rbuf[1]);
    wait_coll(first);
    wait_coll(second);
    return 0;
}
