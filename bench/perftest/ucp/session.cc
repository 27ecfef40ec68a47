#include "session.h"

#include <cstdlib>
#include <cstring>

namespace perftest::ucp {

namespace {

constexpr size_t ALIGNMENT = 4096;

uint64_t features_of(const test_spec &spec)
{
    uint64_t features = 0;
    switch (spec.info().cmd) {
    case ucp_cmd::TAG:
    case ucp_cmd::TAG_SYNC:
        features = UCP_FEATURE_TAG;
        break;
    case ucp_cmd::PUT:
    case ucp_cmd::PUT_FLUSH:
    case ucp_cmd::GET:
        features = UCP_FEATURE_RMA;
        break;
    case ucp_cmd::ADD:
    case ucp_cmd::FADD:
    case ucp_cmd::SWAP:
    case ucp_cmd::CSWAP:
        features = (spec.message_size() == sizeof(uint32_t)) ? UCP_FEATURE_AMO32 :
                                                               UCP_FEATURE_AMO64;
        break;
    case ucp_cmd::STREAM:
        features = UCP_FEATURE_STREAM;
        break;
    case ucp_cmd::AM:
        features = UCP_FEATURE_AM;
        break;
    }
    if (spec.sleep_wait || spec.wakeup) {
        features |= UCP_FEATURE_WAKEUP;
    }
    return features;
}

uint8_t *allocate(size_t size, int fill)
{
    size_t rounded = (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    auto *p        = static_cast<uint8_t *>(std::aligned_alloc(ALIGNMENT, rounded));
    if (p != nullptr) {
        std::memset(p, fill, rounded);
    }
    return p;
}

/* Waits for a request of the session itself (close); gives up on it when
 * the peer is gone. */
void wait_request(session &s, ucs_status_ptr_t request, ucs_status_t *status)
{
    if (!UCS_PTR_IS_PTR(request)) {
        *status = UCS_PTR_STATUS(request);
        return;
    }
    unsigned spins = 0;
    while ((*status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(s.worker());
        if (((++spins % PEER_CHECK_SPINS) == 0) && s.channel().peer_gone()) {
            *status = UCS_ERR_CONNECTION_RESET;
            break;
        }
    }
    ucp_request_free(request);
}

} // namespace

std::string failed(const char *what, ucs_status_t status)
{
    return std::string(what) + ": " + ucs_status_string(status);
}

session::session(const test_spec &spec, perf::oob &channel, ucp_context_h context) :
    spec_(spec), channel_(channel), sleep_wait_(spec.sleep_wait != 0), context_(context)
{
}

session::~session()
{
    if (rkey_ != nullptr) {
        ucp_rkey_destroy(rkey_);
    }
    if (ep_ != nullptr) {
        /* Only after a failure: drop it without waiting for the peer. */
        ucp_request_param_t param = {};
        param.op_attr_mask        = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags               = UCP_EP_CLOSE_FLAG_FORCE;
        ucs_status_t status;
        wait_request(*this, ucp_ep_close_nbx(ep_, &param), &status);
    }
    if (send_memh_ != nullptr) {
        ucp_mem_unmap(context_, send_memh_);
    }
    if (recv_memh_ != nullptr) {
        ucp_mem_unmap(context_, recv_memh_);
    }
    if (send_owned_) {
        std::free(send_buf_);
    }
    if (recv_owned_) {
        std::free(recv_buf_);
    }
    if (worker_ != nullptr) {
        ucp_worker_destroy(worker_);
    }
    if (own_context_) {
        ucp_cleanup(context_);
    }
}

bool session::agreed(bool ok_here, const std::string &why_here, std::string *error)
{
    bool ok_there = false;
    std::string why_there;
    if (!channel_.agree(ok_here, why_here, &ok_there, &why_there)) {
        *error = "the out-of-band channel to the peer broke";
        return false;
    }
    if (!ok_here) {
        *error = why_here;
    } else if (!ok_there) {
        *error = "peer: " + why_there;
    }
    return ok_here && ok_there;
}

std::string create_context(const test_spec &spec, bool mt_workers_shared, ucp_context_h *context_p)
{
    ucp_config_t *config;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) {
        return failed("ucp_config_read", status);
    }
    if (spec.tls[0] != '\0') {
        status = ucp_config_modify(config, "TLS", spec.tls);
        if (status != UCS_OK) {
            ucp_config_release(config);
            return failed("ucp_config_modify(TLS)", status);
        }
    }
    ucp_params_t params      = {};
    params.field_mask        = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features          = features_of(spec);
    params.estimated_num_eps = 1;
    if (mt_workers_shared) {
        /* -T: one worker per thread, the context between them. */
        params.field_mask |= UCP_PARAM_FIELD_MT_WORKERS_SHARED;
        params.mt_workers_shared = 1;
    }
    status = ucp_init(&params, config, context_p);
    ucp_config_release(config);
    if (status != UCS_OK) {
        *context_p = nullptr;
        return failed("ucp_init", status);
    }
    return {};
}

std::string session::create_worker()
{
    if (context_ == nullptr) {
        std::string why = create_context(spec_, false, &context_);
        if (!why.empty()) {
            return why;
        }
        own_context_ = true;
    }
    ucp_worker_params_t wparams = {};
    wparams.field_mask          = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode         = ucs_thread_mode_t(spec_.thread_mode);
    ucs_status_t status         = ucp_worker_create(context_, &wparams, &worker_);
    if (status != UCS_OK) {
        worker_ = nullptr;
        return failed("ucp_worker_create", status);
    }
    return {};
}

std::string session::connect()
{
    ucp_address_t *address;
    size_t address_length;
    ucs_status_t status = ucp_worker_get_address(worker_, &address, &address_length);
    if (status != UCS_OK) {
        /* Still take part in the exchange, so the peer is not left waiting. */
        std::vector<uint8_t> none, theirs;
        channel_.exchange(none, &theirs);
        return failed("ucp_worker_get_address", status);
    }
    auto *bytes = reinterpret_cast<const uint8_t *>(address);
    std::vector<uint8_t> mine(bytes, bytes + address_length), theirs;
    ucp_worker_release_address(worker_, address);
    if (!channel_.exchange(mine, &theirs)) {
        return "the address exchange with the peer failed";
    }
    if (theirs.empty()) {
        return "the peer has no worker address";
    }

    ucp_ep_params_t params = {};
    params.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address         = reinterpret_cast<const ucp_address_t *>(theirs.data());
    if (spec_.err_handling) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    }
    status = ucp_ep_create(worker_, &params, &ep_);
    if (status != UCS_OK) {
        ep_ = nullptr;
        return failed("ucp_ep_create", status);
    }
    return {};
}

/* UCP allocates the buffer, as UCX's tool has it do: the transports can then
 * reach it best (shared memory directly, where user memory would need CMA
 * or emulation). Failing that, ours, mapped for remote access if UCP can. */
std::string session::allocate_buffer(int fill, uint8_t mem_type, uint8_t **buffer, ucp_mem_h *memh,
                                     bool *owned)
{
    ucp_mem_map_params_t params = {};
    params.field_mask           = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.length               = buf_size_;
    params.flags                = UCP_MEM_MAP_ALLOCATE | map_flags();
    if (mem_type != UCS_MEMORY_TYPE_HOST) {
        /* GPU memory: UCP allocates it (the cuda module), or the test cannot
         * run. Its content is not looked at: no fill. */
        params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
        params.memory_type  = ucs_memory_type_t(mem_type);
        ucs_status_t status = ucp_mem_map(context_, &params, memh);
        ucp_mem_attr_t attr = {};
        attr.field_mask     = UCP_MEM_ATTR_FIELD_ADDRESS;
        if ((status == UCS_OK) && ((status = ucp_mem_query(*memh, &attr)) != UCS_OK)) {
            ucp_mem_unmap(context_, *memh);
        }
        if (status != UCS_OK) {
            *memh                  = nullptr;
            const std::string what = std::string("ucp_mem_map of ") +
                                     ucs_memory_type_names[mem_type] + " memory";
            return failed(what.c_str(), status);
        }
        *buffer = static_cast<uint8_t *>(attr.address);
        return {};
    }
    if (ucp_mem_map(context_, &params, memh) == UCS_OK) {
        ucp_mem_attr_t attr = {};
        attr.field_mask     = UCP_MEM_ATTR_FIELD_ADDRESS;
        if (ucp_mem_query(*memh, &attr) == UCS_OK) {
            *buffer = static_cast<uint8_t *>(attr.address);
            std::memset(*buffer, fill, buf_size_);
            return {};
        }
        ucp_mem_unmap(context_, *memh);
    }
    *memh   = nullptr;
    *buffer = allocate(buf_size_, fill);
    if (*buffer == nullptr) {
        return "cannot allocate " + std::to_string(buf_size_) + " bytes";
    }
    *owned            = true;
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.address      = *buffer;
    params.flags        = map_flags();
    ucs_status_t status = ucp_mem_map(context_, &params, memh);
    if (status != UCS_OK) {
        *memh = nullptr;
        if (spec_.prereg || is_one_sided(spec_.info().cmd)) {
            return failed("ucp_mem_map", status);
        }
    }
    return {};
}

std::string session::make_buffers()
{
    length_         = spec_.message_size();
    buf_size_       = std::max<size_t>(spec_.buffer_size(), 1);
    std::string why = allocate_buffer(0x5a, spec_.send_mem, &send_buf_, &send_memh_, &send_owned_);
    if (!why.empty()) {
        return why;
    }
    /* All ones: the put latency test reads the last byte as a sequence
     * number, and no iteration uses 0xff. */
    why = allocate_buffer(0xff, spec_.recv_mem, &recv_buf_, &recv_memh_, &recv_owned_);
    if (!why.empty()) {
        return why;
    }
    auto build_iov = [&](uint8_t *base, std::vector<ucp_dt_iov_t> *iov) {
        size_t offset = 0;
        for (uint32_t i = 0; i < spec_.iov_count; ++i) {
            iov->push_back({base + offset, size_t(spec_.sizes[i])});
            offset += spec_.iov_stride ? spec_.iov_stride : spec_.sizes[i];
        }
    };
    if (spec_.send_layout == layout::IOV) {
        build_iov(send_buf_, &send_iov_);
    }
    if (spec_.recv_layout == layout::IOV) {
        build_iov(recv_buf_, &recv_iov_);
    }
    return {};
}

std::string session::exchange_keys()
{
    std::vector<uint8_t> mine, theirs;
    std::string why;
    void *packed        = nullptr;
    size_t packed_size  = 0;
    ucs_status_t status = ucp_rkey_pack(context_, recv_memh_, &packed, &packed_size);
    if (status == UCS_OK) {
        uint64_t address = reinterpret_cast<uintptr_t>(recv_buf_);
        auto *a          = reinterpret_cast<const uint8_t *>(&address);
        mine.assign(a, a + sizeof(address));
        auto *k = static_cast<const uint8_t *>(packed);
        mine.insert(mine.end(), k, k + packed_size);
        ucp_rkey_buffer_release(packed);
    } else {
        why = failed("ucp_rkey_pack", status);
    }
    if (!channel_.exchange(mine, &theirs)) {
        return "the key exchange with the peer failed";
    }
    if (!why.empty()) {
        return why;
    }
    if (theirs.size() <= sizeof(uint64_t)) {
        return "the peer sent no remote key";
    }
    std::memcpy(&remote_addr_, theirs.data(), sizeof(remote_addr_));
    status = ucp_ep_rkey_unpack(ep_, theirs.data() + sizeof(uint64_t), &rkey_);
    if (status != UCS_OK) {
        rkey_ = nullptr;
        return failed("ucp_ep_rkey_unpack", status);
    }
    return {};
}

run_status session::setup(std::string *error)
{
    std::string why = create_worker();
    if (!agreed(why.empty(), why, error)) {
        return run_status::SKIPPED;
    }
    why = connect();
    if (!agreed(why.empty(), why, error)) {
        return run_status::SKIPPED;
    }
    why = make_buffers();
    if (!agreed(why.empty(), why, error)) {
        return run_status::SKIPPED;
    }
    if (is_one_sided(spec_.info().cmd)) {
        why = exchange_keys();
        if (!agreed(why.empty(), why, error)) {
            return run_status::SKIPPED;
        }
    }
    return run_status::OK;
}

bool session::progress_barrier()
{
    if (!channel_.send_byte(1)) {
        return false;
    }
    for (;;) {
        /* Never ucp_worker_wait() here: the peer may be waiting on the
         * barrier too, with nothing to wake us. */
        for (int i = 0; i < 64; ++i) {
            ucp_worker_progress(worker_);
        }
        if (channel_.ready()) {
            uint8_t byte;
            return channel_.recv_byte(&byte);
        }
    }
}

run_status session::close(std::string *error)
{
    if (!progress_barrier()) {
        *error = "the peer went away before closing";
        return run_status::FATAL;
    }
    if (rkey_ != nullptr) {
        ucp_rkey_destroy(rkey_);
        rkey_ = nullptr;
    }
    ucp_request_param_t param = {};
    ucs_status_t status;
    wait_request(*this, ucp_ep_close_nbx(ep_, &param), &status);
    ep_ = nullptr;
    if (!progress_barrier()) {
        *error = "the peer went away while closing";
        return run_status::FATAL;
    }
    if ((status != UCS_OK) && !spec_.err_handling) {
        *error = failed("ucp_ep_close_nbx", status);
        return run_status::FATAL;
    }
    return run_status::OK;
}

unsigned session::map_flags() const
{
    return spec_.nonblock_reg ? UCP_MEM_MAP_NONBLOCK : 0;
}

ucp_datatype_t session::send_datatype() const
{
    return send_iov_.empty() ? ucp_dt_make_contig(1) : ucp_dt_make_iov();
}

ucp_datatype_t session::recv_datatype() const
{
    return recv_iov_.empty() ? ucp_dt_make_contig(1) : ucp_dt_make_iov();
}

} // namespace perftest::ucp
