/*
 * Buffers in memory the CPU cannot touch (CUDA), through every UCP send and
 * receive path, on a machine without a GPU: an emulated device
 * (emulated_device.h) whose memory faults on any CPU access stands in for
 * GPU memory, and whose copier stands in for the CUDA module's. What runs
 * here is the library's staging (bcopy fragments packed and unpacked
 * through the copier, a rendezvous pulled into a bounce buffer), the
 * protocol choice for device memory and the error statuses; the CUDA
 * module's own transports run in tests/cuda on a GPU machine.
 */
#include "emulated_device.h"
#include "ucp_peer.h"

#include <ucp/proto/select.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace ucp_test;

namespace {

constexpr size_t device_size   = 8u << 20;
constexpr size_t sender_area   = 0; /* device offsets of each side's buffers */
constexpr size_t receiver_area = 4u << 20;

enum class kind : uint8_t { host, device };

struct transfer {
    size_t size;
    kind from;
    kind to;
    bool iov; /* three entries on both sides */
};

/* Eager short and single fragments, several fragments, and rendezvous
 * (16 KiB on shared memory, 64 KiB on tcp), device on either side. */
std::vector<transfer> transfers()
{
    std::vector<transfer> list;
    for (size_t size :
         {size_t(1), size_t(64), size_t(3000), size_t(20000), size_t(100000), size_t(1) << 20}) {
        list.push_back({size, kind::device, kind::device, false});
        list.push_back({size, kind::device, kind::host, false});
        list.push_back({size, kind::host, kind::device, false});
    }
    list.push_back({100000, kind::device, kind::device, true});
    return list;
}

/* Three iov entries over `buffer`, uneven. */
std::vector<ucp_dt_iov_t> split3(char *buffer, size_t size)
{
    const size_t a = size / 5, b = size / 2;
    return {{buffer, a}, {buffer + a, b}, {buffer + a + b, size - a - b}};
}

ucs_status_t send_case(peer &p, const transfer &t, char *buffer, ucp_tag_t tag)
{
    ucp_request_param_t param{};
    if (!t.iov) {
        return p.wait(ucp_tag_send_nbx(p.ep, buffer, t.size, tag, &param));
    }
    std::vector<ucp_dt_iov_t> iov = split3(buffer, t.size);
    param.op_attr_mask            = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype                = ucp_dt_make_iov();
    return p.wait(ucp_tag_send_nbx(p.ep, iov.data(), iov.size(), tag, &param));
}

ucs_status_t recv_case(peer &p, const transfer &t, char *buffer, ucp_tag_t tag)
{
    ucp_tag_recv_info_t info{};
    if (!t.iov) {
        return p.recv(buffer, t.size, tag, ~ucp_tag_t(0), &info);
    }
    std::vector<ucp_dt_iov_t> iov = split3(buffer, t.size);
    return p.recv(iov.data(), iov.size(), tag, ~ucp_tag_t(0), &info, ucp_dt_make_iov());
}

/* The receiving child: each message into the kind of buffer the case
 * names, its content checked, a result byte back (1: good). */
int receive_transfers(int fd, const char *tls, emulated_device &dev)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<char> host(size_t(1) << 20);
    const std::vector<transfer> list = transfers();
    for (size_t i = 0; i < list.size(); ++i) {
        const transfer &t = list[i];
        char *dest        = (t.to == kind::device) ? dev.device(receiver_area) : host.data();
        char *view        = (t.to == kind::device) ? dev.shadow(dest) : dest;
        std::memset(view, 0, t.size);
        const unsigned copies     = emulated_device::copies();
        const ucs_status_t status = recv_case(p, t, dest, i);
        const bool staged         = (t.to == kind::host) || (emulated_device::copies() > copies);
        const uint8_t good        = (status == UCS_OK) && staged &&
                             check_pattern(reinterpret_cast<uint8_t *>(view), t.size, i);
        if (!good) {
            std::fprintf(stderr, "child: transfer %zu (%zu bytes): %s, staged %d\n", i, t.size,
                         ucs_status_string(status), int(staged));
        }
        TEST_CHILD_CHECK(test::send_value(fd, good));
    }
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("tagged messages between device and host buffers, staged through the copier",
          "[ucp_memtype]")
{
    emulated_device dev(device_size);
    REQUIRE(dev.installed());
    for (const char *tls : {"posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        test::child_process child([tls, &dev](int fd) { return receive_transfers(fd, tls, dev); });
        REQUIRE(p.connect_over(child.fd()));
        std::vector<char> host(size_t(1) << 20);
        const std::vector<transfer> list = transfers();
        for (size_t i = 0; i < list.size(); ++i) {
            const transfer &t = list[i];
            INFO("transfer " << i << ": " << t.size << " bytes, iov " << t.iov);
            char *src  = (t.from == kind::device) ? dev.device(sender_area) : host.data();
            char *view = (t.from == kind::device) ? dev.shadow(src) : src;
            fill_pattern(reinterpret_cast<uint8_t *>(view), t.size, i);
            const unsigned copies = emulated_device::copies();
            CHECK(send_case(p, t, src, i) == UCS_OK);
            if (t.from == kind::device) {
                CHECK(emulated_device::copies() > copies); /* packed by the copier */
            }
            uint8_t good = 0;
            REQUIRE(p.recv_value_progress(child.fd(), &good));
            CHECK(good == 1);
        }
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

namespace {

constexpr size_t piece_size = 128 * 1024;
/* Every size here a rendezvous (tcp's model starts it above them). */
const settings piece_settings = {{"RNDV_FRAG_SIZE", "host:128K,cuda:4M"}, {"RNDV_THRESH", "64K"}};

/* The receiving child of the pieces test: each message into device memory;
 * back go whether it arrived whole with every bounce buffer given back, and
 * how many asynchronous copies moved it on. */
int receive_in_pieces(int fd, const char *tls, emulated_device &dev,
                      const std::vector<size_t> &sizes)
{
    peer p;
    TEST_CHILD_CHECK(p.init_with(tls, UCP_FEATURE_TAG, piece_settings) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    for (size_t i = 0; i < sizes.size(); ++i) {
        char *dest = dev.device(receiver_area);
        auto *view = reinterpret_cast<uint8_t *>(dev.shadow(dest));
        std::memset(view, 0, sizes[i]);
        const unsigned started = emulated_device::copies_started();
        ucp_tag_recv_info_t info{};
        const ucs_status_t status = p.recv(dest, sizes[i], i, ~ucp_tag_t(0), &info);
        const uint32_t pieces     = emulated_device::copies_started() - started;
        const uint8_t good        = (status == UCS_OK) && check_pattern(view, sizes[i], i) &&
                             (emulated_device::bounces_held() == 0);
        TEST_CHILD_CHECK(test::send_value(fd, good) && test::send_value(fd, pieces));
    }
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("a rendezvous into device memory over a host transport moves on to the device in "
          "pieces of UCX_RNDV_FRAG_SIZE, each while the next is pulled",
          "[ucp_memtype]")
{
    emulated_device dev(device_size);
    REQUIRE(dev.installed());
    /* Whole pieces, a short last one, and fewer than three. */
    const std::vector<size_t> sizes = {size_t(1) << 20, (size_t(1) << 20) - 12345, 300000};
    for (const char *tls : {"posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init_with(tls, UCP_FEATURE_TAG, piece_settings) == UCS_OK);
        test::child_process child([tls, &dev, &sizes](int fd) {
            return receive_in_pieces(fd, tls, dev, sizes);
        });
        REQUIRE(p.connect_over(child.fd()));
        std::vector<char> host(size_t(1) << 20);
        for (size_t i = 0; i < sizes.size(); ++i) {
            /* From device memory (staged whole into a bounce buffer) and from host. */
            const bool from_device = (i % 2) == 0;
            INFO("message " << i << ": " << sizes[i] << " bytes from "
                            << (from_device ? "device" : "host"));
            char *src  = from_device ? dev.device(sender_area) : host.data();
            char *view = from_device ? dev.shadow(src) : src;
            fill_pattern(reinterpret_cast<uint8_t *>(view), sizes[i], i);
            ucp_request_param_t param{};
            CHECK(p.wait(ucp_tag_send_nbx(p.ep, src, sizes[i], i, &param)) == UCS_OK);
            CHECK(emulated_device::bounces_held() == 0);
            uint8_t good    = 0;
            uint32_t pieces = 0;
            REQUIRE(p.recv_value_progress(child.fd(), &good));
            REQUIRE(p.recv_value_progress(child.fd(), &pieces));
            CHECK(good == 1);
            CHECK(pieces == (sizes[i] + piece_size - 1) / piece_size);
        }
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

namespace {

struct am_log {
    ucp_worker_h worker = nullptr;
    char *dest          = nullptr; /* rendezvous data goes here */
    std::vector<uint8_t> eager;    /* what an eager handler saw */
    ucs_status_ptr_t request = nullptr;
    ucs_status_t status      = UCS_INPROGRESS;
    bool rndv                = false;
};

ucs_status_t am_handler(void *arg, const void *, size_t, void *data, size_t length,
                        const ucp_am_recv_param_t *param)
{
    auto *log = static_cast<am_log *>(arg);
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        auto *bytes = static_cast<const uint8_t *>(data);
        log->eager.assign(bytes, bytes + length);
        log->status = UCS_OK;
        return UCS_OK;
    }
    log->rndv = true;
    ucp_request_param_t rparam{};
    log->request = ucp_am_recv_data_nbx(log->worker, data, log->dest, length, &rparam);
    if (!UCS_PTR_IS_PTR(log->request)) {
        log->status  = UCS_PTR_STATUS(log->request);
        log->request = nullptr;
    }
    return UCS_OK;
}

} // namespace

TEST_CASE("stream and active messages carry device buffers", "[ucp_memtype]")
{
    emulated_device dev(device_size);
    REQUIRE(dev.installed());
    for (const char *tls : {"posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_STREAM | UCP_FEATURE_AM) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        char *src = dev.device(sender_area);
        char *dst = dev.device(receiver_area);

        SECTION("stream: device to device, many fragments") {
            const size_t size = 300000;
            fill_pattern(reinterpret_cast<uint8_t *>(dev.shadow(src)), size, 7);
            std::memset(dev.shadow(dst), 0, size);
            ucp_request_param_t sparam{};
            ucs_status_ptr_t sreq = ucp_stream_send_nbx(p.ep, src, size, &sparam);
            REQUIRE_FALSE(UCS_PTR_IS_ERR(sreq));
            ucp_request_param_t rparam{};
            rparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            rparam.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
            size_t length       = 0;
            CHECK(p.wait(ucp_stream_recv_nbx(p.ep, dst, size, &length, &rparam)) == UCS_OK);
            CHECK(p.wait(sreq) == UCS_OK);
            CHECK(check_pattern(reinterpret_cast<uint8_t *>(dev.shadow(dst)), size, 7));
        }

        SECTION("active messages: a device payload, eager and by rendezvous into device") {
            am_log log;
            log.worker = p.worker;
            log.dest   = dst;
            ucp_am_handler_param_t hparam{};
            hparam.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                                UCP_AM_HANDLER_PARAM_FIELD_ARG;
            hparam.id  = 3;
            hparam.cb  = am_handler;
            hparam.arg = &log;
            REQUIRE(ucp_worker_set_am_recv_handler(p.worker, &hparam) == UCS_OK);

            /* Device payload: packed through the copier, seen by the handler. */
            fill_pattern(reinterpret_cast<uint8_t *>(dev.shadow(src)), 5000, 8);
            ucp_request_param_t sparam{};
            CHECK(p.wait(ucp_am_send_nbx(p.ep, 3, nullptr, 0, src, 5000, &sparam)) == UCS_OK);
            REQUIRE(test::poll_until([&] { return log.status != UCS_INPROGRESS; },
                                     [&] { ucp_worker_progress(p.worker); }));
            CHECK(log.status == UCS_OK);
            CHECK(check_pattern(log.eager.data(), log.eager.size(), 8));
            CHECK(log.eager.size() == 5000);

            /* Host payload by rendezvous, fetched into device memory. */
            log.status = UCS_INPROGRESS;
            std::vector<uint8_t> host(200000);
            fill_pattern(host.data(), host.size(), 9);
            std::memset(dev.shadow(dst), 0, host.size());
            sparam.op_attr_mask   = UCP_OP_ATTR_FIELD_FLAGS;
            sparam.flags          = UCP_AM_SEND_FLAG_RNDV;
            ucs_status_ptr_t sreq = ucp_am_send_nbx(p.ep, 3, nullptr, 0, host.data(), host.size(),
                                                    &sparam);
            REQUIRE_FALSE(UCS_PTR_IS_ERR(sreq));
            REQUIRE(test::poll_until(
                [&] {
                return log.rndv && (log.request != nullptr || log.status != UCS_INPROGRESS);
                },
                [&] { ucp_worker_progress(p.worker); }));
            if (log.request != nullptr) {
                CHECK(p.wait(log.request) == UCS_OK);
            } else {
                CHECK(log.status == UCS_OK);
            }
            CHECK(p.wait(sreq) == UCS_OK);
            CHECK(check_pattern(reinterpret_cast<uint8_t *>(dev.shadow(dst)), host.size(), 9));
        }
    }
}

TEST_CASE("memory types: given by the caller, unsupported, invalid", "[ucp_memtype]")
{
    peer p;
    REQUIRE(p.init("posix,cma") == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    std::vector<uint8_t> buffer(64, 1);
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;

    /* Nothing loaded copies ROCm (or, with no GPU module, CUDA) memory. */
    for (ucs_memory_type_t type : {UCS_MEMORY_TYPE_ROCM, UCS_MEMORY_TYPE_CUDA}) {
        param.memory_type = type;
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, buffer.data(), buffer.size(), 1, &param)) ==
              UCS_ERR_UNSUPPORTED);
        CHECK(UCS_PTR_STATUS(ucp_tag_recv_nbx(p.worker, buffer.data(), buffer.size(), 1,
                                              ~ucp_tag_t(0), &param)) == UCS_ERR_UNSUPPORTED);
    }
    /* A value out of range. */
    const int bogus = 99;
    std::memcpy(&param.memory_type, &bogus, sizeof(bogus));
    CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, buffer.data(), buffer.size(), 1, &param)) ==
          UCS_ERR_INVALID_PARAM);

    /* With a device installed, a host buffer said to be host is not copied
     * through it, and one said to be device memory is. */
    emulated_device dev(device_size);
    REQUIRE(dev.installed());
    for (ucs_memory_type_t type : {UCS_MEMORY_TYPE_HOST, UCS_MEMORY_TYPE_CUDA}) {
        const unsigned copies = emulated_device::copies();
        param.memory_type     = type;
        CHECK(p.wait(ucp_tag_send_nbx(p.ep, buffer.data(), buffer.size(), 2, &param)) == UCS_OK);
        std::vector<uint8_t> in(buffer.size());
        ucp_tag_recv_info_t info{};
        CHECK(p.recv(in.data(), in.size(), 2, ~ucp_tag_t(0), &info) == UCS_OK);
        CHECK(in == buffer);
        CHECK((emulated_device::copies() > copies) == (type == UCS_MEMORY_TYPE_CUDA));
    }
}

TEST_CASE("a failing staging copy fails the operation, not the process", "[ucp_memtype]")
{
    emulated_device dev(device_size);
    REQUIRE(dev.installed());
    peer p;
    REQUIRE(p.init("posix,cma") == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    char *bad = dev.device(receiver_area);
    dev.mark_faulty(bad, 4096);
    std::vector<uint8_t> host(3000, 5);

    /* Receiving into memory the copy engine fails on: an error, no data lost
     * for the next receive. */
    ucp_request_param_t param{};
    CHECK(p.wait(ucp_tag_send_nbx(p.ep, host.data(), host.size(), 4, &param)) == UCS_OK);
    ucp_tag_recv_info_t info{};
    CHECK(p.recv(bad, host.size(), 4, ~ucp_tag_t(0), &info) == UCS_ERR_IO_ERROR);

    /* Sending from it: the send fails before anything goes out, whether the
     * message is staged whole (one fragment) or per fragment. */
    for (size_t size : {size_t(3000), size_t(100000)}) {
        dev.mark_faulty(bad, size);
        CHECK(p.wait(ucp_tag_send_nbx(p.ep, bad, size, 5, &param)) == UCS_ERR_IO_ERROR);
    }

    /* The ep still works. */
    CHECK(p.wait(ucp_tag_send_nbx(p.ep, host.data(), host.size(), 6, &param)) == UCS_OK);
    std::vector<uint8_t> in(host.size());
    CHECK(p.recv(in.data(), in.size(), 6, ~ucp_tag_t(0), &info) == UCS_OK);
    CHECK(in == host);
}

TEST_CASE("device memory is staged: no short or zero-copy protocol, rendezvous on a lane "
          "for it or staged whole over a host one",
          "[ucp_memtype]")
{
    using ucp::proto::operation;
    using ucp::proto::protocol;
    ucp::ep_thresholds t{};
    t.max_eager_short   = 100;
    t.am_max_bcopy      = 8192;
    t.max_eager_only    = 8192 - sizeof(ucp_tag_t);
    t.first_frag        = 8000;
    t.middle_frag       = 8100;
    t.sync_first_frag   = 7990;
    t.rndv              = 16384;
    t.am_rndv           = 16384;
    t.zcopy             = 2000;
    t.zcopy_frag        = 64512;
    t.am_zcopy_frag     = 64512;
    t.zcopy_max_hdr     = 128;
    t.zcopy_max_iov     = 6;
    const uint64_t host = 1ull << UCS_MEMORY_TYPE_HOST;
    const uint64_t cuda = 1ull << UCS_MEMORY_TYPE_CUDA;
    const ucp::proto::key key{operation::TAG, 0, ucp::dt::dt_class::contig, UCS_MEMORY_TYPE_CUDA};
    auto first = [&](uint64_t rndv_types, size_t length) {
        ucp::proto::selection sel;
        ucp::proto::build({t, rndv_types}, key, &sel);
        return (sel.count == 0) ? protocol::last : sel.find(length).candidates[0];
    };

    /* No copier: nothing moves device memory. */
    CHECK(first(host, 1) == protocol::last);

    emulated_device dev(device_size);
    REQUIRE(dev.installed());
    CHECK(first(host, 8) == protocol::EAGER_BCOPY_SINGLE);
    CHECK(first(host, 4000) == protocol::EAGER_BCOPY_SINGLE);
    CHECK(first(host, 9000) == protocol::EAGER_BCOPY_MULTI);
    CHECK(first(0, 1 << 20) == protocol::EAGER_BCOPY_MULTI); /* no rendezvous lane */
    CHECK(first(host, 1 << 20) == protocol::RNDV);           /* staged, host lane */
    CHECK(first(host | cuda, 1 << 20) == protocol::RNDV);    /* a lane for device memory */
    CHECK(first(host | cuda, 8) == protocol::EAGER_BCOPY_SINGLE);
}

TEST_CASE("put and get with device memory: staged through host, or on a transport that moves it",
          "[ucp_memtype]")
{
    emulated_device dev(device_size);
    REQUIRE(dev.installed());
    const char *tls = GENERATE("posix,cma", "tcp");
    INFO("UCX_TLS=" << tls);
    peer p;
    REQUIRE(p.init(tls, UCP_FEATURE_RMA) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);

    /* A key of device memory: no transport here reaches it. */
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address    = dev.device(receiver_area);
    mp.length     = 4096;
    ucp_mem_h memh;
    REQUIRE(ucp_mem_map(p.context, &mp, &memh) == UCS_OK);
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE;
    REQUIRE(ucp_mem_query(memh, &attr) == UCS_OK);
    CHECK(attr.mem_type == UCS_MEMORY_TYPE_CUDA);
    void *packed;
    size_t packed_size;
    REQUIRE(ucp_rkey_pack(p.context, memh, &packed, &packed_size) == UCS_OK);
    ucp_rkey_h device_key;
    REQUIRE(ucp_ep_rkey_unpack(p.ep, packed, &device_key) == UCS_OK);
    ucp_rkey_buffer_release(packed);

    std::vector<uint8_t> host(4096, 3);
    const auto device_addr = reinterpret_cast<uint64_t>(dev.device(receiver_area));
    ucp_request_param_t param{};
    CHECK(UCS_PTR_STATUS(ucp_put_nbx(p.ep, host.data(), 64, device_addr, device_key, &param)) ==
          UCS_ERR_UNSUPPORTED);
    CHECK(UCS_PTR_STATUS(ucp_get_nbx(p.ep, host.data(), 64, device_addr, device_key, &param)) ==
          UCS_ERR_UNSUPPORTED);

    /* Host memory, reached directly or by cma: a put from a device buffer
     * and a get into one go through a host bounce buffer. */
    ucp_mem_h host_memh;
    mp.address = host.data();
    REQUIRE(ucp_mem_map(p.context, &mp, &host_memh) == UCS_OK);
    REQUIRE(ucp_rkey_pack(p.context, host_memh, &packed, &packed_size) == UCS_OK);
    ucp_rkey_h host_key;
    REQUIRE(ucp_ep_rkey_unpack(p.ep, packed, &host_key) == UCS_OK);
    ucp_rkey_buffer_release(packed);
    const auto host_addr = reinterpret_cast<uint64_t>(host.data());
    fill_pattern(reinterpret_cast<uint8_t *>(dev.shadow(dev.device(sender_area))), 64, 12);
    CHECK(p.wait(ucp_put_nbx(p.ep, dev.device(sender_area), 64, host_addr, host_key, &param)) ==
          UCS_OK);
    CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
    CHECK(check_pattern(host.data(), 64, 12));
    std::memset(dev.shadow(dev.device(sender_area)), 0, 64);
    fill_pattern(host.data(), 64, 13);
    CHECK(p.wait(ucp_get_nbx(p.ep, dev.device(sender_area), 64, host_addr, host_key, &param)) ==
          UCS_OK);
    CHECK(check_pattern(reinterpret_cast<uint8_t *>(dev.shadow(dev.device(sender_area))), 64, 13));
    std::vector<uint8_t> other(64, 9);
    CHECK(p.wait(ucp_put_nbx(p.ep, other.data(), 64, host_addr, host_key, &param)) == UCS_OK);
    CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
    CHECK(std::equal(other.begin(), other.end(), host.begin()));

    ucp_rkey_destroy(host_key);
    ucp_rkey_destroy(device_key);
    CHECK(ucp_mem_unmap(p.context, host_memh) == UCS_OK);
    CHECK(ucp_mem_unmap(p.context, memh) == UCS_OK);
}
