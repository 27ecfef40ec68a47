/*
 * cma between two processes: a child registers a region between guard
 * bytes and serves commands; the parent reads and writes it with
 * get/put_zcopy, checks bounds enforcement, and sees a killed peer fail
 * cleanly.
 */
#include <catch2/catch.hpp>

#include "../ucs/config_test_util.h"
#include "two_process.h"
#include "uct_test_util.h"

#include <uct/sm/cma/cma_access.h>
#include <uct/sm/cma/cma_iface.h>
#include <uct/sm/cma/cma_rkey.h>

#include <ucs/debug/log.h>
#include <ucs/sys/process.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <memory>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {

constexpr size_t GUARD          = 4096;
constexpr size_t REGION         = (4u << 20) + 8192;
constexpr uint8_t GUARD_BYTE    = 0xee;
constexpr uint32_t INITIAL_SEED = 1;

/* A byte of a non-periodic pattern, by its offset in the region. */
uint8_t pattern_byte(uint32_t seed, size_t index)
{
    uint64_t x = (index + 1) * 0x9e3779b97f4a7c15ull ^ (seed * 0xff51afd7ed558ccdull);
    return uint8_t((x >> 56) ^ (x >> 29));
}

void fill_pattern(uint8_t *buf, size_t length, uint32_t seed, size_t first_index)
{
    for (size_t i = 0; i < length; ++i) {
        buf[i] = pattern_byte(seed, first_index + i);
    }
}

bool has_pattern(const uint8_t *buf, size_t length, uint32_t seed, size_t first_index)
{
    for (size_t i = 0; i < length; ++i) {
        if (buf[i] != pattern_byte(seed, first_index + i)) {
            return false;
        }
    }
    return true;
}

struct region_info {
    uint64_t address;
    uint64_t length;
};

enum class op : uint32_t { FILL, VERIFY, EXIT };

struct command {
    op what;
    uint32_t seed;
    uint64_t offset;
    uint64_t length;
};

/*
 * The child: registers a region between guard bytes, publishes its
 * addresses, key and region, then fills or verifies ranges on request.
 * VERIFY also checks that the guard bytes are untouched.
 */
int serve_region(int fd)
{
    test::uct_entity entity("cma");
    TEST_CHILD_CHECK(entity.ok());

    std::vector<uint8_t> memory(REGION + 2 * GUARD, GUARD_BYTE);
    uint8_t *region = memory.data() + GUARD;
    fill_pattern(region, REGION, INITIAL_SEED, 0);

    uct::mem_h memh = nullptr;
    TEST_CHILD_CHECK(entity.md().mem_reg(region, REGION, 0, &memh) == UCS_OK);
    std::vector<uint8_t> key(entity.md().attr().rkey_packed_size);
    TEST_CHILD_CHECK(entity.md().mkey_pack(memh, key.data()) == UCS_OK);

    region_info info{reinterpret_cast<uintptr_t>(region), REGION};
    TEST_CHILD_CHECK(test::send_blob(fd, entity.addresses().serialize()));
    TEST_CHILD_CHECK(test::send_blob(fd, key));
    TEST_CHILD_CHECK(test::send_value(fd, info));

    auto guards_intact = [&] {
        for (size_t i = 0; i < GUARD; ++i) {
            if ((memory[i] != GUARD_BYTE) || (memory[GUARD + REGION + i] != GUARD_BYTE)) {
                return false;
            }
        }
        return true;
    };

    for (;;) {
        command cmd;
        TEST_CHILD_CHECK(test::recv_value(fd, &cmd));
        TEST_CHILD_CHECK(cmd.offset <= REGION && cmd.length <= REGION - cmd.offset);
        uint8_t reply = 1;
        switch (cmd.what) {
        case op::FILL:
            fill_pattern(region + cmd.offset, cmd.length, cmd.seed, cmd.offset);
            break;
        case op::VERIFY:
            reply = has_pattern(region + cmd.offset, cmd.length, cmd.seed, cmd.offset) &&
                    guards_intact();
            break;
        case op::EXIT:
            TEST_CHILD_CHECK(entity.md().mem_dereg(memh) == UCS_OK);
            return 0;
        }
        TEST_CHILD_CHECK(test::send_value(fd, reply));
    }
}

