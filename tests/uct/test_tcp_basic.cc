/*
 * tcp transport: resources, configuration checks, the md's keys, the send
 * queue and pending queue on their own, and traffic between two ifaces of
 * one process (wakeup, refused connections).
 */
#include <catch2/catch.hpp>

#include "uct_test_util.h"

#include <uct/tcp/tcp_config.h>
#include <uct/tcp/tcp_iface.h>
#include <uct/tcp/tcp_md.h>
#include <uct/base/pending_queue.h>
#include <uct/tcp/tcp_tx_queue.h>
#include <uct/tcp/tcp_wire.h>
#include <ucs/debug/log.h>

#include "tcp_test_util.h"
#include "two_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace {

using test::counted_comp;

uct::component *find_tcp_component()
{
    for (uct::component *c : uct::components()) {
        if (std::string(c->name()) == "tcp") {
            return c;
        }
    }
    return nullptr;
}

struct am_log {
    std::vector<std::vector<uint8_t>> messages;
};

ucs_status_t record_am(void *arg, void *data, size_t length, unsigned)
{
    auto *log = static_cast<am_log *>(arg);
    auto *p   = static_cast<uint8_t *>(data);
    log->messages.emplace_back(p, p + length);
    return UCS_OK;
}

size_t pack_string(void *dest, void *arg)
{
    auto *s = static_cast<std::string *>(arg);
    std::memcpy(dest, s->data(), s->size());
    return s->size();
}

} // namespace

TEST_CASE("tcp lists one NET resource per interface, loopback included", "[tcp]")
{
    uct::component *comp = find_tcp_component();
    REQUIRE(comp != nullptr);

    std::vector<uct::md_resource> mds;
    REQUIRE(comp->query_md_resources(&mds) == UCS_OK);
    REQUIRE(mds.size() == 1);
    CHECK(std::string(mds[0].md_name) == "tcp");

    uct::md *md = nullptr;
    CHECK(comp->md_open("no-such-md", &md) == UCS_ERR_NO_DEVICE);
    REQUIRE(comp->md_open("tcp", &md) == UCS_OK);
    std::unique_ptr<uct::md> md_owner(md);

    std::vector<uct::tl_resource> tls;
    REQUIRE(md->query_tl_resources(&tls) == UCS_OK);
    std::set<std::string> devices;
    bool have_lo = false;
    for (const auto &tl : tls) {
        CHECK(std::string(tl.tl_name) == "tcp");
        CHECK(tl.type == uct::device_type::NET);
        CHECK(devices.insert(tl.dev_name).second); /* one per interface */
        have_lo |= (std::string(tl.dev_name) == "lo");
    }
    CHECK(have_lo);

    CHECK(md->attr().rkey_packed_size == sizeof(uct::tcp::packed_rkey));
    CHECK((md->attr().flags & uct::md_flag::REG) != 0);

    uct::worker worker(nullptr, UCS_THREAD_MODE_SINGLE);
    uct::iface_params params;
    params.tl_name    = "tcp";
    params.dev_name   = "no-such-if0";
    uct::iface *iface = nullptr;
    CHECK(md->iface_open(worker, params, &iface) == UCS_ERR_NO_DEVICE);
    params.dev_name = nullptr;
    CHECK(md->iface_open(worker, params, &iface) == UCS_ERR_NO_DEVICE);
    uct::worker multi(nullptr, UCS_THREAD_MODE_MULTI);
    params.dev_name = "lo";
    CHECK(md->iface_open(multi, params, &iface) == UCS_ERR_UNSUPPORTED);
}

