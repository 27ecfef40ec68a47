/*
 * ud_verbs takes datagrams from anyone on the fabric: every packet is
 * checked before use. A raw UD QP (libibverbs, on the emulated device in
 * CI) sends the iface malformed packets; each is dropped with a message,
 * nothing reaches the AM handler, and a well-formed packet from the same
 * source, and the iface's own eps, still work. Skips without a device.
 */
#include <catch2/catch.hpp>

#include "../ucs/config_test_util.h"
#include "uct_test_util.h"

#include <uct/ib/ud_verbs.h>

#include <infiniband/verbs.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace {

using config_test::log_capture;
using config_test::occurrences;
using uct::ib::ud_header;

struct am_counter {
    std::vector<std::vector<uint8_t>> messages;

    static ucs_status_t on_am(void *arg, void *data, size_t length, unsigned)
    {
        auto *p = static_cast<const uint8_t *>(data);
        static_cast<am_counter *>(arg)->messages.emplace_back(p, p + length);
        return UCS_OK;
    }
};

/* A bare UD QP on the first verbs device, port 1, sending to one peer. */
class raw_sender {
public:
    bool open(uint16_t dest_lid, uint32_t dest_qpn)
    {
        int count         = 0;
        ibv_device **list = ibv_get_device_list(&count);
        if ((list == nullptr) || (count == 0)) {
            return false;
        }
        ctx_ = ibv_open_device(list[0]);
        ibv_free_device_list(list);
        if ((ctx_ == nullptr) || ((pd_ = ibv_alloc_pd(ctx_)) == nullptr) ||
            ((cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0)) == nullptr)) {
            return false;
        }
        constexpr int access = IBV_ACCESS_LOCAL_WRITE;
        mr_                  = ibv_reg_mr(pd_, buffer_, sizeof(buffer_), access);
        ibv_qp_init_attr init{};
        init.send_cq = init.recv_cq = cq_;
        init.qp_type                = IBV_QPT_UD;
        init.cap.max_send_wr = init.cap.max_recv_wr = 16;
        init.cap.max_send_sge = init.cap.max_recv_sge = 1;
        qp_                                           = ibv_create_qp(pd_, &init);
        if ((mr_ == nullptr) || (qp_ == nullptr)) {
            return false;
        }
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_INIT;
        attr.port_num = 1;
        attr.qkey     = uct::ib::ud_verbs_iface::QKEY;
        if (ibv_modify_qp(qp_, &attr,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) != 0) {
            return false;
        }
        attr          = {};
        attr.qp_state = IBV_QPS_RTR;
        if (ibv_modify_qp(qp_, &attr, IBV_QP_STATE) != 0) {
            return false;
        }
        attr          = {};
        attr.qp_state = IBV_QPS_RTS;
        if (ibv_modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0) {
            return false;
        }
        ibv_ah_attr ah{};
        ah.dlid     = dest_lid;
        ah.port_num = 1;
        ah_         = ibv_create_ah(pd_, &ah);
        dest_qpn_   = dest_qpn;
        return ah_ != nullptr;
    }

    ~raw_sender()
    {
        if (ah_ != nullptr) {
            ibv_destroy_ah(ah_);
        }
        if (qp_ != nullptr) {
            ibv_destroy_qp(qp_);
        }
        if (mr_ != nullptr) {
            ibv_dereg_mr(mr_);
        }
        if (cq_ != nullptr) {
            ibv_destroy_cq(cq_);
        }
        if (pd_ != nullptr) {
            ibv_dealloc_pd(pd_);
        }
        if (ctx_ != nullptr) {
            ibv_close_device(ctx_);
        }
    }

    /* Sends `bytes` as one datagram and waits for its send completion. */
    uint32_t qpn() const { return qp_->qp_num; }

    bool send(const std::vector<uint8_t> &bytes)
    {
        std::memcpy(buffer_, bytes.data(), bytes.size());
        ibv_sge sge{reinterpret_cast<uintptr_t>(buffer_), uint32_t(bytes.size()), mr_->lkey};
        ibv_send_wr wr{}, *bad = nullptr;
        wr.opcode            = IBV_WR_SEND;
        wr.sg_list           = &sge;
        wr.num_sge           = 1;
        wr.send_flags        = IBV_SEND_SIGNALED;
        wr.wr.ud.ah          = ah_;
        wr.wr.ud.remote_qpn  = dest_qpn_;
        wr.wr.ud.remote_qkey = uct::ib::ud_verbs_iface::QKEY;
        if (ibv_post_send(qp_, &wr, &bad) != 0) {
            return false;
        }
        ibv_wc wc;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        int n               = 0;
        while ((n = ibv_poll_cq(cq_, 1, &wc)) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
        }
        return (n == 1) && (wc.status == IBV_WC_SUCCESS);
    }

