/*
 * The registration cache under the UCP protocols (ucp/core/ucp_buffer_reg.h):
 *
 * [ucp_rcache] on the fake md that needs memory handles (ucp_test_zc):
 * repeated eager zcopy sends from one buffer register it once; unmapping
 * the buffer (real munmap) makes the next send register again, with a
 * handle that covers it; UCX_RCACHE_ENABLE=no registers per send;
 * UCX_RCACHE_MAX_REGIONS bounds what stays registered; without memory
 * events "yes" fails ucp_init and "try" registers per send; two workers of
 * a shared context (MULTI) send from one buffer at once; an md whose
 * registrations pin pages caches by default, and a block free() gave back
 * to the system (glibc's own munmap, seen by libucm's bistro hooks) is
 * registered again.
 *
 * [ucp_rcache_module] on the testloop module (UCX_MODULE_DIR names its
 * directory; meson sets it): rendezvous, eager zcopy and RMA zcopy pass
 * covering handles on every zero-copy call, and the cache turns a
 * registration per message into one per buffer.
 */
#include "fake_transport.h"
#include "ucp_peer.h"

#include <ucm/api/ucm.h>
#include <ucp/core/ucp_request.h>

#include "../uct/modules/testloop/testloop_counters.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <utility>
#include <vector>

using namespace ucp_test;

namespace {

struct fake_zc_scope {
    fake_zc_scope() { fake_zc_enabled = true; }
    ~fake_zc_scope() { fake_zc_enabled = false; }
};

/* Anonymous pages, so a test can unmap them. */
struct pages {
    uint8_t *base;
    size_t length;