/* Opens cma in this process with an error handler that counts reports. */
struct cma_stack {
    struct failure {
        int calls           = 0;
        uct::ep *ep         = nullptr;
        ucs_status_t status = UCS_OK;
    };

    uct::worker worker{nullptr, UCS_THREAD_MODE_SINGLE};
    uct::component *component = nullptr;
    std::unique_ptr<uct::md> md;
    std::unique_ptr<uct::iface> iface;
    std::vector<std::unique_ptr<uct::ep>> eps;
    failure failures;

    static ucs_status_t on_error(void *arg, uct::ep *ep, ucs_status_t status)
    {
        auto *f = static_cast<failure *>(arg);
        ++f->calls;
        f->ep     = ep;
        f->status = status;
        return UCS_OK;
    }

    cma_stack()
    {
        for (uct::component *comp : uct::components()) {
            uct::md *m = nullptr;
            if ((std::string(comp->name()) == "cma") && (comp->md_open("cma", &m) == UCS_OK)) {
                component = comp;
                md.reset(m);
            }
        }
        REQUIRE(md != nullptr);
        uct::iface_params params;
        params.tl_name         = "cma";
        params.dev_name        = "memory";
        params.err_handler     = on_error;
        params.err_handler_arg = &failures;
        uct::iface *i          = nullptr;
        REQUIRE(md->iface_open(worker, params, &i) == UCS_OK);
        iface.reset(i);
    }

    ~cma_stack() { eps.clear(); /* eps before their iface */ }

    test::uct_addresses addresses() const
    {
        test::uct_addresses addr;
        addr.device.resize(iface->attr().device_addr_len);
        addr.iface.resize(iface->attr().iface_addr_len);
        iface->get_device_address(addr.device.data());
        iface->get_address(addr.iface.data());
        return addr;
    }

    uct::ep *connect(const test::uct_addresses &peer)
    {
        uct::ep *ep = nullptr;
        REQUIRE(iface->ep_create_connected(peer.device.data(), peer.device.size(),
                                           peer.iface.data(), peer.iface.size(), &ep) == UCS_OK);
        eps.emplace_back(ep);
        return ep;
    }
};

/* The parent's view of a serving child. */
struct served_region {
    test::uct_addresses addresses;
    std::vector<uint8_t> packed_key;
    region_info info{};

    bool receive(int fd)
    {
        std::vector<uint8_t> blob;
        return test::recv_blob(fd, &blob) && test::uct_addresses::deserialize(blob, &addresses) &&
               test::recv_blob(fd, &packed_key) && test::recv_value(fd, &info);
    }
};

bool ask(int fd, op what, uint32_t seed, uint64_t offset, uint64_t length)
{
    command cmd{what, seed, offset, length};
    uint8_t reply = 0;
    return test::send_value(fd, cmd) && test::recv_value(fd, &reply) && (reply == 1);
}

uct::iov one_iov(const void *buffer, size_t length)
{
    return uct::iov{buffer, length, uct::MEM_HANDLE_NULL};
}

bool cma_available()
{
    std::string reason;
    if (!uct::cma::cma_usable(uct::cma::default_cma_config(), &reason)) {
        WARN("cma is not usable here: " << reason);
        return false;
    }
    return true;
}


/* Sends log output to a temporary file for the scope's lifetime. */
class log_capture {
public:
    log_capture()
    {
        char name[] = "/tmp/test_cma_log_XXXXXX";
        int fd      = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path_ = name;
        REQUIRE(ucs::log_set_file(path_.c_str()) == UCS_OK);
    }
    ~log_capture()
    {
        ucs::log_set_file("stdout");
        unlink(path_.c_str());
    }
    std::string text() const
    {
        std::fflush(ucs::log_stream());
        std::ifstream in(path_);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

private:
    std::string path_;
};

} // namespace

