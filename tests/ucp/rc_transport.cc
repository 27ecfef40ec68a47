/*
 * The "ucp_test_rc" transport (see rc_transport.h): unix datagram sockets
 * with RC queue-pair semantics, for the connect-to-ep wireup tests.
 */
#include "rc_transport.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_module.h>
#include <uct/base/uct_worker.h>
#include <ucs/debug/log.h>
#include <ucs/sys/identity.h>
#include <ucs/type/wire_reader.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

namespace ucp_test {

std::atomic<bool> rc_enabled{false};
std::atomic<unsigned long> rc_dropped_unconnected{0};
std::atomic<unsigned long> rc_delivered_am{0};
rc_rma_counts rc_rma_issued;
std::atomic<unsigned long> rc_eps_created{0};
std::atomic<unsigned long> rc_eps_connected{0};

namespace {

/* `status`, counting an issued call in `count`. */
ucs_status_t counted(ucs_status_t status, std::atomic<unsigned long> &count)
{
    if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
        ++count;
    }
    return status;
}

/* ---- what crosses the socket (test-only, validated all the same) ---- */

constexpr uint32_t frame_magic = 0x31435452; /* "RTC1" */

enum op : uint8_t {
    OP_AM = 1,
    OP_PUT,
    OP_GET_REQ,
    OP_GET_REP,
    OP_FLUSH_REQ,
    OP_FLUSH_REP,
    OP_CHECK,
    OP_NAK
};

struct frame_hdr {
    uint32_t magic;
    uint8_t op;
    uint8_t am_id;
    uint16_t reserved;
    uint32_t dst_ep, dst_gen; /* the receiving ep */
    uint32_t src_ep, src_gen; /* the sending ep: must be the one dst is connected to */
    uint64_t address;         /* PUT, GET_REQ */
    uint64_t key;             /* PUT, GET_REQ; replies: status */
    uint64_t length;          /* GET_REQ */
    uint64_t token;           /* GET_REQ, GET_REP, FLUSH_REQ, FLUSH_REP */
};
static_assert(sizeof(frame_hdr) == 56, "frame_hdr layout");

struct dev_address {
    uint64_t machine;
    uint64_t netns; /* abstract unix names are per network namespace */
};

struct iface_address {
    uint32_t pid;
    uint32_t index;
    uint64_t nonce;
};

struct ep_address {
    iface_address iface;
    uint32_t ep;
    uint32_t gen;
};
static_assert((sizeof(dev_address) == 16) && (sizeof(iface_address) == 16) &&
                  (sizeof(ep_address) == 24),
              "address layouts");

constexpr uint32_t rkey_magic = 0x314b4352; /* "RCK1" */

struct packed_rkey {
    uint32_t magic;
    uint32_t reserved;
    uint64_t key;
    uint64_t address;
    uint64_t length;
};
static_assert(sizeof(packed_rkey) == 32, "packed_rkey layout");

constexpr size_t max_datagram = sizeof(frame_hdr) + rc_max_zcopy + 512;

dev_address local_dev_address()
{
    uint64_t netns = 0;
    ucs::sys::namespace_inode(ucs::sys::namespace_type::net, &netns);
    return {ucs::sys::machine_id(), netns};
}

void socket_name(const iface_address &a, sockaddr_un *sun, socklen_t *len)
{
    std::memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    const int n     = std::snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
                                    "ucp_test_rc:%u:%u:%016llx", a.pid, a.index,
                                    static_cast<unsigned long long>(a.nonce));
    *len            = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + n);
}

/* ---- memory registrations: what the target checks puts and gets against ---- */

struct region {
    uint64_t key;
    uintptr_t address;
    size_t length;
};

std::mutex regions_lock;
std::unordered_map<uint64_t, region> regions;

uint64_t random_u64()
{
    static std::mt19937_64 gen{std::random_device{}() ^ (uint64_t(getpid()) << 32)};
    return gen();
}

bool region_allows(uint64_t key, uint64_t address, uint64_t length)
{
    std::lock_guard<std::mutex> guard(regions_lock);
    auto it = regions.find(key);
    return (it != regions.end()) &&
           ucs::range_inside(address, length, it->second.address, it->second.length);
}

struct remote_key {
    uint64_t key;
    uint64_t address;
    uint64_t length;
};

class rc_iface;

class rc_ep final : public uct::ep {
public:
    explicit rc_ep(rc_iface &iface);
    ~rc_ep() override;

    ucs_status_t get_address(void *buffer) const override;
    ucs_status_t connect_to_ep(const void *dev_addr, size_t dev_addr_len, const void *ep_addr,
                               size_t ep_addr_len) override;