TEST_CASE("tcp iface attributes and addresses", "[tcp]")
{
    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    const auto cfg = uct::tcp::default_tcp_config();
    const auto &a  = e.attr();

    using namespace uct::iface_flag;
    for (uint64_t flag : {AM_SHORT, AM_BCOPY, AM_ZCOPY, PENDING, PUT_SHORT, PUT_BCOPY, PUT_ZCOPY,
                          GET_BCOPY, GET_ZCOPY, CONNECT_TO_IFACE, ERRHANDLE_PEER_FAILURE}) {
        CHECK((a.flags & flag) != 0);
    }
    CHECK(a.am.max_short == cfg.max_short);
    CHECK(a.am.max_bcopy == cfg.tx_seg_size);
    CHECK(a.am.max_zcopy == cfg.max_zcopy);
    CHECK(a.am.max_iov == cfg.max_iov);
    CHECK(a.am.max_hdr == cfg.max_am_hdr);
    CHECK(a.iface_addr_len == sizeof(uct::tcp::iface_addr));
    CHECK(a.device_addr_len == sizeof(uct::tcp::device_addr_hdr) + 4);
    CHECK(a.perf.bandwidth_Bps > 0);
    CHECK(a.perf.latency_s > 0);
    CHECK((a.atomic64_fetch & uct::atomic_op_bit(uct::atomic_op::CSWAP)) != 0);

    int fd = -1;
    CHECK(e.iface().event_fd_get(&fd) == UCS_OK);
    CHECK(fd >= 0);

    auto addr = e.addresses();
    uint16_t port;
    std::memcpy(&port, addr.iface.data(), sizeof(port));
    CHECK(port != 0);
    CHECK(e.iface().is_reachable(addr.device.data(), addr.device.size(), addr.iface.data(),
                                 addr.iface.size()));

    /* Bytes from a peer are checked before use. */
    CHECK_FALSE(e.iface().is_reachable(addr.device.data(), addr.device.size() - 1,
                                       addr.iface.data(), addr.iface.size()));
    CHECK_FALSE(e.iface().is_reachable(addr.device.data(), addr.device.size(), addr.iface.data(),
                                       1));
    CHECK_FALSE(e.iface().is_reachable(nullptr, 0, nullptr, 0));
    auto bad      = addr;
    bad.device[0] = 5; /* no such family */
    CHECK_FALSE(e.iface().is_reachable(bad.device.data(), bad.device.size(), bad.iface.data(),
                                       bad.iface.size()));
    bad = addr;
    bad.device[8] ^= 0xff; /* loopback of another host */
    CHECK_FALSE(e.iface().is_reachable(bad.device.data(), bad.device.size(), bad.iface.data(),
                                       bad.iface.size()));
    uct::ep *ep = nullptr;
    CHECK(e.iface().ep_create_connected(addr.device.data(), 3, addr.iface.data(), addr.iface.size(),
                                        &ep) == UCS_ERR_INVALID_PARAM);
    uint16_t zero_port = 0;
    CHECK(e.iface().ep_create_connected(addr.device.data(), addr.device.size(), &zero_port,
                                        sizeof(zero_port), &ep) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("tcp configuration checks reject contradictions", "[tcp]")
{
    using uct::tcp::check_tcp_config;
    test::captured_log log;
    auto cfg = uct::tcp::default_tcp_config();
    CHECK(check_tcp_config(cfg) == UCS_OK);

    auto bad        = cfg;
    bad.tx_buf_size = bad.tx_seg_size;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad         = cfg;
    bad.max_iov = 0;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad.max_iov = 100;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad                = cfg;
    bad.zcopy_inflight = uct::tcp::tx_queue::MAX_ZCOPY_SLOTS + 1;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad           = cfg;
    bad.max_zcopy = size_t(1) << 33; /* frame length is 32 bits */
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad             = cfg;
    bad.rx_seg_size = 16;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad.rx_seg_size = size_t(1) << 32; /* receive offsets are 32 bits */
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad             = cfg;
    bad.tx_buf_size = size_t(1) << 32; /* so are the send queue's */
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad           = cfg;
    bad.max_short = 4;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad                 = cfg;
    bad.rma_outstanding = 0;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad.rma_outstanding = uct::tcp::MAX_RMA_OUTSTANDING + 1; /* reply room per connection */
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad.rma_outstanding = uct::tcp::MAX_RMA_OUTSTANDING;
    CHECK(check_tcp_config(bad) == UCS_OK);
    bad          = cfg;
    bad.tx_batch = 0;
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad          = cfg;
    bad.rx_lowat = size_t(1) << 31; /* SO_RCVLOWAT takes an int */
    CHECK(check_tcp_config(bad) == UCS_ERR_INVALID_PARAM);
    bad.rx_lowat = 0; /* off */
    CHECK(check_tcp_config(bad) == UCS_OK);

    uct::tcp::tcp_md md;
    uct::worker worker(nullptr, UCS_THREAD_MODE_SINGLE);
    uct::iface_params params;
    params.dev_name   = "lo";
    uct::iface *iface = nullptr;
    bad               = cfg;
    bad.max_get_iov   = 0;
    CHECK(md.iface_open(worker, params, bad, &iface) == UCS_ERR_INVALID_PARAM);
    CHECK(iface == nullptr);

    /* Each refusal says which variable is wrong. */
    std::string text = log.text();
    for (const char *name :
         {"UCX_TCP_TX_BUF_SIZE", "UCX_TCP_MAX_IOV", "UCX_TCP_ZCOPY_INFLIGHT", "UCX_TCP_MAX_ZCOPY",
          "UCX_TCP_RX_SEG_SIZE", "UCX_TCP_MAX_SHORT", "UCX_TCP_MAX_GET_IOV",
          "UCX_TCP_SNDBUF, RCVBUF and RX_LOWAT", "TX_BATCH"}) {
        INFO(name);
        CHECK(text.find(name) != std::string::npos);
    }
}

TEST_CASE("tcp md registers regions and unpacks only valid keys", "[tcp]")
{
    uct::tcp::tcp_md md;
    uct::component &comp = md.owner();
    std::vector<uint8_t> buf(4096);

    uct::mem_h memh = nullptr;
    CHECK(md.mem_reg(nullptr, 10, 0, &memh) == UCS_ERR_INVALID_PARAM);
    CHECK(md.mem_reg(buf.data(), 0, 0, &memh) == UCS_ERR_INVALID_PARAM);
    REQUIRE(md.mem_reg(buf.data() + 1024, 2048, 0, &memh) == UCS_OK);

    std::vector<uint8_t> packed(md.attr().rkey_packed_size);
    REQUIRE(md.mkey_pack(memh, packed.data()) == UCS_OK);

    uct::rkey_bundle rkey;
    REQUIRE(comp.rkey_unpack(packed.data(), packed.size(), &rkey) == UCS_OK);
    const uct::tcp::tcp_rkey *key = uct::tcp::rkey_from(rkey.rkey);
    REQUIRE(key != nullptr);
    auto base = reinterpret_cast<uint64_t>(buf.data() + 1024);
    CHECK(key->address == base);
    CHECK(key->length == 2048);
    CHECK(key->covers(base, 2048));
    CHECK(key->covers(base + 2047, 1));
    CHECK_FALSE(key->covers(base + 2047, 2));
    CHECK_FALSE(key->covers(base - 1, 1));
    CHECK_FALSE(key->covers(base + 8, UINT64_MAX));

    /* The target side checks its own record, whatever the key said. */
    CHECK(md.region_ptr(key->region_id, base, 2048) == buf.data() + 1024);
    CHECK(md.region_ptr(key->region_id, base + 100, 8) == buf.data() + 1124);
    CHECK(md.region_ptr(key->region_id, base + 2041, 8) == nullptr);
    CHECK(md.region_ptr(key->region_id, base - 8, 8) == nullptr);
    CHECK(md.region_ptr(key->region_id, base + 8, UINT64_MAX - 4) == nullptr);
    CHECK(md.region_ptr(key->region_id + 1, base, 8) == nullptr);

    /* Region ids are the regions' secrets: a peer holding one key cannot
     * name the next region by counting (they used to be sequential). */
    std::vector<uint64_t> ids;
    std::vector<uct::mem_h> more(64);
    for (uct::mem_h &h : more) {
        REQUIRE(md.mem_reg(buf.data(), 64, 0, &h) == UCS_OK);
        ids.push_back(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h)));
    }
    for (size_t i = 1; i < ids.size(); ++i) {
        CHECK(ids[i] - ids[i - 1] != 1);
        CHECK(md.region_ptr(ids[i - 1] + 1, reinterpret_cast<uint64_t>(buf.data()), 8) == nullptr);
    }
    for (uct::mem_h h : more) {
        CHECK(md.mem_dereg(h) == UCS_OK);
    }

    /* Garbage keys. */
    uct::rkey_bundle junk;
    CHECK(comp.rkey_unpack(packed.data(), packed.size() - 1, &junk) == UCS_ERR_INVALID_PARAM);
    CHECK(comp.rkey_unpack(nullptr, packed.size(), &junk) == UCS_ERR_INVALID_PARAM);
    std::vector<uint8_t> noise(packed.size());
    for (size_t i = 0; i < noise.size(); ++i) {
        noise[i] = uint8_t(i * 37 + 11);
    }
    CHECK(comp.rkey_unpack(noise.data(), noise.size(), &junk) == UCS_ERR_INVALID_PARAM);
    uct::tcp::packed_rkey forged;
    std::memcpy(&forged, packed.data(), sizeof(forged));
    forged.length = 0;
    CHECK(comp.rkey_unpack(&forged, sizeof(forged), &junk) == UCS_ERR_INVALID_PARAM);
    forged.length  = 16;
    forged.address = UINT64_MAX - 4;
    CHECK(comp.rkey_unpack(&forged, sizeof(forged), &junk) == UCS_ERR_INVALID_PARAM);
    CHECK(uct::tcp::rkey_from(0) == nullptr);

    comp.rkey_release(rkey);
    CHECK(md.mem_dereg(memh) == UCS_OK);
    CHECK(md.mem_dereg(memh) == UCS_ERR_INVALID_PARAM);
    CHECK(md.mkey_pack(memh, packed.data()) == UCS_ERR_INVALID_PARAM);
    CHECK(md.region_ptr(reinterpret_cast<uintptr_t>(memh), base, 8) == nullptr);
}