TEST_CASE("cma get/put zcopy between two processes", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    test::child_process child(serve_region);
    /* The largest iov list the kernel takes, so one call spans several
     * syscall batches (UCX's default is 16 entries). */
    config_test::env_guard env;
    env.set("UCX_CMA_MAX_IOV", std::to_string(IOV_MAX));
    cma_stack local;
    REQUIRE(local.iface->attr().get.max_iov == IOV_MAX);
    served_region peer;
    REQUIRE(peer.receive(child.fd()));
    uct::ep *ep = local.connect(peer.addresses);

    uct::rkey_bundle rkey;
    REQUIRE(local.component->rkey_unpack(peer.packed_key.data(), peer.packed_key.size(), &rkey) ==
            UCS_OK);
    const uint64_t base = peer.info.address;
    std::vector<uint8_t> buf(REGION);

    SECTION("get at 1 B, 4 KiB and 4 MiB, aligned and not") {
        const std::pair<size_t, size_t> cases[] = {
            /* {offset, length} */
            {0, 1},        {REGION - 1, 1},  {4096, 4096}, {123, 4096},
            {0, 4u << 20}, {8192, 4u << 20}, {0, REGION},
        };
        for (auto [offset, length] : cases) {
            INFO("offset " << offset << " length " << length);
            std::fill(buf.begin(), buf.end(), 0);
            uct::iov iov = one_iov(buf.data(), length);
            REQUIRE(ep->get_zcopy(&iov, 1, base + offset, rkey.rkey, nullptr) == UCS_OK);
            CHECK(has_pattern(buf.data(), length, INITIAL_SEED, offset));
            if (length < buf.size()) {
                CHECK(buf[length] == 0); /* nothing written past the get */
            }
        }
    }

    SECTION("put at 1 B, 4 KiB and 4 MiB, verified by the owner") {
        const std::pair<size_t, size_t> cases[] = {
            {0, 1}, {REGION - 1, 1}, {4096, 4096}, {4001, 4096}, {0, 4u << 20}, {8192, 4u << 20},
        };
        uint32_t seed = 100;
        for (auto [offset, length] : cases) {
            INFO("offset " << offset << " length " << length);
            ++seed;
            fill_pattern(buf.data(), length, seed, offset);
            uct::iov iov = one_iov(buf.data(), length);
            REQUIRE(ep->put_zcopy(&iov, 1, base + offset, rkey.rkey, nullptr) == UCS_OK);
            CHECK(ask(child.fd(), op::VERIFY, seed, offset, length));
        }
    }

    SECTION("multi-iov get and put, including empty entries and long lists") {
        const size_t sizes[] = {1, 100, 0, 4096, 7, 65536, 3};
        const size_t offset  = 777;
        size_t total         = 0;
        std::vector<std::vector<uint8_t>> pieces;
        std::vector<uct::iov> iovs;
        for (size_t size : sizes) {
            pieces.emplace_back(size, 0);
            total += size;
        }
        for (auto &piece : pieces) {
            iovs.push_back(one_iov(piece.data(), piece.size()));
        }
        REQUIRE(ep->get_zcopy(iovs.data(), iovs.size(), base + offset, rkey.rkey, nullptr) ==
                UCS_OK);
        size_t at = offset;
        for (auto &piece : pieces) {
            CHECK(has_pattern(piece.data(), piece.size(), INITIAL_SEED, at));
            at += piece.size();
        }

        at = offset;
        for (auto &piece : pieces) {
            fill_pattern(piece.data(), piece.size(), 7, at);
            at += piece.size();
        }
        REQUIRE(ep->put_zcopy(iovs.data(), iovs.size(), base + offset, rkey.rkey, nullptr) ==
                UCS_OK);
        CHECK(ask(child.fd(), op::VERIFY, 7, offset, total));

        /* More entries than one syscall batch takes. */
        const size_t count = 300, piece = 33, far = 100000;
        std::vector<uct::iov> many;
        fill_pattern(buf.data(), count * piece, 9, far);
        for (size_t i = 0; i < count; ++i) {
            many.push_back(one_iov(buf.data() + i * piece, piece));
        }
        REQUIRE(ep->put_zcopy(many.data(), many.size(), base + far, rkey.rkey, nullptr) == UCS_OK);
        CHECK(ask(child.fd(), op::VERIFY, 9, far, count * piece));
        std::fill(buf.begin(), buf.end(), 0);
        REQUIRE(ep->get_zcopy(many.data(), many.size(), base + far, rkey.rkey, nullptr) == UCS_OK);
        CHECK(has_pattern(buf.data(), count * piece, 9, far));

        std::vector<uct::iov> too_many(local.iface->attr().get.max_iov + 1, one_iov(buf.data(), 1));
        CHECK(ep->get_zcopy(too_many.data(), too_many.size(), base, rkey.rkey, nullptr) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ep->get_zcopy(nullptr, 1, base, rkey.rkey, nullptr) == UCS_ERR_INVALID_PARAM);
    }

    SECTION("accesses outside the key's region are refused") {
        const std::pair<uint64_t, size_t> outside[] = {
            /* {address, length} */
            {base - 1, 1},
            {base - 1, 2},
            {base + REGION, 1},
            {base + REGION - 10, 11},
            {base, REGION + 1},
            {UINT64_MAX - 5, 10},
            {base + 16, SIZE_MAX / 4},
        };
        std::vector<uint8_t> small(4096, 0x55);
        for (auto [address, length] : outside) {
            INFO("address " << address << " length " << length);
            /* Lengths past the buffer are never touched: refused up front. */
            uct::iov iov = one_iov(small.data(), length);
            CHECK(ep->get_zcopy(&iov, 1, address, rkey.rkey, nullptr) == UCS_ERR_OUT_OF_RANGE);
            CHECK(ep->put_zcopy(&iov, 1, address, rkey.rkey, nullptr) == UCS_ERR_OUT_OF_RANGE);
        }
        CHECK(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0x55; }));
        /* The whole region and both guards are as the owner left them. */
        CHECK(ask(child.fd(), op::VERIFY, INITIAL_SEED, 0, REGION));

        /* A key from another process does not open this peer's memory. */
        uct::mem_h memh = nullptr;
        REQUIRE(local.md->mem_reg(buf.data(), buf.size(), 0, &memh) == UCS_OK);
        std::vector<uint8_t> own_key(local.md->attr().rkey_packed_size);
        REQUIRE(local.md->mkey_pack(memh, own_key.data()) == UCS_OK);
        uct::rkey_bundle wrong;
        REQUIRE(local.component->rkey_unpack(own_key.data(), own_key.size(), &wrong) == UCS_OK);
        uct::iov iov = one_iov(small.data(), 1);
        CHECK(ep->get_zcopy(&iov, 1, base, wrong.rkey, nullptr) == UCS_ERR_INVALID_PARAM);
        local.component->rkey_release(wrong);
        REQUIRE(local.md->mem_dereg(memh) == UCS_OK);
    }

    SECTION("without a key the peer pid from the address is used") {
        uct::iov iov = one_iov(buf.data(), 4096);
        REQUIRE(ep->get_zcopy(&iov, 1, base + 64, 0, nullptr) == UCS_OK);
        CHECK(has_pattern(buf.data(), 4096, INITIAL_SEED, 64));
    }

    local.component->rkey_release(rkey);
    CHECK(ask(child.fd(), op::VERIFY, 0, 0, 0)); /* guards still intact */
    test::send_value(child.fd(), command{op::EXIT, 0, 0, 0});
    CHECK(child.wait() == 0);
}