    ucs_status_t am_short(uct::am_id_t id, uint64_t header, const void *payload,
                          unsigned length) override;
    ssize_t am_bcopy(uct::am_id_t id, uct::pack_callback_t pack, void *arg,
                     unsigned flags) override;
    ucs_status_t am_zcopy(uct::am_id_t id, const void *header, unsigned header_length,
                          const uct::iov *iov, size_t iovcnt, unsigned flags,
                          uct::completion *comp) override;
    ucs_status_t put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                           uct::rkey_t rkey) override;
    ssize_t put_bcopy(uct::pack_callback_t pack, void *arg, uint64_t remote_addr,
                      uct::rkey_t rkey) override;
    ucs_status_t put_zcopy(const uct::iov *iov, size_t iovcnt, uint64_t remote_addr,
                           uct::rkey_t rkey, uct::completion *comp) override;
    ucs_status_t get_bcopy(uct::unpack_callback_t unpack, void *arg, size_t length,
                           uint64_t remote_addr, uct::rkey_t rkey, uct::completion *comp) override;
    ucs_status_t get_zcopy(const uct::iov *iov, size_t iovcnt, uint64_t remote_addr,
                           uct::rkey_t rkey, uct::completion *comp) override;
    ucs_status_t pending_add(uct::pending_req *req, unsigned flags) override;
    void pending_purge(uct::pending_purge_callback_t cb, void *arg) override;
    ucs_status_t flush(unsigned flags, uct::completion *comp) override;
    ucs_status_t check(unsigned flags, uct::completion *comp) override;

    /* For the iface. */
    bool accepts(const sockaddr_un &src, socklen_t src_len, const frame_hdr &h) const;
    bool connected() const { return connected_; }
    bool busy() const;
    void receive(const frame_hdr &h, const uint8_t *payload, size_t length);
    unsigned progress_tx();
    void probe();
    void fail(ucs_status_t status);
    uint32_t index() const { return index_; }
    uint32_t gen() const { return gen_; }

private:
    struct get_op {
        uct::unpack_callback_t unpack; /* get_bcopy */
        void *arg;
        std::vector<uct::iov> iov; /* get_zcopy */
        size_t length;
        uct::completion *comp;
    };
    struct flush_op {
        uint64_t token;
        uct::completion *comp;
    };

    ucs_status_t ready() const;
    frame_hdr header(uint8_t op) const;
    /* Writes one datagram; a full peer gets it from the backlog later. */
    ucs_status_t transmit(const frame_hdr &h, const iovec *parts, size_t count, bool queue_if_full);
    ucs_status_t send_status(ssize_t rc);
    ucs_status_t put(const frame_hdr &h, const iovec *parts, size_t count);
    /* The bcopy forms: packs into tx_ and sends it with `h` (a put
     * through put()). Returns the packed length or an error. */
    ssize_t send_packed(const frame_hdr &h, uct::pack_callback_t pack, void *arg);
    ucs_status_t start_get(uint64_t remote_addr, uct::rkey_t rkey, get_op op);
    void reply(uint8_t op, uint64_t token, int64_t status, const void *data, size_t length);
    void complete_flushes(uint64_t upto, ucs_status_t status);

    rc_iface &iface_;
    uint32_t index_ = 0;
    uint32_t gen_   = 0;
    bool connected_ = false;
    sockaddr_un peer_{};
    socklen_t peer_len_  = 0;
    uint32_t peer_ep_    = 0;
    uint32_t peer_gen_   = 0;
    ucs_status_t failed_ = UCS_OK;
    bool dispatching_    = false;
    bool *alive_         = nullptr;
    bool unflushed_      = false; /* puts since the last flush request */
    uint64_t next_token_ = 1;
    std::deque<uct::pending_req *> pending_;
    std::deque<std::vector<uint8_t>> backlog_; /* datagrams the peer had no room for */
    std::unordered_map<uint64_t, get_op> gets_;
    std::deque<flush_op> flushes_;
    std::vector<uint8_t> tx_;
};

class rc_iface final : public uct::iface {
public:
    rc_iface(uct::md &md, uct::worker &worker, const uct::iface_params &params);
    ~rc_iface() override;

    ucs_status_t init();

    const uct::iface_attr &attr() const override { return attr_; }
    uct::md &owner_md() const override { return md_; }
    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create(uct::ep **ep_p) override;
    unsigned progress() override;
    unsigned check_peers() override;
    ucs_status_t flush(unsigned flags, uct::completion *comp) override;
    ucs_status_t event_fd_get(int *fd_p) override;
    ucs_status_t event_arm(unsigned events) override;

    int fd() const { return fd_; }
    const iface_address &address() const { return self_; }
    void add_ep(rc_ep *ep, uint32_t *index, uint32_t *gen);
    void remove_ep(uint32_t index);
    /* The error handler hears of `ep` from the next progress. */
    void report(rc_ep *ep, ucs_status_t status);
    ucs_status_t deliver_am(uint8_t id, uint8_t *data, size_t length)
    {
        ++rc_delivered_am;
        return invoke_am_handler(id, data, length, 0);
    }

private:
    unsigned receive();
    unsigned report_errors();
    rc_ep *find(uint32_t index, uint32_t gen) const;