/* The pool an iface gives its connections' send queues, `bytes` each. */
static void init_buffer_pool(uct::tcp::buffer_pool &pool, size_t bytes)
{
    REQUIRE(pool.init("test_tx_buffers", bytes) == UCS_OK);
}

TEST_CASE("tcp tx queue keeps buffered bytes and zero-copy segments in order", "[tcp]")
{
    uct::tcp::buffer_pool pool;
    init_buffer_pool(pool, 64);
    uct::tcp::tx_queue q;
    {
        /* Offsets are 32-bit, slot counters and max_iov 16-bit. */
        uct::tcp::tx_queue big;
        CHECK(big.init(pool, size_t(1) << 32, 2, 4) == UCS_ERR_INVALID_PARAM);
        CHECK(big.init(pool, 64, 2, 4, 1, (size_t(1) << 32) - 64) == UCS_ERR_INVALID_PARAM);
        CHECK(big.init(pool, 64, 2, 4, UINT16_MAX) == UCS_ERR_INVALID_PARAM);
        CHECK(big.init(pool, 64, 2, size_t(UINT16_MAX) + 1) == UCS_ERR_INVALID_PARAM);
    }
    REQUIRE(q.init(pool, 64, 2, 4) == UCS_OK);
    CHECK(q.empty());
    CHECK_FALSE(q.holds_buffer()); /* taken only when a send needs it */

    auto put = [&](const char *s) {
        size_t n   = std::strlen(s);
        uint8_t *p = q.reserve(n);
        REQUIRE(p != nullptr);
        std::memcpy(p, s, n);
        q.commit(n);
    };
    auto flatten = [&]() {
        struct iovec vec[uct::tcp::tx_queue::MAX_GATHER];
        size_t total = 0;
        size_t n     = q.gather(vec, uct::tcp::tx_queue::MAX_GATHER, &total);
        std::string s;
        for (size_t i = 0; i < n; ++i) {
            s.append(static_cast<const char *>(vec[i].iov_base), vec[i].iov_len);
        }
        CHECK(s.size() == total);
        return s;
    };

    counted_comp comp;
    const char zc1[] = "zero", zc2[] = "copy";
    uct::iov iovs[2] = {{zc1, 4, nullptr}, {zc2, 4, nullptr}};

    put("head-");
    REQUIRE(q.zcopy_room());
    uint64_t ticket = q.push_zcopy(iovs, 2, nullptr);
    CHECK(q.set_zcopy_comp(ticket, &comp));
    put("-tail");
    CHECK(flatten() == "head-zerocopy-tail");
    CHECK(q.end_position() == 18); /* where a flush issued now completes */

    /* A byte budget cuts the entry that reaches it, buffered or zero-copy. */
    {
        struct iovec vec[uct::tcp::tx_queue::MAX_GATHER];
        size_t total = 0;
        CHECK(q.gather(vec, uct::tcp::tx_queue::MAX_GATHER, &total, 1) == 1);
        CHECK(total == 1); /* "h" */
        CHECK(vec[0].iov_len == 1);
        CHECK(q.gather(vec, uct::tcp::tx_queue::MAX_GATHER, &total, 7) == 2);
        CHECK(total == 7); /* "head-" and "ze" */
        CHECK(vec[1].iov_len == 2);
        CHECK(std::memcmp(vec[1].iov_base, "ze", 2) == 0);
        CHECK(q.gather(vec, uct::tcp::tx_queue::MAX_GATHER, &total, 13) == 3);
        CHECK(total == 13); /* the budget is met exactly */
        CHECK(q.gather(vec, uct::tcp::tx_queue::MAX_GATHER, &total, 14) == 4);
        CHECK(total == 14); /* and "-" of "-tail" */
        CHECK(q.gather(vec, uct::tcp::tx_queue::MAX_GATHER, &total) == 4);
        CHECK(total == 18); /* everything */
    }

    uct::completion *done[uct::tcp::tx_queue::MAX_ZCOPY_SLOTS];
    unsigned ndone = 0;
    q.consume(7, done, &ndone); /* "head-" and "ze" */
    CHECK(ndone == 0);
    CHECK(flatten() == "rocopy-tail");
    CHECK(q.end_position() == 18); /* a partly written segment counts its rest */
    q.consume(6, done, &ndone);    /* rest of the segment */
    REQUIRE(ndone == 1);
    CHECK(done[0] == &comp);
    CHECK_FALSE(q.set_zcopy_comp(ticket, &comp)); /* already written */
    CHECK(flatten() == "-tail");
    CHECK(q.holds_buffer());
    q.consume(5, done, &ndone);
    CHECK(q.empty());
    CHECK(q.bytes_sent() == 18);
    /* All written: the buffer is back in the pool for other connections. */
    CHECK_FALSE(q.holds_buffer());
    CHECK(pool.in_use() == 0);

    /* Full buffer, then room again after compaction. */
    CHECK(q.reserve(65) == nullptr);
    REQUIRE(q.reserve(60) != nullptr);
    q.commit(60);
    CHECK(q.reserve(10) == nullptr);
    ndone = 0;
    q.consume(20, done, &ndone);
    CHECK(q.reserve(20) != nullptr);

    /* Slots run out; clear hands back what was not written. */
    counted_comp c1, c2;
    REQUIRE(q.zcopy_room());
    q.push_zcopy(iovs, 1, &c1);
    REQUIRE(q.zcopy_room());
    q.push_zcopy(iovs, 0, &c2);
    CHECK(q.zcopy_full());
    CHECK_FALSE(q.zcopy_room());
    ndone = 0;
    q.clear(done, &ndone);
    CHECK(ndone == 2);
    CHECK(q.empty());
    CHECK_FALSE(q.holds_buffer());
}