TEST_CASE("cma to a killed peer fails cleanly and reports it", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    test::child_process child(serve_region);
    cma_stack local;
    served_region peer;
    REQUIRE(peer.receive(child.fd()));
    uct::ep *ep = local.connect(peer.addresses);
    uct::rkey_bundle rkey;
    REQUIRE(local.component->rkey_unpack(peer.packed_key.data(), peer.packed_key.size(), &rkey) ==
            UCS_OK);

    std::vector<uint8_t> buf(4096);
    uct::iov iov = one_iov(buf.data(), buf.size());
    REQUIRE(ep->get_zcopy(&iov, 1, peer.info.address, rkey.rkey, nullptr) == UCS_OK);

    child.kill(SIGKILL);
    REQUIRE(child.wait() == 128 + SIGKILL);

    auto start = std::chrono::steady_clock::now();
    CHECK(ep->get_zcopy(&iov, 1, peer.info.address, rkey.rkey, nullptr) ==
          UCS_ERR_CONNECTION_RESET);
    CHECK(ep->put_zcopy(&iov, 1, peer.info.address, rkey.rkey, nullptr) ==
          UCS_ERR_CONNECTION_RESET);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));

    /* The handler runs from progress, once per ep. */
    CHECK(local.failures.calls == 0);
    CHECK(local.worker.progress() == 1);
    CHECK(local.failures.calls == 1);
    CHECK(local.failures.ep == ep);
    CHECK(local.failures.status == UCS_ERR_CONNECTION_RESET);
    CHECK(local.worker.progress() == 0);
    CHECK(local.failures.calls == 1);

    /* A fresh ep to the same dead peer is made, failed: reported once. */
    uct::ep *probe = local.connect(peer.addresses);
    CHECK(probe->check(0, nullptr) == UCS_OK);
    CHECK(local.worker.progress() == 1);
    CHECK(local.failures.calls == 2);
    CHECK(local.failures.ep == probe);

    /* An ep destroyed before its report is delivered is forgotten. */
    uct::ep *doomed = local.connect(peer.addresses);
    CHECK(doomed->get_zcopy(&iov, 1, peer.info.address, 0, nullptr) == UCS_ERR_CONNECTION_RESET);
    local.eps.pop_back();
    CHECK(local.worker.progress() == 0);
    CHECK(local.failures.calls == 2);

    local.component->rkey_release(rkey);
}