private:
    ibv_context *ctx_  = nullptr;
    ibv_pd *pd_        = nullptr;
    ibv_cq *cq_        = nullptr;
    ibv_mr *mr_        = nullptr;
    ibv_qp *qp_        = nullptr;
    ibv_ah *ah_        = nullptr;
    uint32_t dest_qpn_ = 0;
    uint8_t buffer_[4096];
};

std::vector<uint8_t> packet(const ud_header &hdr, size_t payload = 8)
{
    std::vector<uint8_t> bytes(sizeof(hdr) + payload, 0x5a);
    std::memcpy(bytes.data(), &hdr, sizeof(hdr));
    return bytes;
}

/* The iface under test with AM 3 counted into `sink`; false (with a
 * warning) where there is no verbs device. */
bool open_iface(test::uct_entity &e, am_counter &sink)
{
    if (!e.ok()) {
        WARN("ud_verbs: skipped: no verbs device here ("
             << e.error() << "); meson test ud_verbs runs this on the emulated device");
        return false;
    }
    REQUIRE(e.iface().set_am_handler(3, am_counter::on_am, &sink, 0) == UCS_OK);
    return true;
}

/* A raw sender to the iface at `addr`; false (with a warning) on RoCE. */
bool open_raw(const test::uct_addresses &addr, raw_sender &raw)
{
    uct::ib::device_address dev;
    uct::ib::ud_iface_address iface_addr;
    REQUIRE(addr.device.size() == sizeof(dev));
    REQUIRE(addr.iface.size() == sizeof(iface_addr));
    std::memcpy(&dev, addr.device.data(), sizeof(dev));
    std::memcpy(&iface_addr, addr.iface.data(), sizeof(iface_addr));
    if (dev.flags & uct::ib::device_address::ETHERNET) {
        WARN("ud_verbs: skipped: the raw sender addresses by LID (InfiniBand ports)");
        return false;
    }
    REQUIRE(raw.open(dev.lid, iface_addr.qpn));
    return true;
}

} // namespace

TEST_CASE("ud_verbs drops malformed datagrams and keeps serving", "[ud_verbs]")
{
    test::uct_entity e("ud_verbs");
    am_counter sink;
    if (!open_iface(e, sink)) {
        return;
    }
    const test::uct_addresses addr = e.addresses();
    raw_sender raw;
    if (!open_raw(addr, raw)) {
        return;
    }

    log_capture log{UCS_LOG_LEVEL_WARN};
    const uint32_t psn = 1000;
    const ud_header syn{3, ud_header::AM | ud_header::SYN, ud_header::MAGIC, 0, 77, psn, 0, 0};
    ud_header bad_magic = syn;
    bad_magic.magic     = 0x1234;
    ud_header bad_flags = syn;
    bad_flags.flags |= 0x80;
    ud_header bad_id = syn;
    bad_id.am_id     = 200;
    const ud_header stray_ack{0, ud_header::ACK, ud_header::MAGIC, 12345, 1, 0, 99, 0};
    const ud_header no_syn{3, ud_header::AM, ud_header::MAGIC, 0, 78, 5, 0, 0};

    const std::vector<std::vector<uint8_t>> malformed = {
        std::vector<uint8_t>(10, 0xff), /* shorter than the header */
        packet(bad_magic),
        packet(bad_flags),
        packet(bad_id),
        packet(stray_ack, 0), /* an ACK for no ep of ours */
        packet(no_syn),       /* a source that never started */
    };
    for (const auto &bytes : malformed) {
        REQUIRE(raw.send(bytes));
    }
    /* Then well-formed: the first packet of a source, a gap, a duplicate. */
    REQUIRE(raw.send(packet(syn)));
    ud_header gap = syn;
    gap.flags     = ud_header::AM;
    gap.psn       = psn + 2;
    REQUIRE(raw.send(packet(gap)));
    REQUIRE(raw.send(packet(syn)));

    auto drops = [&] { return occurrences(log.text(), "dropping"); };
    e.progress_until([&] { return !sink.messages.empty() && (drops() >= 4); });
    for (int i = 0; i < 100; ++i) {
        e.progress();
    }
    const std::string text = log.text();
    INFO(text);
    /* byte_len counts the 40-byte GRH area in front. */
    CHECK(text.find("dropping a packet of 50 bytes") != std::string::npos);
    CHECK(text.find("magic 0x1234") != std::string::npos);
    CHECK(text.find("flags 0x83") != std::string::npos);
    CHECK(drops() >= 4);
    /* Only the source's first packet went through: the gap and the
     * duplicate are not delivered. */
    REQUIRE(sink.messages.size() == 1);
    CHECK(sink.messages[0] == std::vector<uint8_t>(8, 0x5a));

    /* The iface's own eps still work. */
    uct::ep *ep = e.connect(addr);
    REQUIRE(ep != nullptr);
    uint64_t word       = 42;
    ucs_status_t status = UCS_ERR_NO_RESOURCE;
    while ((status = ep->am_short(3, word, nullptr, 0)) == UCS_ERR_NO_RESOURCE) {
        e.progress();
    }
    REQUIRE(status == UCS_OK);
    e.progress_until([&] { return sink.messages.size() >= 2; });
    REQUIRE(sink.messages.size() == 2);
    CHECK(std::memcmp(sink.messages[1].data(), &word, sizeof(word)) == 0);
}