TEST_CASE("tcp buffer pool keeps 16 idle buffers and unmaps the others", "[tcp]")
{
    constexpr size_t size = 64 * 1024 + 100;
    const unsigned keep   = uct::tcp::buffer_pool::KEEP_IDLE;
    uct::tcp::buffer_pool pool;
    REQUIRE(pool.init("test_buffers", size) == UCS_OK);
    CHECK(pool.size() >= size);
    std::vector<uint8_t *> buffers;
    for (unsigned i = 0; i < keep + 4; ++i) {
        uint8_t *b = pool.get();
        REQUIRE(b != nullptr);
        std::memset(b, 0x5a, size);
        buffers.push_back(b);
    }
    CHECK(pool.in_use() == keep + 4);
    for (uint8_t *b : buffers) {
        pool.put(b);
    }
    CHECK(pool.in_use() == 0);
    CHECK(pool.idle() == keep);
    /* The first `keep` returned wait in the pool, the later ones are gone:
     * mincore() on an unmapped range fails with ENOMEM. */
    unsigned char vec[32];
    for (unsigned i = 0; i < keep + 4; ++i) {
        CHECK((mincore(buffers[i], 4096, vec) == 0) == (i < keep));
    }
    /* Taken again: the last one that stayed. */
    uint8_t *again = pool.get();
    CHECK(again == buffers[keep - 1]);
    std::memset(again, 1, size);
    pool.put(again);
}

TEST_CASE("tcp tx queue keeps room for replies that sends cannot take", "[tcp]")
{
    /* 64 bytes and 1 zero-copy slot for sends, 40 bytes and 2 slots for replies. */
    uct::tcp::buffer_pool pool;
    init_buffer_pool(pool, 64 + 40);
    uct::tcp::tx_queue q;
    REQUIRE(q.init(pool, 64, 1, 2, 2, 40) == UCS_OK);
    const char data[] = "0123456789abcdef";
    uct::iov v{data, 16, nullptr};
    uct::completion *done[uct::tcp::tx_queue::MAX_ZCOPY_SLOTS];
    unsigned ndone = 0;

    /* Sends fill their 64 bytes and their slot... */
    REQUIRE(q.reserve(64) != nullptr);
    q.commit(64);
    CHECK(q.reserve(1) == nullptr);
    CHECK(q.send_room() == 0);
    REQUIRE(q.zcopy_room());
    q.push_zcopy(&v, 1, nullptr);
    CHECK(q.zcopy_full());
    CHECK_FALSE(q.reply_zcopy_full());

    /* ...and replies still fit, beyond them. */
    uint8_t *p = q.reserve_reply(24);
    REQUIRE(p != nullptr);
    std::memset(p, 'r', 24);
    q.commit(24);
    REQUIRE(q.zcopy_room(true));
    q.push_zcopy(&v, 1, nullptr, true);
    REQUIRE(q.reserve_reply(16) != nullptr);
    q.commit(16);
    REQUIRE(q.zcopy_room(true));
    q.push_zcopy(&v, 1, nullptr, true);
    CHECK(q.reply_zcopy_full());
    CHECK(q.reserve_reply(1) == nullptr); /* the reply room is spent too */
    CHECK(q.has_zcopy());

    /* Writing the sends' bytes frees room for sends again, only as much. */
    q.consume(64 + 16, done, &ndone); /* the buffered sends and the send segment */
    CHECK_FALSE(q.zcopy_full());
    CHECK(q.reply_zcopy_full());
    CHECK_FALSE(q.has_zcopy()); /* replies never reference caller memory */
    CHECK(q.send_room() == 64 - 40);
    CHECK(q.reserve(64 - 40 + 1) == nullptr);
    CHECK(q.reserve(64 - 40) != nullptr); /* compacted to the front */

    /* The reply segments leave in stream order, with no completion. */
    q.consume(24 + 16, done, &ndone);
    CHECK_FALSE(q.reply_zcopy_full());
    q.consume(16 + 16, done, &ndone);
    CHECK(ndone == 0);
    CHECK(q.empty());
    CHECK(q.send_room() == 64);
}

TEST_CASE("tcp pending queue is FIFO through the requests' own bytes", "[tcp]")
{
    uct::pending_queue q;
    uct::pending_req r[3];
    CHECK(q.empty());
    CHECK(q.pop_front() == nullptr);
    q.push_back(&r[0]);
    q.push_back(&r[1]);
    q.push_front(&r[2]);
    CHECK(q.pop_front() == &r[2]);
    CHECK(q.pop_front() == &r[0]);
    q.push_back(&r[2]);
    CHECK(q.pop_front() == &r[1]);
    CHECK(q.pop_front() == &r[2]);
    CHECK(q.empty());
}