TEST_CASE("cma: an idle ep's peer death wakes the event fd and check_peers reports it", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    test::child_process child(serve_region);
    cma_stack local;
    served_region peer;
    REQUIRE(peer.receive(child.fd()));
    uct::ep *ep = local.connect(peer.addresses);
    REQUIRE((local.iface->attr().event_flags & uct::event_flag::FD) != 0);
    int efd = -1;
    REQUIRE(local.iface->event_fd_get(&efd) == UCS_OK);
    struct pollfd pfd = {efd, POLLIN, 0};
    CHECK(local.iface->check_peers() == 0);
    CHECK(local.iface->event_arm(uct::event_flag::RECV) == UCS_OK);
    CHECK(poll(&pfd, 1, 0) == 0);

    child.kill(SIGKILL); /* a zombie until waited for */
    CHECK(poll(&pfd, 1, 10000) == 1);
    CHECK(local.iface->check_peers() == 1);
    CHECK(local.failures.calls == 1);
    CHECK(local.failures.ep == ep);
    CHECK(local.failures.status == UCS_ERR_CONNECTION_RESET);
    CHECK(local.iface->check_peers() == 0);
    CHECK(local.iface->event_arm(uct::event_flag::RECV) == UCS_OK);
    CHECK(poll(&pfd, 1, 0) == 0);
    std::vector<uint8_t> buf(64);
    uct::iov iov = one_iov(buf.data(), buf.size());
    CHECK(ep->get_zcopy(&iov, 1, peer.info.address, 0, nullptr) == UCS_ERR_CONNECTION_RESET);
    CHECK(child.wait() == 128 + SIGKILL);
}