TEST_CASE("ud_verbs lets a lingering ep go when its peer never answers", "[ud_verbs]")
{
    config_test::env_guard env;
    env.set("UCX_UD_VERBS_TIMEOUT", "300ms");
    test::uct_entity e("ud_verbs");
    am_counter sink;
    if (!open_iface(e, sink)) {
        return;
    }
    test::uct_addresses addr = e.addresses();
    raw_sender silent; /* a UD QP that never acknowledges */
    if (!open_raw(addr, silent)) {
        return;
    }
    uct::ib::ud_iface_address toward{silent.qpn(), uct::ib::ud_iface_address::VERSION, {}};
    std::memcpy(addr.iface.data(), &toward, sizeof(toward));
    log_capture log{UCS_LOG_LEVEL_DEBUG};
    std::vector<uct::ep *> owned;
    uct::ep *ep = test::connect_to(e.iface(), addr, &owned);
    REQUIRE(ep != nullptr);
    const uint64_t word = 7;
    REQUIRE(e.progress_until([&] { return ep->am_short(3, word, nullptr, 0) == UCS_OK; }));
    delete ep;
    REQUIRE(e.progress_until([&] {
        return occurrences(log.text(), "stops lingering (peer lost)") == 1;
    }));
    /* Gone without a report: the user's ep was destroyed. */
    CHECK(occurrences(log.text(), "stops lingering (FIN acknowledged)") == 0);
}

TEST_CASE("ud_verbs sends every FIN when more eps close at once than the send queue holds",
          "[ud_verbs]")
{
    config_test::env_guard env;
    env.set("UCX_UD_VERBS_TX_QUEUE_LEN", "4");
    test::uct_entity e("ud_verbs");
    am_counter sink;
    if (!open_iface(e, sink)) {
        return;
    }
    const test::uct_addresses addr = e.addresses();
    log_capture log{UCS_LOG_LEVEL_DEBUG};
    constexpr size_t count = 12;
    std::vector<uct::ep *> eps;
    for (uint64_t word = 0; word < count; ++word) {
        uct::ep *ep = test::connect_to(e.iface(), addr, &eps);
        REQUIRE(ep != nullptr);
        REQUIRE(e.progress_until([&] { return ep->am_short(3, word, nullptr, 0) == UCS_OK; }));
        REQUIRE(e.progress_until([&] { return ep->flush(0, nullptr) == UCS_OK; }));
    }
    REQUIRE(sink.messages.size() == count);
    /* All at once: only 4 FINs find a send slot now, the rest later. */
    for (uct::ep *ep : eps) {
        delete ep;
    }
    REQUIRE(e.progress_until([&] {
        return occurrences(log.text(), "stops lingering (FIN acknowledged)") == count;
    }));
    CHECK(occurrences(log.text(), "closed (0 sources left)") == 1);
}

