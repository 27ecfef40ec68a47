/*
 * The process group of the collectives tests (coll_group.h).
 */
#include "coll_group.h"

#include <sys/mman.h>

#include <sched.h>
#include <stdlib.h>

#include <memory>

namespace coll_test {

ucs_status_t member::wait(ucs_status_ptr_t request)
{
    if (request == nullptr) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status;
    while ((status = ucp_coll_request_check_status(request)) == UCS_INPROGRESS) {
        if (ucp_worker_progress(p.worker) == 0) {
            sched_yield(); /* more members than cores: let the others run */
        }
    }
    ucp_coll_request_free(request);
    return status;
}

ucs_status_t member::run(const ucp_coll_args_t &args)
{
    return wait(ucp_coll_nbx(team, &args, nullptr));
}

namespace {

int member_main(unsigned rank, unsigned size, int fd, const group_options &options,
                uint64_t *shared, const std::function<int(member &m)> &body)
{
    member m;
    m.rank   = rank;
    m.size   = size;
    m.shared = shared;
    for (const auto &var : options.env) {
        setenv(var.first, var.second, 1);
    }
    TEST_CHILD_CHECK(m.p.init_with(options.tls, UCP_FEATURE_AM | UCP_FEATURE_TAG, options.extra) ==
                     UCS_OK);
    /* Before the address leaves: a peer may send as soon as it has it. */
    TEST_CHILD_CHECK(ucp_coll_context_create(m.p.worker, &m.ctx) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, m.p.address()));
    m.eps.assign(size, nullptr);
    for (unsigned r = 0; r < size; ++r) {
        std::vector<uint8_t> address;
        TEST_CHILD_CHECK(test::recv_blob(fd, &address));
        if (r == rank) {
            continue;
        }
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                            UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        params.address  = reinterpret_cast<const ucp_address_t *>(address.data());
        params.err_mode = options.err_mode;
        TEST_CHILD_CHECK(ucp_ep_create(m.p.worker, &params, &m.eps[r]) == UCS_OK);
    }
    ucp_team_params_t tp{};
    tp.field_mask = UCP_TEAM_PARAM_FIELD_EPS | UCP_TEAM_PARAM_FIELD_KEY;
    tp.eps        = m.eps.data();
    tp.size       = size;
    tp.my_rank    = rank;
    tp.key        = options.team_key;
    TEST_CHILD_CHECK(m.wait(ucp_team_create_nbx(m.ctx, &tp, &m.team, nullptr)) == UCS_OK);

    const int code = body(m);
    if ((code != 0) || !options.teardown) {
        return code; /* the others may wait for this one: they fail on their own */
    }
    /* Everyone is done before anyone closes its endpoints. */
    ucp_coll_args_t barrier{};
    barrier.coll = UCP_COLL_BARRIER;
    TEST_CHILD_CHECK(m.run(barrier) == UCS_OK);
    TEST_CHILD_CHECK(ucp_team_destroy(m.team) == UCS_OK);
    TEST_CHILD_CHECK(ucp_coll_context_destroy(m.ctx) == UCS_OK);
    /* All closes at once, then progress until all are done (a flushing
     * close completes when the peer's side is closing too). */
    std::vector<ucs_status_ptr_t> closes;
    for (ucp_ep_h ep : m.eps) {
        if (ep != nullptr) {
            ucp_request_param_t param{};
            closes.push_back(ucp_ep_close_nbx(ep, &param));
        }
    }
    for (ucs_status_ptr_t close : closes) {
        TEST_CHILD_CHECK(m.p.wait(close) == UCS_OK);
    }
    return 0;
}

} // namespace

void run_group(unsigned size, const group_options &options,
               const std::function<int(member &m)> &body, std::vector<int> *codes,
               std::vector<uint64_t> *shared_out)
{
    const size_t bytes = shared_words * sizeof(uint64_t);
    void *map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint64_t *shared = (map == MAP_FAILED) ? nullptr : static_cast<uint64_t *>(map);
    codes->assign(size, -1);
    if (shared == nullptr) {
        return;
    }
    std::vector<std::unique_ptr<test::child_process>> members;
    for (unsigned r = 0; r < size; ++r) {
        members.push_back(std::make_unique<test::child_process>([r, size, &options, shared,
                                                                 &body](int fd) {
            return member_main(r, size, fd, options, shared, body);
        }));
    }
    std::vector<std::vector<uint8_t>> addresses(size);
    bool ok = true;
    for (unsigned r = 0; r < size; ++r) {
        ok = ok && test::recv_blob(members[r]->fd(), &addresses[r]);
    }
    for (auto &m : members) {
        for (const auto &address : addresses) {
            ok = ok && test::send_blob(m->fd(), address);
        }
    }
    for (unsigned r = 0; r < size; ++r) {
        (*codes)[r] = ok ? members[r]->wait(std::chrono::seconds(240)) : -2;
    }
    if (shared_out != nullptr) {
        shared_out->assign(shared, shared + shared_words);
    }
    munmap(map, bytes);
}

} // namespace coll_test