    explicit pages(size_t len) : length(len)
    {
        void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        base = static_cast<uint8_t *>(p);
    }
    ~pages()
    {
        if (base != nullptr) {
            munmap(base, length);
        }
    }
};

/* A tag send with NO_IMM_CMPL (so it takes its protocol), waited for, and
 * the protocol it used: 'z' eager zcopy, 'r' rendezvous, 'e' by copy. */
ucs_status_t send_wait(peer &p, const void *buffer, size_t length, ucp_tag_t tag, char *proto)
{
    ucp_request_param_t param{};
    param.op_attr_mask   = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.datatype       = ucp_dt_make_contig(1);
    ucs_status_ptr_t req = ucp_tag_send_nbx(p.ep, buffer, length, tag, &param);
    if (UCS_PTR_IS_ERR(req) || (req == nullptr)) {
        *proto = '?';
        return UCS_PTR_STATUS(req);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(p.worker);
    }
    const uint32_t flags = ucp::request::from_user(req)->flags;
    *proto               = (flags & ucp::request_flag::ZCOPY)     ? 'z' :
                           (flags & ucp::request_flag::RNDV_SEND) ? 'r' :
                                                                    'e';
    ucp_request_free(req);
    return status;
}

/* Sends `length` bytes of pattern `seed` from `out` to `in` over the
 * self-connected peer; returns the protocol, '?' on any failure. */
char loop_message(peer &p, uint8_t *out, uint8_t *in, size_t length, uint64_t seed)
{
    fill_pattern(out, length, seed);
    std::memset(in, 0, length);
    ucp_request_param_t rparam{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(p.worker, in, length, seed, ~ucp_tag_t(0), &rparam);
    char proto;
    if ((send_wait(p, out, length, seed, &proto) != UCS_OK) || (p.wait(rreq) != UCS_OK) ||
        !check_pattern(in, length, seed)) {
        return '?';
    }
    return proto;
}

const settings zc_settings = {{"ZCOPY_THRESH", "4096"}};
constexpr size_t zc_size   = 3 * fake_zc_max_bcopy; /* several zcopy fragments */

} // namespace

TEST_CASE("ucp rcache: eager zcopy from one buffer registers it once", "[ucp_rcache]")
{
    fake_zc_scope scope;
    const long live0 = fake_zc_registrations;
    {
        peer p;
        REQUIRE(p.init_with(fake_zc_tl, UCP_FEATURE_TAG, zc_settings) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        pages out(zc_size), in(zc_size);
        const unsigned long regs0 = fake_zc_reg_calls;
        const unsigned long bad0  = fake_zc_bad_memh;

        for (uint64_t i = 1; i <= 8; ++i) {
            CHECK(loop_message(p, out.base, in.base, zc_size, i) == 'z');
        }
        CHECK(fake_zc_reg_calls == regs0 + 1);
        CHECK(fake_zc_bad_memh == bad0);
        CHECK(fake_zc_registrations == live0 + 1); /* kept in the cache */

        SECTION("the buffer unmapped and mapped again: registered again") {
            uint8_t *address = out.base;
            REQUIRE(munmap(out.base, out.length) == 0);
            out.base = nullptr;
            CHECK(fake_zc_registrations == live0 + 1); /* not from the handler */
            void *again = mmap(address, zc_size, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            REQUIRE(again == address);
            out.base = address;
            CHECK(loop_message(p, out.base, in.base, zc_size, 9) == 'z');
            CHECK(fake_zc_reg_calls == regs0 + 2);
            CHECK(fake_zc_bad_memh == bad0);
            CHECK(fake_zc_registrations == live0 + 1); /* the stale one is gone */
        }
    }
    /* ucp_cleanup deregisters what the cache held. */
    CHECK(fake_zc_registrations == live0);
}

TEST_CASE("ucp rcache: a pinning md caches, and forgets a block free() gave back", "[ucp_rcache]")
{
    fake_zc_scope scope;
    fake_zc_pins = true;
    /* Blocks of this size are mapped by malloc, and unmapped by free(). */
    const size_t block_size = 256 * 1024;
    if (mallopt(M_MMAP_THRESHOLD, block_size / 2) != 1) {
        WARN("skipped: malloc is not glibc's (a sanitizer's allocator)");
        return;
    }
    struct restore {
        ~restore()
        {
            fake_zc_pins = false;
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        }
    } restore_settings;

    const long live0 = fake_zc_registrations;
    peer p;
    REQUIRE(p.init_with(fake_zc_tl, UCP_FEATURE_TAG, zc_settings) == UCS_OK);
    if (ucm_get_installed_mmap_hook_mode() != UCM_MMAP_HOOK_BISTRO) { /* ucp_init installed them */
        WARN("skipped: libucm hooks relocations here (not x86-64, or "
             "UCX_MEM_MMAP_HOOK_MODE=reloc)");
        return;
    }
    REQUIRE(p.connect(p.address()) == UCS_OK);
    pages in(zc_size);
    const unsigned long regs0 = fake_zc_reg_calls;

    auto *out = static_cast<uint8_t *>(malloc(block_size));
    REQUIRE(out != nullptr);
    for (uint64_t i = 1; i <= 4; ++i) {
        CHECK(loop_message(p, out, in.base, zc_size, i) == 'z');
    }
    CHECK(fake_zc_reg_calls == regs0 + 1); /* cached, though the md pins */
    CHECK(fake_zc_registrations == live0 + 1);

    /* glibc unmaps the block inside free(); the next block may land at the
     * same address. Either way the cached region must not be used again. */
    free(out);
    out = static_cast<uint8_t *>(malloc(block_size));
    REQUIRE(out != nullptr);
    CHECK(loop_message(p, out, in.base, zc_size, 5) == 'z');
    CHECK(fake_zc_reg_calls == regs0 + 2);
    CHECK(fake_zc_registrations == live0 + 1); /* the stale region is gone */
    free(out);
}

TEST_CASE("ucp rcache: UCX_RCACHE_ENABLE=no registers per send", "[ucp_rcache]")
{
    fake_zc_scope scope;
    peer p;
    settings s = zc_settings;
    s.emplace_back("RCACHE_ENABLE", "no");
    REQUIRE(p.init_with(fake_zc_tl, UCP_FEATURE_TAG, s) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    pages out(zc_size), in(zc_size);
    const unsigned long regs0 = fake_zc_reg_calls;
    const long live0          = fake_zc_registrations;
    for (uint64_t i = 1; i <= 4; ++i) {
        CHECK(loop_message(p, out.base, in.base, zc_size, i) == 'z');
    }
    CHECK(fake_zc_reg_calls == regs0 + 4);
    CHECK(fake_zc_registrations == live0);
}

TEST_CASE("ucp rcache: UCX_RCACHE_MAX_REGIONS bounds what stays registered", "[ucp_rcache]")
{
    fake_zc_scope scope;
    peer p;
    settings s = zc_settings;
    s.emplace_back("RCACHE_MAX_REGIONS", "1");
    REQUIRE(p.init_with(fake_zc_tl, UCP_FEATURE_TAG, s) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    pages a(zc_size), b(zc_size), in(zc_size);
    const unsigned long regs0 = fake_zc_reg_calls;
    const long live0          = fake_zc_registrations;
    for (uint64_t i = 1; i <= 3; ++i) { /* alternating: each evicts the other */
        CHECK(loop_message(p, a.base, in.base, zc_size, 2 * i) == 'z');
        CHECK(loop_message(p, b.base, in.base, zc_size, 2 * i + 1) == 'z');
    }
    CHECK(fake_zc_reg_calls == regs0 + 6);
    CHECK(fake_zc_registrations == live0 + 1);
    CHECK(loop_message(p, b.base, in.base, zc_size, 20) == 'z'); /* the last: a hit */
    CHECK(fake_zc_reg_calls == regs0 + 6);
}

TEST_CASE("ucp rcache: without memory events", "[ucp_rcache]")
{
    fake_zc_scope scope;
    setenv("UCX_MEM_EVENTS", "no", 1);
    struct restore {
        ~restore() { unsetenv("UCX_MEM_EVENTS"); }
    } restore_env;

    SECTION("UCX_RCACHE_ENABLE=yes fails ucp_init") {
        peer p;
        settings s = zc_settings;
        s.emplace_back("RCACHE_ENABLE", "yes");
        CHECK(p.init_with(fake_zc_tl, UCP_FEATURE_TAG, s) == UCS_ERR_UNSUPPORTED);
    }
    SECTION("try (the default) registers per send") {
        peer p;
        REQUIRE(p.init_with(fake_zc_tl, UCP_FEATURE_TAG, zc_settings) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        pages out(zc_size), in(zc_size);
        const unsigned long regs0 = fake_zc_reg_calls;
        for (uint64_t i = 1; i <= 3; ++i) {
            CHECK(loop_message(p, out.base, in.base, zc_size, i) == 'z');
        }
        CHECK(fake_zc_reg_calls == regs0 + 3);
    }
}

TEST_CASE("ucp rcache: two workers of a shared context send from one buffer at once",
          "[ucp_rcache]")
{
    fake_zc_scope scope;
    peer first;
    REQUIRE(first.init_with(fake_zc_tl, UCP_FEATURE_TAG, zc_settings, true) == UCS_OK);
    peer second; /* a second worker and ep on first's context (its own
                          context stays null: first cleans up) */
    ucp_worker_params_t wparams{};
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_MULTI;
    REQUIRE(ucp_worker_create(first.context, &wparams, &second.worker) == UCS_OK);
    REQUIRE(first.connect(first.address()) == UCS_OK);
    REQUIRE(second.connect(second.address()) == UCS_OK);

    /* Each thread sends its own bytes of one buffer; the two slices share
     * a page, so their page-aligned regions overlap: the threads' gets
     * merge regions the other may be using. */
    pages out(3 * zc_size), in1(zc_size), in2(zc_size);
    const unsigned long bad0 = fake_zc_bad_memh;
    std::atomic<int> failures{0};
    auto run = [&](peer &p, uint8_t *in, size_t slice) {
        uint8_t *src = out.base + 100 + slice * (zc_size + 50);
        for (uint64_t i = 0; i < 200; ++i) {
            if (loop_message(p, src, in, zc_size, 1000 * slice + i) != 'z') {
                ++failures;
            }
        }
    };
    std::thread t1(run, std::ref(first), in1.base, 0);
    std::thread t2(run, std::ref(second), in2.base, 1);
    t1.join();
    t2.join();
    CHECK(failures == 0);
    CHECK(fake_zc_bad_memh == bad0);
}

/* ---- the testloop module ---------------------------------------------- */

namespace {

/* The loaded module's counters, or nullptr when it was not loaded. */
const testloop_counters *loop_counters()
{
    const char *dir = std::getenv("UCX_MODULE_DIR");
    if (dir == nullptr) {
        return nullptr;
    }
    const std::string path = std::string(dir) + "/libuct_testloop.so";
    void *handle           = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) {
        return nullptr;
    }
    auto get = reinterpret_cast<testloop_get_counters_fn>(dlsym(handle, TESTLOOP_GET_COUNTERS));
    const testloop_counters *counters = (get != nullptr) ? get() : nullptr;
    dlclose(handle); /* drops only the reference NOLOAD took */
    return counters;
}

/* A peer on testloop only, connected to itself; false (with a warning)
 * when the module is not in UCX_MODULE_DIR. */
bool init_loop(peer &p, const settings &extra, const testloop_counters **counters)
{
    settings s = {{"RNDV_THRESH", "65536"}, {"ZCOPY_THRESH", "4096"}};
    s.insert(s.end(), extra.begin(), extra.end());
    const ucs_status_t status = p.init_with("testloop", UCP_FEATURE_TAG | UCP_FEATURE_RMA, s);
    *counters                 = loop_counters();
    if ((status == UCS_ERR_NO_DEVICE) || (*counters == nullptr)) {
        WARN("testloop module not loaded (UCX_MODULE_DIR must name its directory): skipped");
        return false;
    }
    REQUIRE(status == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    return true;
}

} // namespace

TEST_CASE("ucp rcache on a module transport: rendezvous and eager zcopy", "[ucp_rcache_module]")
{
    constexpr size_t big = 1 << 20, mid = 16384, count = 8;
    pages out(big), in(big);

    for (const bool cached : {true, false}) {
        DYNAMIC_SECTION((cached ? "cache on" : "cache off")) {
            peer p;
            const testloop_counters *c;
            if (!init_loop(p, {{"RCACHE_ENABLE", cached ? "try" : "no"}}, &c)) {
                return;
            }
            const uint64_t regs0 = c->registrations;
            for (uint64_t i = 1; i <= count; ++i) {
                CHECK(loop_message(p, out.base, in.base, big, i) == 'r');
            }
            /* Sender and receiver buffer: each registered once with the
             * cache, every message without. */
            CHECK(c->registrations - regs0 == (cached ? 2 : 2 * count));
            for (uint64_t i = 1; i <= count; ++i) {
                CHECK(loop_message(p, out.base, in.base, mid, 100 + i) == 'z');
            }
            CHECK(c->registrations - regs0 == (cached ? 2 : 3 * count));
            CHECK(c->bad_memh == 0);
            CHECK(c->bad_rkey == 0);
        }
    }
}

/* The sender writes the whole message (put_zcopy scheme) into a receive
 * buffer the receiver registered for its pull: one registration serves both. */
TEST_CASE("ucp rcache on a module transport: a pushed rendezvous registers the receive "
          "buffer once",
          "[ucp_rcache_module]")
{
    constexpr size_t big = 1 << 20, count = 4;
    pages out(big), in(big);
    peer p;
    const testloop_counters *c;
    if (!init_loop(p, {{"RCACHE_ENABLE", "no"}, {"RNDV_SCHEME", "put_zcopy"}}, &c)) {
        return;
    }
    const uint64_t regs0 = c->registrations;
    for (uint64_t i = 1; i <= count; ++i) {
        CHECK(loop_message(p, out.base, in.base, big, i) == 'r');
    }
    CHECK(c->registrations - regs0 == 2 * count); /* the sender's and the receiver's */
    CHECK(c->live == 0);
    CHECK(c->bad_memh == 0);
    CHECK(c->bad_rkey == 0);
}

TEST_CASE("ucp rcache on a module transport: RMA zcopy passes a local handle",
          "[ucp_rcache_module]")
{
    peer p;
    const testloop_counters *c;
    if (!init_loop(p, {}, &c)) {
        return;
    }
    constexpr size_t size = 256 * 1024;
    pages target(size), local(size);
    ucp_mem_map_params_t mparams{};
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = target.base;
    mparams.length     = size;
    ucp_mem_h memh;
    REQUIRE(ucp_mem_map(p.context, &mparams, &memh) == UCS_OK);
    void *packed;
    size_t packed_size;
    REQUIRE(ucp_rkey_pack(p.context, memh, &packed, &packed_size) == UCS_OK);
    ucp_rkey_h rkey;
    REQUIRE(ucp_ep_rkey_unpack(p.ep, packed, &rkey) == UCS_OK);
    ucp_rkey_buffer_release(packed);

    const uint64_t regs0 = c->registrations;
    const auto remote    = reinterpret_cast<uint64_t>(target.base);
    ucp_request_param_t param{};
    for (uint64_t i = 1; i <= 4; ++i) {
        fill_pattern(local.base, size, i);
        CHECK(p.wait(ucp_put_nbx(p.ep, local.base, size, remote, rkey, &param)) == UCS_OK);
        CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
        CHECK(check_pattern(target.base, size, i));
        std::memset(local.base, 0, size);
        CHECK(p.wait(ucp_get_nbx(p.ep, local.base, size, remote, rkey, &param)) == UCS_OK);
        CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
        CHECK(check_pattern(local.base, size, i));
    }
    CHECK(c->registrations - regs0 == 1); /* the local buffer, once */
    CHECK(c->bad_memh == 0);
    CHECK(c->bad_rkey == 0);
    ucp_rkey_destroy(rkey);
    CHECK(ucp_mem_unmap(p.context, memh) == UCS_OK);
}