    uct::md &md_;
    uct::worker &worker_;
    uct::iface_attr attr_;
    uct::error_handler_t err_handler_;
    void *err_arg_;
    int fd_ = -1;
    iface_address self_{};
    std::vector<rc_ep *> eps_;
    std::vector<uint32_t> gens_;
    std::deque<std::pair<rc_ep *, ucs_status_t>> errors_;
    /* One receive buffer per nesting level: a handler may progress again. */
    std::vector<std::unique_ptr<uint8_t[]>> rx_bufs_;
    unsigned depth_ = 0;
};

/* ---- ep ---------------------------------------------------------------- */

rc_ep::rc_ep(rc_iface &iface) : uct::ep(iface), iface_(iface), tx_(max_datagram)
{
    iface_.add_ep(this, &index_, &gen_);
    ++rc_eps_created;
}

rc_ep::~rc_ep()
{
    if (alive_ != nullptr) {
        *alive_ = false;
    }
    iface_.remove_ep(index_);
}

ucs_status_t rc_ep::get_address(void *buffer) const
{
    const ep_address a{iface_.address(), index_, gen_};
    std::memcpy(buffer, &a, sizeof(a));
    return UCS_OK;
}

ucs_status_t rc_ep::connect_to_ep(const void *dev_addr, size_t dev_addr_len, const void *ep_addr,
                                  size_t ep_addr_len)
{
    dev_address dev;
    ep_address peer;
    ucs::wire_reader rd(dev_addr, dev_addr_len), re(ep_addr, ep_addr_len);
    if (!rd.get(&dev) || !rd.at_end() || !re.get(&peer) || !re.at_end()) {
        return UCS_ERR_INVALID_PARAM;
    }
    const dev_address local = local_dev_address();
    if ((dev.machine != local.machine) || (dev.netns != local.netns)) {
        return UCS_ERR_UNREACHABLE;
    }
    if (connected_) {
        return UCS_ERR_ALREADY_EXISTS; /* a QP is connected once */
    }
    socket_name(peer.iface, &peer_, &peer_len_);
    peer_ep_   = peer.ep;
    peer_gen_  = peer.gen;
    connected_ = true;
    ++rc_eps_connected;
    return UCS_OK;
}

bool rc_ep::accepts(const sockaddr_un &src, socklen_t src_len, const frame_hdr &h) const
{
    return connected_ && (src_len == peer_len_) && (std::memcmp(&src, &peer_, src_len) == 0) &&
           (h.src_ep == peer_ep_) && (h.src_gen == peer_gen_);
}

bool rc_ep::busy() const
{
    return !pending_.empty() || !backlog_.empty();
}