TEST_CASE("ud_verbs frees a closed source's state at the peer, and only then", "[ud_verbs]")
{
    test::uct_entity e("ud_verbs");
    am_counter sink;
    if (!open_iface(e, sink)) {
        return;
    }
    const test::uct_addresses addr = e.addresses();
    log_capture log{UCS_LOG_LEVEL_DEBUG};

    SECTION("eps created and destroyed one after another leave nothing behind") {
        constexpr size_t rounds = 20;
        for (size_t i = 0; i < rounds; ++i) {
            std::vector<uct::ep *> owned;
            uct::ep *ep = test::connect_to(e.iface(), addr, &owned);
            REQUIRE(ep != nullptr);
            const uint64_t word = i;
            REQUIRE(e.progress_until([&] { return ep->am_short(3, word, nullptr, 0) == UCS_OK; }));
            REQUIRE(e.progress_until([&] { return sink.messages.size() == i + 1; }));
            /* Acknowledged: the FIN may go. */
            REQUIRE(e.progress_until([&] { return ep->flush(0, nullptr) == UCS_OK; }));
            delete ep;
            REQUIRE(e.progress_until([&] {
                return occurrences(log.text(), "closed (0 sources left)") == i + 1;
            }));
        }
        CHECK(sink.messages.size() == rounds);
    }

    SECTION("an ep destroyed before its messages were acknowledged still delivers them") {
        std::vector<uct::ep *> owned;
        uct::ep *ep = test::connect_to(e.iface(), addr, &owned);
        REQUIRE(ep != nullptr);
        constexpr size_t count = 5;
        for (uint64_t word = 0; word < count; ++word) {
            REQUIRE(e.progress_until([&] { return ep->am_short(3, word, nullptr, 0) == UCS_OK; }));
        }
        delete ep; /* no flush: the window is still in flight */
        REQUIRE(e.progress_until([&] { return sink.messages.size() == count; }));
        REQUIRE(e.progress_until([&] {
            return occurrences(log.text(), "stops lingering (FIN acknowledged)") == 1;
        }));
        CHECK(occurrences(log.text(), "closed (0 sources left)") == 1);
        for (uint64_t word = 0; word < count; ++word) {
            CHECK(std::memcmp(sink.messages[word].data(), &word, sizeof(word)) == 0);
        }
    }

    SECTION("a FIN counts only after everything before it; a closed source stays closed") {
        raw_sender raw;
        if (!open_raw(addr, raw)) {
            return;
        }
        const uint32_t psn = 500;
        const ud_header syn{3, ud_header::AM | ud_header::SYN, ud_header::MAGIC, 0, 91, psn, 0, 0};
        ud_header early_fin{0, ud_header::FIN, ud_header::MAGIC, 0, 91, psn + 2, 0, 0};
        ud_header fin       = early_fin;
        fin.psn             = psn + 1;
        ud_header stranger  = fin; /* a FIN from a source never seen */
        stranger.src_id     = 92;
        ud_header restarted = syn; /* the same ep id from a new process */
        restarted.psn       = 9000;

        REQUIRE(raw.send(packet(syn)));
        REQUIRE(e.progress_until([&] { return sink.messages.size() == 1; }));
        /* psn 502 is not the next: dropped, then 501 closes the source. */
        REQUIRE(raw.send(packet(early_fin, 0)));
        REQUIRE(raw.send(packet(fin, 0)));
        REQUIRE(e.progress_until([&] { return occurrences(log.text(), "closed (") == 1; }));
        CHECK(occurrences(log.text(), "dropping a FIN") == 0);
        /* The same FIN again (its ACK lost): acknowledged again, nothing else. */
        REQUIRE(raw.send(packet(fin, 0)));
        REQUIRE(e.progress_until([&] {
            return occurrences(log.text(), "acknowledging again the FIN") == 1;
        }));
        REQUIRE(raw.send(packet(stranger, 0)));
        REQUIRE(e.progress_until([&] { return occurrences(log.text(), "dropping a FIN") == 1; }));
        /* A late copy of its first packet starts nothing and is not delivered. */
        REQUIRE(raw.send(packet(syn)));
        REQUIRE(raw.send(packet(restarted)));
        REQUIRE(e.progress_until([&] { return sink.messages.size() == 2; }));
        for (int i = 0; i < 100; ++i) {
            e.progress();
        }
        CHECK(sink.messages.size() == 2);
        CHECK(occurrences(log.text(), "closed (") == 1);
        CHECK(occurrences(log.text(), "dropping psn 500 of a new source") == 1);
    }
}