TEST_CASE("tcp AM between two ifaces of one process, with flush", "[tcp]")
{
    test::uct_entity sender("tcp", "lo"), receiver("tcp", "lo");
    REQUIRE(sender.ok());
    REQUIRE(receiver.ok());
    am_log log;
    REQUIRE(receiver.iface().set_am_handler(3, record_am, &log, 0) == UCS_OK);

    uct::ep *ep = sender.connect(receiver.addresses());
    REQUIRE(ep != nullptr);
    auto pump = [&] {
        sender.progress();
        receiver.progress();
    };

    /* Usable at once: queued behind the handshake while connecting. */
    const char hello[] = "hello";
    CHECK(ep->am_short(3, 0x1122334455667788ull, hello, 5) == UCS_OK);
    std::string text = "bcopy payload";
    CHECK(ep->am_bcopy(3, pack_string, &text, 0) == ssize_t(text.size()));
    std::vector<uint8_t> big(100000);
    for (size_t i = 0; i < big.size(); ++i) {
        big[i] = uint8_t(i * 7);
    }
    uct::iov iov{big.data(), big.size(), nullptr};
    counted_comp zcomp;
    uint32_t hdr    = 0xabcdef01;
    ucs_status_t st = ep->am_zcopy(3, &hdr, sizeof(hdr), &iov, 1, 0, &zcomp);
    REQUIRE(((st == UCS_OK) || (st == UCS_INPROGRESS)));

    counted_comp fcomp;
    ucs_status_t fst = ep->flush(0, &fcomp);
    REQUIRE(((fst == UCS_OK) || (fst == UCS_INPROGRESS)));
    REQUIRE(test::poll_until(
        [&] { return (log.messages.size() == 3) && ((fst == UCS_OK) || fcomp.fired); }, pump));
    CHECK(fcomp.fired <= 1);
    CHECK(fcomp.last == UCS_OK);
    CHECK(zcomp.fired == ((st == UCS_OK) ? 0 : 1));

    REQUIRE(log.messages[0].size() == 13);
    uint64_t h;
    std::memcpy(&h, log.messages[0].data(), 8);
    CHECK(h == 0x1122334455667788ull);
    CHECK(std::memcmp(log.messages[0].data() + 8, hello, 5) == 0);
    CHECK(std::string(log.messages[1].begin(), log.messages[1].end()) == text);
    REQUIRE(log.messages[2].size() == sizeof(hdr) + big.size());
    CHECK(std::memcmp(log.messages[2].data(), &hdr, sizeof(hdr)) == 0);
    CHECK(std::memcmp(log.messages[2].data() + sizeof(hdr), big.data(), big.size()) == 0);

    /* Drained: flush is immediate, for the ep and the iface. */
    CHECK(ep->flush(0, nullptr) == UCS_OK);
    CHECK(sender.iface().flush(0, nullptr) == UCS_OK);

    /* Arguments are checked before anything is queued. */
    CHECK(ep->am_short(uct::AM_ID_MAX, 0, nullptr, 0) == UCS_ERR_INVALID_PARAM);
    std::vector<uint8_t> too_long(sender.attr().am.max_short);
    CHECK(ep->am_short(3, 0, too_long.data(), unsigned(too_long.size() - 7)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ep->am_zcopy(3, nullptr, 0, &iov, sender.attr().am.max_iov + 1, 0, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ep->am_zcopy(3, &hdr, unsigned(sender.attr().am.max_hdr + 1), &iov, 1, 0, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    uct::pending_req req{};
    req.func = [](uct::pending_req *) { return UCS_OK; };
    CHECK(ep->pending_add(&req, 0) == UCS_ERR_BUSY); /* there is room */

    /* An iface flush with a completion waits for every ep. */
    CHECK(ep->am_short(3, 1, nullptr, 0) == UCS_OK);
    counted_comp icomp;
    st = sender.iface().flush(0, &icomp);
    REQUIRE(((st == UCS_OK) || (st == UCS_INPROGRESS)));
    REQUIRE(test::poll_until([&] { return (st == UCS_OK) || (icomp.fired == 1); }, pump));
    CHECK(icomp.last == UCS_OK);
}

TEST_CASE("tcp wakeup: the event fd turns readable when a message arrives", "[tcp]")
{
    test::uct_entity sender("tcp", "lo"), receiver("tcp", "lo");
    REQUIRE(sender.ok());
    REQUIRE(receiver.ok());
    am_log log;
    REQUIRE(receiver.iface().set_am_handler(0, record_am, &log, 0) == UCS_OK);
    uct::ep *ep = sender.connect(receiver.addresses());
    REQUIRE(ep != nullptr);
    auto pump = [&] {
        sender.progress();
        receiver.progress();
    };

    REQUIRE(ep->am_short(0, 1, nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return log.messages.size() == 1; }, pump));
    REQUIRE(test::poll_until([&] { return ep->flush(0, nullptr) == UCS_OK; }, pump));

    int fd = -1;
    REQUIRE(receiver.iface().event_fd_get(&fd) == UCS_OK);
    REQUIRE(test::poll_until(
        [&] { return receiver.iface().event_arm(uct::event_flag::RECV) == UCS_OK; },
        [&] { receiver.progress(); }));

    REQUIRE(ep->am_short(0, 2, nullptr, 0) == UCS_OK);
    pollfd pfd{fd, POLLIN, 0};
    REQUIRE(::poll(&pfd, 1, 10000) == 1); /* woken by the data, not a timeout */
    CHECK(receiver.iface().event_arm(uct::event_flag::RECV) == UCS_ERR_BUSY);
    REQUIRE(test::poll_until([&] { return log.messages.size() == 2; },
                             [&] { receiver.progress(); }));
    CHECK(receiver.iface().event_arm(uct::event_flag::RECV) == UCS_OK);
}

namespace {

inline uint8_t stress_byte(uint64_t seq, size_t i)
{
    return uint8_t(seq * 29 + i * 3 + (i >> 7));
}

struct stress_receiver {
    std::vector<size_t> lengths; /* expected, by sequence */
    uint64_t next = 0;
    uint64_t bad  = 0;
};

ucs_status_t check_stress(void *arg, void *data, size_t length, unsigned)
{
    auto *r = static_cast<stress_receiver *>(arg);
    auto *p = static_cast<const uint8_t *>(data);
    bool ok = (r->next < r->lengths.size()) && (length == r->lengths[r->next]);
    for (size_t i = 0; ok && (i < length); ++i) {
        ok = (p[i] == stress_byte(r->next, i));
    }
    r->bad += !ok;
    ++r->next;
    return UCS_OK;
}

struct stress_pack {
    uint64_t seq;
    size_t length;
};

size_t pack_stress(void *dest, void *arg)
{
    auto *s = static_cast<stress_pack *>(arg);
    auto *p = static_cast<uint8_t *>(dest);
    for (size_t i = 0; i < s->length; ++i) {
        p[i] = stress_byte(s->seq, i);
    }
    return s->length;
}

} // namespace

TEST_CASE("tcp with tiny buffers: partial writes and large frames keep data intact", "[tcp]")
{
    auto cfg           = uct::tcp::default_tcp_config();
    cfg.sndbuf         = 4096; /* the kernel rounds these up a little */
    cfg.rcvbuf         = 4096;
    cfg.rx_seg_size    = 256; /* most frames take the large-frame path */
    cfg.tx_seg_size    = 1024;
    cfg.tx_buf_size    = 2048;
    cfg.zcopy_inflight = 3;
    cfg.max_poll       = 2;
    test::tuned_tcp sender("lo", cfg), receiver("lo", cfg);
    REQUIRE(sender.ok());
    REQUIRE(receiver.ok());
    stress_receiver r;
    REQUIRE(receiver.iface().set_am_handler(1, check_stress, &r, 0) == UCS_OK);
    uct::ep *ep = sender.connect(receiver.addresses());
    REQUIRE(ep != nullptr);
    auto pump = [&] {
        sender.progress();
        receiver.progress();
    };

    constexpr uint64_t count = 3000;
    const auto &attr         = sender.iface().attr();
    std::vector<std::vector<uint8_t>> zbufs(cfg.zcopy_inflight + 1);
    struct zslot : uct::completion {
        bool busy = false;
    };
    std::vector<zslot> zslots(zbufs.size());
    for (auto &z : zslots) {
        z.func = [](uct::completion *self) { static_cast<zslot *>(self)->busy = false; };
    }
    unsigned no_resource = 0;
    uint64_t lcg         = 12345;
    for (uint64_t seq = 0; seq < count; ++seq) {
        lcg           = lcg * 6364136223846793005ull + 1442695040888963407ull;
        unsigned kind = unsigned(lcg >> 60) % 3;
        size_t length;
        ucs_status_t st;
        do {
            if (kind == 0) {
                length = 8 + size_t(lcg >> 33) % (attr.am.max_short - 7);
                uint8_t payload[512];
                stress_pack arg{seq, length};
                pack_stress(payload, &arg);
                uint64_t hdr;
                std::memcpy(&hdr, payload, 8);
                st = ep->am_short(1, hdr, payload + 8, unsigned(length - 8));
            } else if (kind == 1) {
                length = size_t(lcg >> 33) % (attr.am.max_bcopy + 1);
                stress_pack arg{seq, length};
                ssize_t ret = ep->am_bcopy(1, pack_stress, &arg, 0);
                st          = (ret >= 0) ? ((size_t(ret) == length) ? UCS_OK : UCS_ERR_IO_ERROR) :
                                           ucs_status_t(ret);
            } else {
                length   = size_t(lcg >> 33) % 300000;
                zslot &z = zslots[seq % zslots.size()];
                REQUIRE(test::poll_until([&] { return !z.busy; }, pump));
                auto &buf = zbufs[seq % zbufs.size()];
                buf.resize(length);
                stress_pack arg{seq, length};
                pack_stress(buf.data(), &arg);
                size_t hdr      = std::min<size_t>(length, 5);
                size_t rest     = length - hdr;
                uct::iov iov[2] = {{buf.data() + hdr, rest / 2, nullptr},
                                   {buf.data() + hdr + rest / 2, rest - rest / 2, nullptr}};
                z.count         = 1;
                z.status        = UCS_OK;
                st              = ep->am_zcopy(1, buf.data(), unsigned(hdr), iov, 2, 0, &z);
                z.busy          = (st == UCS_INPROGRESS);
                if (st == UCS_INPROGRESS) {
                    st = UCS_OK;
                }
            }
            if (st == UCS_ERR_NO_RESOURCE) {
                ++no_resource;
                pump();
            }
        } while (st == UCS_ERR_NO_RESOURCE);
        REQUIRE(st == UCS_OK);
        r.lengths.push_back(length);
    }
    REQUIRE(test::poll_until([&] { return r.next == count; }, pump, std::chrono::seconds(120)));
    CHECK(r.bad == 0);
    CHECK(no_resource > 0); /* the small buffers did push back */
    REQUIRE(test::poll_until([&] { return ep->flush(0, nullptr) == UCS_OK; }, pump));
}

TEST_CASE("tcp over a non-loopback interface", "[tcp]")
{
    uct::tcp::tcp_md md;
    std::vector<uct::tl_resource> tls;
    REQUIRE(md.query_tl_resources(&tls) == UCS_OK);
    std::string dev;
    for (const auto &tl : tls) {
        if (std::string(tl.dev_name) != "lo") {
            dev = tl.dev_name;
            break;
        }
    }
    if (dev.empty()) {
        WARN("no network interface besides lo is up: nothing to test");
        return;
    }
    test::uct_entity a("tcp", dev), b("tcp", dev), lo("tcp", "lo");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(lo.ok());
    auto addr_b  = b.addresses();
    auto addr_lo = lo.addresses();
    CHECK(a.iface().is_reachable(addr_b.device.data(), addr_b.device.size(), addr_b.iface.data(),
                                 addr_b.iface.size()));
    /* Loopback and network devices do not mix. */
    CHECK_FALSE(a.iface().is_reachable(addr_lo.device.data(), addr_lo.device.size(),
                                       addr_lo.iface.data(), addr_lo.iface.size()));
    CHECK_FALSE(lo.iface().is_reachable(addr_b.device.data(), addr_b.device.size(),
                                        addr_b.iface.data(), addr_b.iface.size()));

    am_log log;
    REQUIRE(b.iface().set_am_handler(2, record_am, &log, 0) == UCS_OK);
    uct::ep *ep = a.connect(addr_b);
    REQUIRE(ep != nullptr);
    REQUIRE(ep->am_short(2, 42, nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return log.messages.size() == 1; },
                             [&] {
        a.progress();
        b.progress();
    }));
    uint64_t h;
    std::memcpy(&h, log.messages[0].data(), 8);
    CHECK(h == 42);
}

namespace {

size_t connections(test::uct_entity &e)
{
    auto *iface = dynamic_cast<uct::tcp::tcp_iface *>(&e.iface());
    return (iface != nullptr) ? iface->num_connections() : SIZE_MAX;
}

std::unique_ptr<uct::ep> make_ep(test::uct_entity &from, test::uct_entity &to)
{
    auto addr   = to.addresses();
    uct::ep *ep = nullptr;
    if (from.iface().ep_create_connected(addr.device.data(), addr.device.size(), addr.iface.data(),
                                         addr.iface.size(), &ep) != UCS_OK) {
        return nullptr;
    }
    return std::unique_ptr<uct::ep>(ep);
}

struct unpack_to {
    void *dest;
    size_t length;
};

void copy_out(void *arg, const void *data, size_t length)
{
    auto *u = static_cast<unpack_to *>(arg);
    std::memcpy(u->dest, data, std::min(length, u->length));
}

/* A get of 8 bytes through `ep`, waited for. */
ucs_status_t get_word(test::uct_entity &a, test::uct_entity &b, uct::ep *ep, uint64_t addr,
                      uct::rkey_t rkey, uint64_t *out)
{
    counted_comp comp;
    unpack_to u{out, sizeof(*out)};
    ucs_status_t st = ep->get_bcopy(copy_out, &u, sizeof(*out), addr, rkey, &comp);
    if (st != UCS_INPROGRESS) {
        return st;
    }
    test::poll_until([&] { return comp.fired > 0; },
                     [&] {
        a.progress();
        b.progress();
    });
    return (comp.fired > 0) ? comp.last : UCS_ERR_TIMED_OUT;
}

} // namespace

namespace {

/* Sender side of the flush test below: on the receiver's AM it sends a
 * zcopy AM back and flushes, from inside the handler, where the send is
 * queued rather than written (the connection is reading). */
struct send_on_am {
    uct::ep *ep = nullptr;
    std::vector<uint8_t> payload;
    counted_comp zcomp, fcomp;
    ucs_status_t zst = UCS_ERR_NO_MESSAGE, fst = UCS_ERR_NO_MESSAGE;
};

ucs_status_t send_and_flush(void *arg, void *, size_t, unsigned)
{
    auto *s = static_cast<send_on_am *>(arg);
    uct::iov iov{s->payload.data(), s->payload.size(), nullptr};
    s->zst = s->ep->am_zcopy(3, nullptr, 0, &iov, 1, 0, &s->zcomp);
    s->fst = s->ep->flush(0, &s->fcomp);
    return UCS_OK;
}

} // namespace

TEST_CASE("tcp flush after sends completes without the receiver's progress", "[tcp]")
{
    /* Sends are complete once the socket took them: a flush must not wait
     * for the peer to answer. A receiver that has all it expects may stop
     * progressing (UCP peers do at the end of a job). */
    test::uct_entity a("tcp", "lo"), b("tcp", "lo");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    am_log at_b;
    send_on_am sender;
    REQUIRE(a.iface().set_am_handler(1, send_and_flush, &sender, 0) == UCS_OK);
    REQUIRE(b.iface().set_am_handler(3, record_am, &at_b, 0) == UCS_OK);
    sender.payload.resize(32 * 1024);
    for (size_t i = 0; i < sender.payload.size(); ++i) {
        sender.payload[i] = uint8_t(i * 13 + 5);
    }
    auto pump = [&] {
        a.progress();
        b.progress();
    };

    auto ep_ab = make_ep(a, b);
    REQUIRE(ep_ab);
    sender.ep = ep_ab.get();
    REQUIRE(ep_ab->am_short(3, 0, nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return at_b.messages.size() == 1; }, pump));
    auto ep_ba = make_ep(b, a); /* the same connection, the other way */
    REQUIRE(ep_ba);
    REQUIRE(ep_ba->am_short(1, 0, nullptr, 0) == UCS_OK);
    /* Only a progresses from here: b's AM reaches a's handler, whose sends
     * wait in the queue until a's read finishes. */
    REQUIRE(test::poll_until([&] { return sender.fst != UCS_ERR_NO_MESSAGE; },
                             [&] { a.progress(); }));
    REQUIRE(sender.zst == UCS_INPROGRESS);
    REQUIRE(sender.fst == UCS_INPROGRESS);
    REQUIRE(test::poll_until([&] { return sender.fcomp.fired == 1; }, [&] { a.progress(); },
                             std::chrono::seconds(10)));
    CHECK(sender.fcomp.last == UCS_OK);
    CHECK(sender.zcomp.fired == 1);
    CHECK(at_b.messages.size() == 1);

    /* What the flush covered arrives intact. */
    REQUIRE(test::poll_until([&] { return at_b.messages.size() == 2; }, pump));
    CHECK(at_b.messages[1] == sender.payload);
    CHECK(ep_ab->flush(0, nullptr) == UCS_OK);
}

TEST_CASE("tcp flush with a completion after one without covers every put before it", "[tcp]")
{
    /* A flush without a completion (UCP's "already flushed?" probe) sends
     * a request; a flush with one that follows, nothing queued between,
     * waits for that request's reply instead of sending another. Whatever
     * was put before the second flush must be in place when it completes. */
    test::uct_entity a("tcp", "lo"), b("tcp", "lo");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    am_log at_b;
    REQUIRE(b.iface().set_am_handler(3, record_am, &at_b, 0) == UCS_OK);
    uint64_t words[3] = {0, 0, 0};
    uct::mem_h mh;
    REQUIRE(b.md().mem_reg(words, sizeof(words), 0, &mh) == UCS_OK);
    std::vector<uint8_t> key(b.md().attr().rkey_packed_size);
    REQUIRE(b.md().mkey_pack(mh, key.data()) == UCS_OK);
    uct::rkey_bundle rk;
    REQUIRE(a.component().rkey_unpack(key.data(), key.size(), &rk) == UCS_OK);
    const auto base = reinterpret_cast<uint64_t>(words);
    auto ep         = make_ep(a, b);
    REQUIRE(ep);
    auto pump = [&] {
        a.progress();
        b.progress();
    };
    auto flush_both_ways = [&](uint64_t put_between, bool am_between) {
        const uint64_t first = put_between * 10 + 1;
        REQUIRE(ep->put_short(&first, sizeof(first), base, rk.rkey) == UCS_OK);
        REQUIRE(ep->flush(0, nullptr) == UCS_INPROGRESS);
        if (put_between != 0) {
            REQUIRE(ep->put_short(&put_between, sizeof(put_between), base + 8, rk.rkey) == UCS_OK);
        }
        if (am_between) {
            REQUIRE(ep->am_short(3, 7, nullptr, 0) == UCS_OK);
        }
        counted_comp comp;
        REQUIRE(ep->flush(0, &comp) == UCS_INPROGRESS);
        REQUIRE(test::poll_until([&] { return comp.fired == 1; }, pump));
        CHECK(comp.last == UCS_OK);
        CHECK(words[0] == first);
        if (put_between != 0) {
            CHECK(words[1] == put_between);
        }
        /* Drained: nothing left to wait for. */
        REQUIRE(test::poll_until([&] { return ep->flush(0, nullptr) == UCS_OK; }, pump));
    };

    flush_both_ways(0, false); /* the second flush takes the first's request over */
    flush_both_ways(5, false); /* a put between: a request of its own */
    flush_both_ways(0, true);  /* an AM between: not covered by the old request */
    REQUIRE(test::poll_until([&] { return at_b.messages.size() == 1; }, pump));
    flush_both_ways(9, true);
    CHECK(words[1] == 9);

    a.component().rkey_release(rk);
    CHECK(b.md().mem_dereg(mh) == UCS_OK);
}

TEST_CASE("tcp eps towards each other share one connection, each may leave first", "[tcp]")
{
    test::uct_entity a("tcp", "lo"), b("tcp", "lo");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    am_log at_a, at_b;
    REQUIRE(a.iface().set_am_handler(1, record_am, &at_a, 0) == UCS_OK);
    REQUIRE(b.iface().set_am_handler(1, record_am, &at_b, 0) == UCS_OK);
    auto pump = [&] {
        a.progress();
        b.progress();
    };

    /* Memory on each side, for gets in both directions. */
    uint64_t word_a = 0xaaaa, word_b = 0xbbbb;
    uct::mem_h mh_a, mh_b;
    REQUIRE(a.md().mem_reg(&word_a, sizeof(word_a), 0, &mh_a) == UCS_OK);
    REQUIRE(b.md().mem_reg(&word_b, sizeof(word_b), 0, &mh_b) == UCS_OK);
    std::vector<uint8_t> key_a(a.md().attr().rkey_packed_size), key_b(key_a.size());
    REQUIRE(a.md().mkey_pack(mh_a, key_a.data()) == UCS_OK);
    REQUIRE(b.md().mkey_pack(mh_b, key_b.data()) == UCS_OK);
    uct::rkey_bundle rk_a, rk_b; /* unpacked by the side that uses them */
    REQUIRE(b.component().rkey_unpack(key_a.data(), key_a.size(), &rk_a) == UCS_OK);
    REQUIRE(a.component().rkey_unpack(key_b.data(), key_b.size(), &rk_b) == UCS_OK);
    auto addr_a = reinterpret_cast<uint64_t>(&word_a);
    auto addr_b = reinterpret_cast<uint64_t>(&word_b);

    auto ep_ab = make_ep(a, b);
    REQUIRE(ep_ab);
    REQUIRE(ep_ab->am_short(1, 1, nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return at_b.messages.size() == 1; }, pump));

    /* b already accepted a's connection: its ep towards a reuses it. */
    auto ep_ba = make_ep(b, a);
    REQUIRE(ep_ba);
    CHECK(connections(a) == 1);
    CHECK(connections(b) == 1);
    REQUIRE(ep_ba->am_short(1, 2, nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return at_a.messages.size() == 1; }, pump));
    uint64_t got = 0;
    CHECK(get_word(a, b, ep_ab.get(), addr_b, rk_b.rkey, &got) == UCS_OK);
    CHECK(got == 0xbbbb);
    CHECK(get_word(a, b, ep_ba.get(), addr_a, rk_a.rkey, &got) == UCS_OK);
    CHECK(got == 0xaaaa);

    SECTION("the initiator's ep leaves first") {
        ep_ab.reset();
        for (int i = 0; i < 100; ++i) {
            pump();
        }
        /* b's ep keeps working: a still serves its end of the connection. */
        REQUIRE(ep_ba->am_short(1, 3, nullptr, 0) == UCS_OK);
        REQUIRE(test::poll_until([&] { return at_a.messages.size() == 2; }, pump));
        CHECK(get_word(a, b, ep_ba.get(), addr_a, rk_a.rkey, &got) == UCS_OK);
        CHECK(connections(a) == 1);
        CHECK(connections(b) == 1);

        /* A new ep from a opens a new connection. */
        auto again = make_ep(a, b);
        REQUIRE(again);
        REQUIRE(again->am_short(1, 4, nullptr, 0) == UCS_OK);
        REQUIRE(test::poll_until([&] { return at_b.messages.size() == 2; }, pump));
        CHECK(connections(a) == 2);

        /* The last user of the shared connection leaves: it closes on both sides. */
        ep_ba.reset();
        REQUIRE(test::poll_until([&] { return (connections(a) == 1) && (connections(b) == 1); },
                                 pump));
        CHECK(again->flush(0, nullptr) == UCS_OK);
    }

    SECTION("the acceptor's ep leaves first") {
        ep_ba.reset();
        for (int i = 0; i < 100; ++i) {
            pump();
        }
        REQUIRE(ep_ab->am_short(1, 5, nullptr, 0) == UCS_OK);
        REQUIRE(test::poll_until([&] { return at_b.messages.size() == 2; }, pump));
        CHECK(get_word(a, b, ep_ab.get(), addr_b, rk_b.rkey, &got) == UCS_OK);
        ep_ab.reset();
        REQUIRE(test::poll_until([&] { return (connections(a) == 0) && (connections(b) == 0); },
                                 pump));
    }

    a.component().rkey_release(rk_b);
    b.component().rkey_release(rk_a);
    CHECK(a.md().mem_dereg(mh_a) == UCS_OK);
    CHECK(b.md().mem_dereg(mh_b) == UCS_OK);
}

TEST_CASE("tcp destroying an ep the peer never used closes the connection on both sides", "[tcp]")
{
    test::uct_entity a("tcp", "lo"), b("tcp", "lo");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    am_log at_b;
    REQUIRE(b.iface().set_am_handler(1, record_am, &at_b, 0) == UCS_OK);
    auto pump = [&] {
        a.progress();
        b.progress();
    };
    auto ep = make_ep(a, b);
    REQUIRE(ep);
    REQUIRE(ep->am_short(1, 1, nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return at_b.messages.size() == 1; }, pump));
    CHECK(connections(a) == 1);
    CHECK(connections(b) == 1);
    ep.reset();
    REQUIRE(test::poll_until([&] { return (connections(a) == 0) && (connections(b) == 0); }, pump));
}