TEST_CASE("cma iface attributes and reachability", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    cma_stack local;
    const uct::iface_attr &attr = local.iface->attr();
    CHECK((attr.flags & uct::iface_flag::PUT_ZCOPY) != 0);
    CHECK((attr.flags & uct::iface_flag::GET_ZCOPY) != 0);
    CHECK((attr.flags & uct::iface_flag::CONNECT_TO_IFACE) != 0);
    CHECK((attr.flags & uct::iface_flag::ERRHANDLE_PEER_FAILURE) != 0);
    CHECK((attr.flags & uct::iface_flag::AM_SHORT) == 0);
    CHECK(attr.get.max_iov >= 16);
    CHECK(attr.perf.bandwidth_Bps > 0);

    test::uct_addresses own = local.addresses();
    REQUIRE(own.device.size() == sizeof(uct::cma::node_identity));
    REQUIRE(own.iface.size() == sizeof(uct::cma::iface_address));
    uct::cma::iface_address own_addr;
    std::memcpy(&own_addr, own.iface.data(), sizeof(own_addr));
    CHECK(own_addr.pid == uint32_t(getpid()));
    const uint64_t start_time = own_addr.start_time; /* packed: no reference to it */
    CHECK(start_time == ucs::sys::self_start_time());
    CHECK(start_time != 0);

    auto reachable = [&](const test::uct_addresses &a) {
        return local.iface->is_reachable(a.device.data(), a.device.size(), a.iface.data(),
                                         a.iface.size());
    };
    CHECK(reachable(own));

    /* Another node, another pid or user namespace: not reachable. */
    for (size_t field = 0; field < 3; ++field) {
        test::uct_addresses other = own;
        other.device[field * 8] ^= 0x40;
        INFO("field " << field);
        CHECK_FALSE(reachable(other));
        uct::ep *ep = nullptr;
        CHECK(local.iface->ep_create_connected(other.device.data(), other.device.size(),
                                               other.iface.data(), other.iface.size(),
                                               &ep) == UCS_ERR_UNREACHABLE);
    }
    /* Wrong lengths and impossible pids. */
    for (size_t len = 0; len < own.device.size() + 4; ++len) {
        if (len == own.device.size()) {
            continue;
        }
        test::uct_addresses other = own;
        other.device.resize(len);
        CHECK_FALSE(reachable(other));
    }
    for (size_t len : {0, 3, 4, 5, 8, 11, 13}) {
        test::uct_addresses other = own;
        other.iface.resize(len);
        CHECK_FALSE(reachable(other));
    }
    for (uint32_t bad_pid : {0u, 0x80000000u, 0xffffffffu}) {
        test::uct_addresses other = own;
        std::memcpy(other.iface.data(), &bad_pid, sizeof(bad_pid));
        CHECK_FALSE(reachable(other));
    }
    CHECK_FALSE(local.iface->is_reachable(nullptr, own.device.size(), own.iface.data(),
                                          own.iface.size()));

    /* Our pid with another start time names a process that is gone (its
     * pid reused): the ep is made, fails everything and is reported. */
    {
        test::uct_addresses reused = own;
        uct::cma::iface_address x  = own_addr;
        x.start_time += 1;
        std::memcpy(reused.iface.data(), &x, sizeof(x));
        uct::ep *stale = local.connect(reused);
        std::vector<uint8_t> buf(64);
        uct::iov iov = one_iov(buf.data(), buf.size());
        CHECK(stale->get_zcopy(&iov, 1, uint64_t(uintptr_t(buf.data())), 0, nullptr) ==
              UCS_ERR_CONNECTION_RESET);
        CHECK(local.worker.progress() == 1);
        CHECK(local.failures.calls == 1);
        CHECK(local.failures.ep == stale);
        local.eps.pop_back();
        local.failures = {};
    }

    uct::ep *ep = local.connect(own);
    uct::pending_req req{};
    CHECK(ep->pending_add(&req, 0) == UCS_ERR_BUSY);
    CHECK(ep->flush(0, nullptr) == UCS_OK);
    CHECK(ep->check(0, nullptr) == UCS_OK);
    CHECK(local.worker.progress() == 0);
    CHECK(local.failures.calls == 0);
}

TEST_CASE("cma maps kernel errors: bad addresses and partial transfers", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    /* The transport works on our own pid too, which lets us set up faults. */
    cma_stack local;
    uct::ep *ep = local.connect(local.addresses());

    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    auto *mapping     = static_cast<uint8_t *>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(mapping != MAP_FAILED);
    fill_pattern(mapping, page, 3, 0);
    REQUIRE(munmap(mapping + page, page) == 0);

    std::vector<uint8_t> buf(2 * page, 0);
    uct::iov iov    = one_iov(buf.data(), buf.size());
    uint64_t remote = reinterpret_cast<uintptr_t>(mapping);

    log_capture log;
    /* The first page transfers, the second faults: no loop, an error. */
    CHECK(ep->get_zcopy(&iov, 1, remote, 0, nullptr) == UCS_ERR_INVALID_ADDR);
    CHECK(has_pattern(buf.data(), page, 3, 0));
    CHECK(ep->put_zcopy(&iov, 1, remote, 0, nullptr) == UCS_ERR_INVALID_ADDR);
    CHECK(ep->get_zcopy(&iov, 1, remote + page, 0, nullptr) == UCS_ERR_INVALID_ADDR);

    /* A bad local buffer is reported the same way. */
    uct::iov bad_local = one_iov(mapping + page, page);
    CHECK(ep->get_zcopy(&bad_local, 1, remote, 0, nullptr) == UCS_ERR_INVALID_ADDR);

    CHECK(log.text().find("bad address") != std::string::npos);

    /* Nothing to transfer is fine. */
    CHECK(ep->get_zcopy(nullptr, 0, remote, 0, nullptr) == UCS_OK);
    REQUIRE(munmap(mapping, page) == 0);
    CHECK(local.failures.calls == 0);
}