namespace {

struct bcopy_bytes {
    const std::vector<uint8_t> *bytes;

    static size_t pack(void *dest, void *arg)
    {
        const auto *b = static_cast<bcopy_bytes *>(arg)->bytes;
        std::memcpy(dest, b->data(), b->size());
        return b->size();
    }
};

/* Sends `bytes` with am_bcopy on AM id 3, retrying while the window is full. */
ssize_t send_bcopy(test::uct_entity &e, uct::ep *ep, const std::vector<uint8_t> &bytes)
{
    bcopy_bytes arg{&bytes};
    ssize_t sent = UCS_ERR_NO_RESOURCE;
    e.progress_until([&] {
        sent = ep->am_bcopy(3, bcopy_bytes::pack, &arg, 0);
        return sent != UCS_ERR_NO_RESOURCE;
    });
    return sent;
}

} // namespace

TEST_CASE("ud_verbs PATH_MTU bounds the datagrams sent, not those received", "[ud_verbs]")
{
    size_t default_bcopy;
    {
        test::uct_entity plain("ud_verbs");
        am_counter unused;
        if (!open_iface(plain, unused)) {
            return;
        }
        default_bcopy = plain.attr().am.max_bcopy;
    }
    config_test::env_guard env;
    env.set("UCX_UD_VERBS_PATH_MTU", "1024");
    test::uct_entity small("ud_verbs");
    am_counter small_sink;
    REQUIRE(open_iface(small, small_sink));
    const size_t small_bcopy = small.attr().am.max_bcopy;
    CAPTURE(default_bcopy, small_bcopy);
    CHECK(small_bcopy < default_bcopy);
    CHECK(small_bcopy <= 1024 - sizeof(ud_header));
    CHECK(small_bcopy >= 1024 - sizeof(ud_header) - 64);

    env.set("UCX_UD_VERBS_PATH_MTU", "default");
    test::uct_entity big("ud_verbs");
    am_counter big_sink;
    REQUIRE(open_iface(big, big_sink));
    REQUIRE(big.attr().am.max_bcopy == default_bcopy);

    /* The small iface sends its largest message, and refuses one byte more;
     * the big one's largest still reaches the small one (whose receive
     * buffers hold what the port carries). */
    uct::ep *to_big   = small.connect(big.addresses());
    uct::ep *to_small = big.connect(small.addresses());
    REQUIRE(to_big != nullptr);
    REQUIRE(to_small != nullptr);
    std::vector<uint8_t> most(small_bcopy), too_many(small_bcopy + 1), large(default_bcopy);
    for (size_t i = 0; i < large.size(); ++i) {
        large[i] = uint8_t(i * 7 + 1);
    }
    std::copy(large.begin(), large.begin() + ptrdiff_t(most.size()), most.begin());
    CHECK(send_bcopy(small, to_big, most) == ssize_t(most.size()));
    CHECK(send_bcopy(small, to_big, too_many) < 0);
    CHECK(send_bcopy(big, to_small, large) == ssize_t(large.size()));
    REQUIRE(big.progress_until([&] {
        small.progress();
        return !big_sink.messages.empty() && !small_sink.messages.empty();
    }));
    CHECK(big_sink.messages.size() == 1);
    CHECK(big_sink.messages[0] == most);
    CHECK(small_sink.messages.size() == 1);
    CHECK(small_sink.messages[0] == large);

    /* Not an MTU: refused by name. */
    env.set("UCX_UD_VERBS_PATH_MTU", "3000");
    log_capture log{UCS_LOG_LEVEL_ERROR};
    test::uct_entity bad("ud_verbs");
    CHECK_FALSE(bad.ok());
    CHECK(log.text().find("UCX_UD_VERBS_PATH_MTU: '3000'") != std::string::npos);
}