ucs_status_t rc_ep::ready() const
{
    if (failed_ != UCS_OK) {
        return failed_;
    }
    if (!connected_ || !backlog_.empty() || (!pending_.empty() && !dispatching_)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

frame_hdr rc_ep::header(uint8_t op) const
{
    frame_hdr h{};
    h.magic   = frame_magic;
    h.op      = op;
    h.dst_ep  = peer_ep_;
    h.dst_gen = peer_gen_;
    h.src_ep  = index_;
    h.src_gen = gen_;
    return h;
}

ucs_status_t rc_ep::send_status(ssize_t rc)
{
    if (rc >= 0) {
        return UCS_OK;
    }
    switch (errno) {
    case EAGAIN:
    case ENOBUFS:
        return UCS_ERR_NO_RESOURCE;
    case ECONNREFUSED:
    case ENOENT:
    case ENOTCONN:
        fail(UCS_ERR_CONNECTION_RESET); /* the peer's socket is gone */
        return UCS_ERR_CONNECTION_RESET;
    case EMSGSIZE:
        return UCS_ERR_INVALID_PARAM;
    default:
        ucs_error("ucp_test_rc: send failed: %m");
        fail(UCS_ERR_IO_ERROR);
        return UCS_ERR_IO_ERROR;
    }
}

ucs_status_t rc_ep::transmit(const frame_hdr &h, const iovec *parts, size_t count,
                             bool queue_if_full)
{
    iovec iov[10];
    if (count + 1 > std::size(iov)) {
        return UCS_ERR_INVALID_PARAM;
    }
    iov[0]       = {const_cast<frame_hdr *>(&h), sizeof(h)};
    size_t total = sizeof(h);
    for (size_t i = 0; i < count; ++i) {
        iov[i + 1] = parts[i];
        total += parts[i].iov_len;
    }
    if (total > max_datagram) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = UCS_ERR_NO_RESOURCE;
    if (backlog_.empty()) {
        msghdr msg{};
        msg.msg_name    = &peer_;
        msg.msg_namelen = peer_len_;
        msg.msg_iov     = iov;
        msg.msg_iovlen  = count + 1;
        status          = send_status(::sendmsg(iface_.fd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL));
    }
    if ((status != UCS_ERR_NO_RESOURCE) || !queue_if_full) {
        return status;
    }
    /* The caller's data is consumed now, as a QP's send queue would. */
    std::vector<uint8_t> datagram;
    datagram.reserve(total);
    for (size_t i = 0; i <= count; ++i) {
        const auto *p = static_cast<const uint8_t *>(iov[i].iov_base);
        datagram.insert(datagram.end(), p, p + iov[i].iov_len);
    }
    backlog_.push_back(std::move(datagram));
    return UCS_OK;
}

ucs_status_t rc_ep::am_short(uct::am_id_t id, uint64_t header_word, const void *payload,
                             unsigned length)
{
    if (length > rc_max_short) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    frame_hdr h         = header(OP_AM);
    h.am_id             = id;
    const iovec parts[] = {{&header_word, sizeof(header_word)},
                           {const_cast<void *>(payload), length}};
    return transmit(h, parts, 2, true);
}

ssize_t rc_ep::send_packed(const frame_hdr &h, uct::pack_callback_t pack, void *arg)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    const size_t length = pack(tx_.data(), arg);
    if (length > rc_max_bcopy) {
        return UCS_ERR_INVALID_PARAM;
    }
    const iovec part{tx_.data(), length};
    status = (h.op == OP_PUT) ? put(h, &part, 1) : transmit(h, &part, 1, true);
    return (status == UCS_OK) ? ssize_t(length) : ssize_t(status);
}

ssize_t rc_ep::am_bcopy(uct::am_id_t id, uct::pack_callback_t pack, void *arg, unsigned)
{
    frame_hdr h = header(OP_AM);
    h.am_id     = id;
    return send_packed(h, pack, arg);
}

ucs_status_t rc_ep::am_zcopy(uct::am_id_t id, const void *header_data, unsigned header_length,
                             const uct::iov *iov, size_t iovcnt, unsigned, uct::completion *)
{
    if ((iovcnt > 8) || (header_length > iface_.attr().am.max_hdr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    iovec parts[9];
    parts[0] = {const_cast<void *>(header_data), header_length};
    for (size_t i = 0; i < iovcnt; ++i) {
        parts[i + 1] = {const_cast<void *>(iov[i].buffer), iov[i].length};
    }
    frame_hdr h = header(OP_AM);
    h.am_id     = id;
    /* Sent (or copied to the backlog) before returning: done at once. */
    return transmit(h, parts, iovcnt + 1, true);
}

ucs_status_t rc_ep::put(const frame_hdr &h, const iovec *parts, size_t count)
{
    ucs_status_t status = transmit(h, parts, count, true);
    if (status == UCS_OK) {
        unflushed_ = true;
    }
    return status;
}

ucs_status_t rc_ep::put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                              uct::rkey_t rkey)
{
    if (length > rc_max_short) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    frame_hdr h = header(OP_PUT);
    h.address   = remote_addr;
    h.key       = reinterpret_cast<const remote_key *>(rkey)->key;
    const iovec part{const_cast<void *>(buffer), length};
    return counted(put(h, &part, 1), rc_rma_issued.put_short);
}

ssize_t rc_ep::put_bcopy(uct::pack_callback_t pack, void *arg, uint64_t remote_addr,
                         uct::rkey_t rkey)
{
    frame_hdr h          = header(OP_PUT);
    h.address            = remote_addr;
    h.key                = reinterpret_cast<const remote_key *>(rkey)->key;
    const ssize_t packed = send_packed(h, pack, arg);
    if (packed >= 0) {
        ++rc_rma_issued.put_bcopy;
    }
    return packed;
}

ucs_status_t rc_ep::put_zcopy(const uct::iov *iov, size_t iovcnt, uint64_t remote_addr,
                              uct::rkey_t rkey, uct::completion *)
{
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        total += iov[i].length;
    }
    if ((iovcnt > 8) || (total > rc_max_zcopy)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    iovec parts[8];
    for (size_t i = 0; i < iovcnt; ++i) {
        parts[i] = {const_cast<void *>(iov[i].buffer), iov[i].length};
    }
    frame_hdr h = header(OP_PUT);
    h.address   = remote_addr;
    h.key       = reinterpret_cast<const remote_key *>(rkey)->key;
    return counted(put(h, parts, iovcnt), rc_rma_issued.put_zcopy);
}

ucs_status_t rc_ep::start_get(uint64_t remote_addr, uct::rkey_t rkey, get_op op)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    frame_hdr h = header(OP_GET_REQ);
    h.address   = remote_addr;
    h.key       = reinterpret_cast<const remote_key *>(rkey)->key;
    h.length    = op.length;
    h.token     = next_token_++;
    status      = transmit(h, nullptr, 0, true);
    if (status != UCS_OK) {
        return status;
    }
    gets_.emplace(h.token, std::move(op));
    return UCS_INPROGRESS;
}

ucs_status_t rc_ep::get_bcopy(uct::unpack_callback_t unpack, void *arg, size_t length,
                              uint64_t remote_addr, uct::rkey_t rkey, uct::completion *comp)
{
    if (length > rc_max_bcopy) {
        return UCS_ERR_INVALID_PARAM;
    }
    return counted(start_get(remote_addr, rkey, {unpack, arg, {}, length, comp}),
                   rc_rma_issued.get_bcopy);
}

ucs_status_t rc_ep::get_zcopy(const uct::iov *iov, size_t iovcnt, uint64_t remote_addr,
                              uct::rkey_t rkey, uct::completion *comp)
{
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        total += iov[i].length;
    }
    if ((iovcnt > 8) || (total > rc_max_zcopy)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return counted(start_get(remote_addr, rkey,
                             {nullptr, nullptr, std::vector<uct::iov>(iov, iov + iovcnt), total,
                              comp}),
                   rc_rma_issued.get_zcopy);
}

ucs_status_t rc_ep::pending_add(uct::pending_req *req, unsigned)
{
    pending_.push_back(req); /* dispatched by the next progress */
    return UCS_OK;
}

void rc_ep::pending_purge(uct::pending_purge_callback_t cb, void *arg)
{
    std::deque<uct::pending_req *> queue;
    queue.swap(pending_);
    for (uct::pending_req *req : queue) {
        cb(req, arg);
    }
}

ucs_status_t rc_ep::flush(unsigned flags, uct::completion *comp)
{
    if (failed_ != UCS_OK) {
        return failed_;
    }
    if (flags & uct::flush_flag::CANCEL) {
        return UCS_OK;
    }
    if (!pending_.empty()) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (!unflushed_ && gets_.empty() && flushes_.empty()) {
        return backlog_.empty() ? UCS_OK : UCS_INPROGRESS;
    }
    if (!unflushed_ && !flushes_.empty()) {
        /* The last flush request covers everything issued so far. */
        if (comp != nullptr) {
            flushes_.push_back({flushes_.back().token, comp});
        }
        return UCS_INPROGRESS;
    }
    /* The target answers after executing everything sent before. */
    frame_hdr h         = header(OP_FLUSH_REQ);
    h.token             = next_token_++;
    ucs_status_t status = transmit(h, nullptr, 0, true);
    if (status != UCS_OK) {
        return status;
    }
    unflushed_ = false;
    flushes_.push_back({h.token, comp});
    return UCS_INPROGRESS;
}

void rc_ep::probe()
{
    if (!connected_ || (failed_ != UCS_OK)) {
        return;
    }
    const frame_hdr h = header(OP_CHECK);
    transmit(h, nullptr, 0, false); /* a full peer is alive */
}

ucs_status_t rc_ep::check(unsigned, uct::completion *)
{
    probe();
    return UCS_OK;
}

void rc_ep::complete_flushes(uint64_t upto, ucs_status_t status)
{
    while (!flushes_.empty() && (flushes_.front().token <= upto)) {
        uct::completion *comp = flushes_.front().comp;
        flushes_.pop_front();
        if (comp != nullptr) {
            uct::invoke_completion(comp, status);
        }
    }
}

void rc_ep::fail(ucs_status_t status)
{
    if (failed_ != UCS_OK) {
        return;
    }
    failed_ = status;
    backlog_.clear();
    auto gets = std::move(gets_);
    gets_.clear();
    for (auto &[token, op] : gets) {
        uct::invoke_completion(op.comp, status);
    }
    complete_flushes(UINT64_MAX, status);
    iface_.report(this, status);
}

void rc_ep::reply(uint8_t op, uint64_t token, int64_t status, const void *data, size_t length)
{
    frame_hdr h = header(op);
    h.token     = token;
    h.key       = uint64_t(status);
    const iovec part{const_cast<void *>(data), length};
    transmit(h, &part, (length != 0) ? 1 : 0, true);
}

void rc_ep::receive(const frame_hdr &h, const uint8_t *payload, size_t length)
{
    switch (h.op) {
    case OP_AM:
        iface_.deliver_am(h.am_id, const_cast<uint8_t *>(payload), length);
        break;
    case OP_PUT:
        if (!region_allows(h.key, h.address, length)) {
            ucs_error("ucp_test_rc: refused a put of %zu bytes to 0x%llx (key %llx)", length,
                      static_cast<unsigned long long>(h.address),
                      static_cast<unsigned long long>(h.key));
            reply(OP_NAK, 0, UCS_ERR_INVALID_ADDR, nullptr, 0);
        } else if (length != 0) {
            std::memcpy(reinterpret_cast<void *>(h.address), payload, length);
        }
        break;
    case OP_GET_REQ:
        if ((h.length > rc_max_zcopy) || !region_allows(h.key, h.address, h.length)) {
            ucs_error("ucp_test_rc: refused a get of %llu bytes from 0x%llx",
                      static_cast<unsigned long long>(h.length),
                      static_cast<unsigned long long>(h.address));
            reply(OP_GET_REP, h.token, UCS_ERR_INVALID_ADDR, nullptr, 0);
        } else {
            reply(OP_GET_REP, h.token, UCS_OK, reinterpret_cast<const void *>(h.address), h.length);
        }
        break;
    case OP_GET_REP: {
        auto it = gets_.find(h.token);
        if (it == gets_.end()) {
            ucs_warn("ucp_test_rc: reply to an unknown get");
            break;
        }
        get_op op = std::move(it->second);
        gets_.erase(it);
        auto status = ucs_status_t(int64_t(h.key));
        if ((status == UCS_OK) && (length != op.length)) {
            status = UCS_ERR_IO_ERROR;
        }
        if (status == UCS_OK) {
            if (op.unpack != nullptr) {
                op.unpack(op.arg, payload, length);
            } else {
                size_t offset = 0;
                for (const uct::iov &e : op.iov) {
                    std::memcpy(const_cast<void *>(e.buffer), payload + offset, e.length);
                    offset += e.length;
                }
            }
        }
        uct::invoke_completion(op.comp, status);
        break;
    }
    case OP_FLUSH_REQ:
        reply(OP_FLUSH_REP, h.token, UCS_OK, nullptr, 0);
        break;
    case OP_FLUSH_REP:
        complete_flushes(h.token, UCS_OK);
        break;
    case OP_NAK:
        fail(ucs_status_t(int64_t(h.key))); /* a remote access error */
        break;
    default:
        break;
    }
}

unsigned rc_ep::progress_tx()
{
    unsigned count = 0;
    while (!backlog_.empty() && (failed_ == UCS_OK)) {
        const std::vector<uint8_t> &d = backlog_.front();
        ucs_status_t status           = send_status(::sendto(iface_.fd(), d.data(), d.size(),
                                                             MSG_DONTWAIT | MSG_NOSIGNAL,
                                                             reinterpret_cast<sockaddr *>(&peer_),
                                                             peer_len_));
        if (status == UCS_ERR_NO_RESOURCE) {
            return count;
        }
        if (status != UCS_OK) {
            return count; /* failed: the backlog is gone */
        }
        backlog_.pop_front();
        ++count;
    }
    if (!connected_ || !backlog_.empty()) {
        return count;
    }
    bool alive   = true;
    alive_       = &alive;
    dispatching_ = true;
    while (alive && !pending_.empty() && backlog_.empty()) {
        uct::pending_req *req = pending_.front();
        pending_.pop_front();
        const ucs_status_t status = req->func(req);
        if (!alive) {
            return count;
        }
        if ((status == UCS_ERR_NO_RESOURCE) || (status == UCS_INPROGRESS)) {
            pending_.push_front(req); /* stays first */
            break;
        }
        ++count;
    }
    dispatching_ = false;
    alive_       = nullptr;
    return count;
}

/* ---- iface ------------------------------------------------------------- */

rc_iface::rc_iface(uct::md &md, uct::worker &worker, const uct::iface_params &params) :
    md_(md), worker_(worker), err_handler_(params.err_handler), err_arg_(params.err_handler_arg)
{
    using namespace uct::iface_flag;
    attr_.flags = AM_SHORT | AM_BCOPY | AM_ZCOPY | PENDING | PUT_SHORT | PUT_BCOPY | PUT_ZCOPY |
                  GET_BCOPY | GET_ZCOPY | CONNECT_TO_EP | ERRHANDLE_PEER_FAILURE | EP_CHECK |
                  CB_SYNC;
    attr_.event_flags     = uct::event_flag::FD | uct::event_flag::RECV;
    attr_.am.max_short    = rc_max_short;
    attr_.am.max_bcopy    = rc_max_bcopy;
    attr_.am.max_zcopy    = rc_max_zcopy - 512;
    attr_.am.max_iov      = 8;
    attr_.am.max_hdr      = 256;
    attr_.put.max_short   = rc_max_short;
    attr_.put.max_bcopy   = rc_max_bcopy;
    attr_.put.max_zcopy   = rc_max_zcopy;
    attr_.put.max_iov     = 8;
    attr_.get.max_bcopy   = rc_max_bcopy;
    attr_.get.max_zcopy   = rc_max_zcopy;
    attr_.get.max_iov     = 8;
    attr_.device_addr_len = sizeof(dev_address);
    attr_.iface_addr_len  = sizeof(iface_address);
    attr_.ep_addr_len     = sizeof(ep_address);
    /* Better than tcp (10 us, 10 GB/s on loopback), worse than shared memory. */
    attr_.perf.latency_s       = 2e-6;
    attr_.perf.send_overhead_s = 200e-9;
    attr_.perf.recv_overhead_s = 200e-9;
    attr_.perf.bandwidth_Bps   = 12e9;
}

rc_iface::~rc_iface()
{
    worker_.progress_unregister(this);
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

ucs_status_t rc_iface::init()
{
    static std::atomic<uint32_t> next_index{0};
    self_ = {uint32_t(getpid()), next_index++, random_u64()};
    fd_   = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        return UCS_ERR_IO_ERROR;
    }
    sockaddr_un name;
    socklen_t len;
    socket_name(self_, &name, &len);
    if (::bind(fd_, reinterpret_cast<sockaddr *>(&name), len) != 0) {
        ucs_error("ucp_test_rc: bind failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    const int size = 4 << 20;
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    worker_.progress_register(this);
    return UCS_OK;
}

ucs_status_t rc_iface::get_device_address(void *buffer) const
{
    const dev_address a = local_dev_address();
    std::memcpy(buffer, &a, sizeof(a));
    return UCS_OK;
}

ucs_status_t rc_iface::get_address(void *buffer) const
{
    std::memcpy(buffer, &self_, sizeof(self_));
    return UCS_OK;
}

bool rc_iface::is_reachable(const void *dev_addr, size_t dev_addr_len, const void *,
                            size_t iface_addr_len) const
{
    dev_address dev;
    ucs::wire_reader r(dev_addr, dev_addr_len);
    if (!r.get(&dev) || !r.at_end() || (iface_addr_len != sizeof(iface_address))) {
        return false;
    }
    const dev_address local = local_dev_address();
    return (dev.machine == local.machine) && (dev.netns == local.netns);
}

ucs_status_t rc_iface::ep_create(uct::ep **ep_p)
{
    *ep_p = new rc_ep(*this);
    return UCS_OK;
}

void rc_iface::add_ep(rc_ep *ep, uint32_t *index, uint32_t *gen)
{
    auto it = std::find(eps_.begin(), eps_.end(), nullptr);
    if (it == eps_.end()) {
        eps_.push_back(nullptr);
        gens_.push_back(0);
        it = eps_.end() - 1;
    }
    *index = uint32_t(it - eps_.begin());
    *it    = ep;
    *gen   = ++gens_[*index]; /* a later ep in the slot has another */
}

void rc_iface::remove_ep(uint32_t index)
{
    eps_[index] = nullptr;
    for (auto it = errors_.begin(); it != errors_.end();) {
        it = (it->first->index() == index) ? errors_.erase(it) : it + 1;
    }
}

rc_ep *rc_iface::find(uint32_t index, uint32_t gen) const
{
    if ((index >= eps_.size()) || (eps_[index] == nullptr) || (gens_[index] != gen)) {
        return nullptr;
    }
    return eps_[index];
}

void rc_iface::report(rc_ep *ep, ucs_status_t status)
{
    errors_.emplace_back(ep, status);
}

unsigned rc_iface::report_errors()
{
    unsigned count = 0;
    while (!errors_.empty()) {
        auto [ep, status] = errors_.front();
        errors_.pop_front();
        if (err_handler_ != nullptr) {
            err_handler_(err_arg_, ep, status);
        }
        ++count;
    }
    return count;
}

unsigned rc_iface::receive()
{
    if (rx_bufs_.size() <= depth_) {
        rx_bufs_.push_back(std::make_unique<uint8_t[]>(max_datagram));
    }
    uint8_t *buf   = rx_bufs_[depth_].get();
    unsigned count = 0;
    ++depth_;
    for (int i = 0; i < 16; ++i) {
        sockaddr_un src;
        socklen_t src_len = sizeof(src);
        const ssize_t n   = ::recvfrom(fd_, buf, max_datagram, MSG_DONTWAIT,
                                       reinterpret_cast<sockaddr *>(&src), &src_len);
        if (n < 0) {
            break;
        }
        ++count;
        ucs::wire_reader r(buf, size_t(n));
        frame_hdr h;
        if (!r.get(&h) || (h.magic != frame_magic)) {
            ucs_warn("ucp_test_rc: dropping a malformed datagram of %zd bytes", n);
            continue;
        }
        rc_ep *ep = find(h.dst_ep, h.dst_gen);
        if ((ep == nullptr) || !ep->accepts(src, src_len, h)) {
            if (h.op != OP_CHECK) {
                ++rc_dropped_unconnected; /* as a QP refuses a stranger's packets */
                ucs_debug("ucp_test_rc: dropped a message (op %u) for ep %u/%u: not "
                          "connected to its sender",
                          h.op, h.dst_ep, h.dst_gen);
            }
            continue;
        }
        ep->receive(h, r.pos(), r.left());
    }
    --depth_;
    return count;
}

unsigned rc_iface::progress()
{
    unsigned count = report_errors();
    count += receive();
    for (size_t i = 0; i < eps_.size(); ++i) {
        if ((eps_[i] != nullptr) && eps_[i]->busy()) {
            count += eps_[i]->progress_tx();
        }
    }
    return count + report_errors();
}

unsigned rc_iface::check_peers()
{
    for (size_t i = 0; i < eps_.size(); ++i) {
        if (eps_[i] != nullptr) {
            eps_[i]->probe();
        }
    }
    return report_errors();
}

ucs_status_t rc_iface::flush(unsigned, uct::completion *)
{
    for (rc_ep *ep : eps_) {
        if ((ep != nullptr) && ep->busy()) {
            return UCS_ERR_NO_RESOURCE;
        }
    }
    return UCS_OK;
}

ucs_status_t rc_iface::event_fd_get(int *fd_p)
{
    *fd_p = fd_;
    return UCS_OK;
}

ucs_status_t rc_iface::event_arm(unsigned)
{
    if (!errors_.empty()) {
        return UCS_ERR_BUSY;
    }
    for (rc_ep *ep : eps_) {
        if ((ep != nullptr) && ep->busy()) {
            return UCS_ERR_BUSY;
        }
    }
    pollfd pfd{fd_, POLLIN, 0};
    return (::poll(&pfd, 1, 0) > 0) ? UCS_ERR_BUSY : UCS_OK;
}

/* ---- md and component -------------------------------------------------- */

class rc_md final : public uct::md {
public:
    explicit rc_md(uct::component &c) : component_(c)
    {
        attr_.flags            = uct::md_flag::REG | uct::md_flag::NEED_RKEY;
        attr_.max_reg          = SIZE_MAX;
        attr_.rkey_packed_size = sizeof(packed_rkey);
        attr_.reg_overhead_s   = 100e-9;
    }

    const uct::md_attr &attr() const override { return attr_; }
    uct::component &owner() const override { return component_; }
    const char *name() const override { return rc_tl; }

    ucs_status_t query_tl_resources(std::vector<uct::tl_resource> *out) override
    {
        uct::tl_resource r{};
        uct::copy_resource_name(r.tl_name, rc_tl);
        uct::copy_resource_name(r.dev_name, rc_dev);
        r.type = uct::device_type::NET;
        out->assign({r});
        return UCS_OK;
    }

    ucs_status_t iface_open(uct::worker &worker, const uct::iface_params &params,
                            uct::iface **iface_p) override
    {
        if (std::strcmp(params.tl_name, rc_tl) != 0) {
            return UCS_ERR_NO_DEVICE;
        }
        auto iface          = std::make_unique<rc_iface>(*this, worker, params);
        ucs_status_t status = iface->init();
        if (status != UCS_OK) {
            return status;
        }
        *iface_p = iface.release();
        return UCS_OK;
    }

    ucs_status_t mem_reg(void *address, size_t length, unsigned, uct::mem_h *memh_p) override
    {
        auto *r = new region{random_u64(), reinterpret_cast<uintptr_t>(address), length};
        std::lock_guard<std::mutex> guard(regions_lock);
        regions.emplace(r->key, *r);
        *memh_p = r;
        return UCS_OK;
    }

    ucs_status_t mem_dereg(uct::mem_h memh) override
    {
        auto *r = static_cast<region *>(memh);
        {
            std::lock_guard<std::mutex> guard(regions_lock);
            regions.erase(r->key);
        }
        delete r;
        return UCS_OK;
    }

    ucs_status_t mkey_pack(uct::mem_h memh, void *buffer) override
    {
        const auto *r = static_cast<const region *>(memh);
        const packed_rkey packed{rkey_magic, 0, r->key, r->address, r->length};
        std::memcpy(buffer, &packed, sizeof(packed));
        return UCS_OK;
    }

private:
    uct::component &component_;
    uct::md_attr attr_;
};

class rc_component final : public uct::component {
public:
    const char *name() const override { return rc_tl; }

    ucs_status_t query_md_resources(std::vector<uct::md_resource> *out) override
    {
        if (!rc_enabled) {
            return UCS_OK;
        }
        return uct::single_md_resource(rc_tl, out);
    }

    ucs_status_t md_open(const char *md_name, uct::md **md_p) override
    {
        if (std::strcmp(md_name, rc_tl) != 0) {
            return UCS_ERR_NO_DEVICE;
        }
        *md_p = new rc_md(*this);
        return UCS_OK;
    }

    ucs_status_t rkey_unpack(const void *buffer, size_t length, uct::rkey_bundle *rkey_p) override
    {
        ucs::wire_reader r(buffer, length);
        packed_rkey packed;
        if (!r.get(&packed) || (packed.magic != rkey_magic)) {
            return UCS_ERR_INVALID_PARAM;
        }
        auto *key      = new remote_key{packed.key, packed.address, packed.length};
        rkey_p->rkey   = reinterpret_cast<uct::rkey_t>(key);
        rkey_p->handle = key;
        return UCS_OK;
    }

    void rkey_release(const uct::rkey_bundle &rkey) override
    {
        delete static_cast<remote_key *>(rkey.handle);
    }
};

rc_component the_rc_component;

} // namespace

UCT_REGISTER_TRANSPORT(ucp_test_rc, &the_rc_component)

} // namespace ucp_test
