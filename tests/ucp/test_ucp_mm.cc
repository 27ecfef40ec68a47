/*
 * ucp_mem_map and friends: registration of the application's memory,
 * allocation (by a shared-memory md or mmap), FIXED, NONBLOCK, protection,
 * query, advise, print_info, and refusal of bad arguments.
 */
#include "mem_test_util.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>

using namespace mem_test;
using ucp_test::context_holder;
using ucp_test::env_guard;
using ucp_test::log_capture;

TEST_CASE("mem_map registers the application's memory on every registering md", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    const uint64_t expected = registering_mds(ctx.context);

    std::vector<char> buffer(10000, 'x');
    mapped m(ctx.context, map_params(buffer.data(), buffer.size()));
    REQUIRE(m.status == UCS_OK);
    CHECK(m.memh->alloc_method == ucp::mem_alloc_method::NONE);
    CHECK(m.memh->md_map == expected);
    for (unsigned i = 0; i < ctx.context->mds.size(); ++i) {
        CAPTURE(ctx.context->mds[i].name);
        CHECK((m.memh->uct_memh(i) != nullptr) == ((expected & ucp::md_bit(i)) != 0));
    }
    CHECK(m.memh->uct_memh(unsigned(ctx.context->mds.size())) == nullptr);
    CHECK(m.memh->uct_memh(1000) == nullptr);

    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH |
                      UCP_MEM_ATTR_FIELD_MEM_TYPE;
    REQUIRE(ucp_mem_query(m.memh, &attr) == UCS_OK);
    CHECK(attr.address == buffer.data());
    CHECK(attr.length == buffer.size());
    CHECK(attr.mem_type == UCS_MEMORY_TYPE_HOST);

    /* Only the fields asked for are written. */
    ucp_mem_attr_t partial{};
    partial.field_mask = UCP_MEM_ATTR_FIELD_LENGTH;
    partial.address    = &partial;
    REQUIRE(ucp_mem_query(m.memh, &partial) == UCS_OK);
    CHECK(partial.length == buffer.size());
    CHECK(partial.address == &partial);

    /* Memory stays the application's: unmapping does not free it. */
    CHECK(m.unmap() == UCS_OK);
    CHECK(buffer[9999] == 'x');
}

TEST_CASE("mem_map ALLOCATE prefers memory peers can map", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    const size_t page = page_size();

    mapped m(ctx.context, map_params(nullptr, 10000, UCP_MEM_MAP_ALLOCATE));
    REQUIRE(m.status == UCS_OK);
    CHECK(m.length() >= 10000);
    CHECK(m.length() % page == 0);
    CHECK(m.raddr() % page == 0);
    std::memset(m.address(), 0xab, m.length()); /* all of it is usable */

    if (has_rkey_ptr_alloc(ctx.context)) {
        REQUIRE(m.memh->alloc_method == ucp::mem_alloc_method::MD);
        const uct::md_attr &attr = ctx.context->mds[m.memh->alloc_md_index].md->attr();
        CHECK((attr.flags & uct::md_flag::RKEY_PTR) != 0);
        CHECK(m.memh->uct_memh(m.memh->alloc_md_index) != nullptr);
    } else {
        CHECK(m.memh->alloc_method == ucp::mem_alloc_method::MMAP);
    }
    /* And it is registered where the application's memory would be. */
    const uint64_t reg = registering_mds(ctx.context);
    CHECK((m.memh->md_map & reg) == reg);
    CHECK(m.unmap() == UCS_OK);
}

TEST_CASE("mem_map ALLOCATE falls back to mmap without a shared-memory md", "[ucp_mem]")
{
    env_guard env;
    env.set("UCX_TLS", "self");
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    REQUIRE_FALSE(has_rkey_ptr_alloc(ctx.context));

    void *hint = free_range(1 << 20);
    REQUIRE(hint != nullptr);
    mapped m(ctx.context, map_params(hint, 5000, UCP_MEM_MAP_ALLOCATE));
    REQUIRE(m.status == UCS_OK);
    CHECK(m.memh->alloc_method == ucp::mem_alloc_method::MMAP);
    CHECK(m.length() == 2 * page_size());
    CHECK(permissions_of(m.address()) == "rw-p");
    std::memset(m.address(), 1, m.length());
    const int self = md_index_of(ctx.context, "self");
    REQUIRE(self >= 0);
    CHECK(m.memh->uct_memh(unsigned(self)) != nullptr);
}

namespace {

/* FIXED: exactly at the address, never over an existing mapping. */
void check_fixed(ucp_context_h context, ucp::mem_alloc_method expected_method)
{
    const size_t page = page_size();
    void *hole        = free_range(8 * page);
    REQUIRE(hole != nullptr);

    mapped m(context, map_params(hole, 3 * page + 5, UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED));
    REQUIRE(m.status == UCS_OK);
    CHECK(m.memh->alloc_method == expected_method);
    CHECK(m.address() == hole);
    CHECK(m.length() == 4 * page);
    std::strcpy(m.address() + page, "first");

    /* The same range again, or one overlapping it: refused, data kept. */
    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        mapped again(context, map_params(static_cast<char *>(hole) + 2 * page, page,
                                         UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED));
        CHECK(again.status == UCS_ERR_ALREADY_EXISTS);
        CHECK(log.text().find("already mapped") != std::string::npos);
    }
    CHECK(std::strcmp(m.address() + page, "first") == 0);

    /* The application's own mapping is never replaced either. */
    auto *mine = static_cast<char *>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(mine != MAP_FAILED);
    std::strcpy(mine, "mine");
    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        mapped over(context, map_params(mine, 2 * page, UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED));
        CHECK(over.status == UCS_ERR_ALREADY_EXISTS);
    }
    CHECK(std::strcmp(mine, "mine") == 0);
    CHECK(munmap(mine, 2 * page) == 0);

    /* Freed on unmap: the range can be taken again. */
    REQUIRE(m.unmap() == UCS_OK);
    mapped reuse(context, map_params(hole, page, UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED));
    CHECK(reuse.status == UCS_OK);
}

} // namespace

TEST_CASE("mem_map FIXED places memory exactly, never over a mapping", "[ucp_mem]")
{
    SECTION("by a shared-memory md") {
        context_holder ctx(rma_params());
        REQUIRE(ctx.status == UCS_OK);
        if (!has_rkey_ptr_alloc(ctx.context)) {
            WARN("no shared-memory md in this context");
            return;
        }
        check_fixed(ctx.context, ucp::mem_alloc_method::MD);
    }
    SECTION("by mmap") {
        env_guard env;
        env.set("UCX_TLS", "self");
        context_holder ctx(rma_params());
        REQUIRE(ctx.status == UCS_OK);
        check_fixed(ctx.context, ucp::mem_alloc_method::MMAP);
    }
}

TEST_CASE("mem_map NONBLOCK maps pages lazily, advise WILLNEED maps them", "[ucp_mem]")
{
    auto run = [](ucp_context_h context) {
        const size_t pages = 16;
        const size_t len   = pages * page_size();

        mapped eager(context, map_params(nullptr, len, UCP_MEM_MAP_ALLOCATE));
        REQUIRE(eager.status == UCS_OK);
        CHECK(resident_pages(eager.address(), len) == pages);

        mapped lazy(context, map_params(nullptr, len, UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_NONBLOCK));
        REQUIRE(lazy.status == UCS_OK);
        CHECK(resident_pages(lazy.address(), len) == 0);

        ucp_mem_advise_params_t advise{};
        advise.field_mask = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS | UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                            UCP_MEM_ADVISE_PARAM_FIELD_ADVICE;
        advise.address = lazy.address() + page_size();
        advise.length  = 2 * page_size() + 1; /* touches 3 pages */
        advise.advice  = UCP_MADV_WILLNEED;
        REQUIRE(ucp_mem_advise(context, lazy.memh, &advise) == UCS_OK);
        CHECK(resident_pages(lazy.address(), len) == 3);
        advise.advice = UCP_MADV_NORMAL;
        CHECK(ucp_mem_advise(context, lazy.memh, &advise) == UCS_OK);
    };
    SECTION("shared-memory md") {
        context_holder ctx(rma_params());
        REQUIRE(ctx.status == UCS_OK);
        run(ctx.context);
    }
    SECTION("mmap") {
        env_guard env;
        env.set("UCX_TLS", "self");
        context_holder ctx(rma_params());
        REQUIRE(ctx.status == UCS_OK);
        run(ctx.context);
    }
}

TEST_CASE("mem_map PROT sets the local protection of allocated memory", "[ucp_mem]")
{
    auto run = [](ucp_context_h context) {
        ucp_mem_map_params_t params = map_params(nullptr, 3 * page_size(), UCP_MEM_MAP_ALLOCATE);
        params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_PROT;
        params.prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_REMOTE_READ;
        mapped ro(context, params);
        REQUIRE(ro.status == UCS_OK);
        CHECK(permissions_of(ro.address()).substr(0, 3) == "r--");
        CHECK(ro.address()[0] == 0); /* readable, zero-filled */

        params.prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE;
        mapped rw(context, params);
        REQUIRE(rw.status == UCS_OK);
        CHECK(permissions_of(rw.address()).substr(0, 3) == "rw-");
    };
    SECTION("shared-memory md") {
        context_holder ctx(rma_params());
        REQUIRE(ctx.status == UCS_OK);
        run(ctx.context);
    }
    SECTION("mmap") {
        env_guard env;
        env.set("UCX_TLS", "self");
        context_holder ctx(rma_params());
        REQUIRE(ctx.status == UCS_OK);
        run(ctx.context);
    }
}

TEST_CASE("mem_map of zero bytes gives an empty handle, as UCX does", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    char byte = 0;
    for (void *address : {static_cast<void *>(&byte), static_cast<void *>(nullptr)}) {
        for (unsigned flags : {0u, unsigned(UCP_MEM_MAP_ALLOCATE)}) {
            mapped m(ctx.context, map_params(address, 0, flags));
            REQUIRE(m.status == UCS_OK);
            CHECK(m.length() == 0);
            CHECK(m.memh->md_map == 0);
            CHECK(m.memh->alloc_method == ucp::mem_alloc_method::NONE);
            ucp_mem_attr_t attr{};
            attr.field_mask = UCP_MEM_ATTR_FIELD_LENGTH;
            CHECK(ucp_mem_query(m.memh, &attr) == UCS_OK);
            CHECK(attr.length == 0);
            CHECK(m.unmap() == UCS_OK);
        }
    }
}

TEST_CASE("mem_map memory types", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(4096);
    ucp_mem_map_params_t params = map_params(buffer.data(), buffer.size());
    params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;

    SECTION("host, given or detected") {
        for (auto type : {UCS_MEMORY_TYPE_HOST, UCS_MEMORY_TYPE_UNKNOWN}) {
            params.memory_type = type;
            mapped m(ctx.context, params);
            REQUIRE(m.status == UCS_OK);
            CHECK(m.memh->mem_type == UCS_MEMORY_TYPE_HOST);
            CHECK(m.memh->md_map == registering_mds(ctx.context));
        }
    }
    SECTION("a type no md registers: a handle without registrations") {
        params.memory_type = UCS_MEMORY_TYPE_CUDA;
        mapped m(ctx.context, params);
        REQUIRE(m.status == UCS_OK);
        CHECK(m.memh->mem_type == UCS_MEMORY_TYPE_CUDA);
        CHECK(m.memh->md_map == 0);
    }
    SECTION("allocating a type nothing allocates") {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        params.address     = nullptr;
        params.flags       = UCP_MEM_MAP_ALLOCATE;
        params.memory_type = UCS_MEMORY_TYPE_ROCM;
        mapped m(ctx.context, params);
        CHECK(m.status == UCS_ERR_UNSUPPORTED);
        CHECK(log.text().find("rocm") != std::string::npos);
    }
}

TEST_CASE("mem_map refuses bad arguments", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(8192);
    ucp_mem_map_params_t good = map_params(buffer.data(), buffer.size());
    ucp_mem_h memh            = nullptr;

    auto refused = [&](ucp_mem_map_params_t params, const char *message) {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        ucp_mem_h h = nullptr;
        CHECK(ucp_mem_map(ctx.context, &params, &h) == UCS_ERR_INVALID_PARAM);
        CHECK(h == nullptr);
        CHECK(log.text().find(message) != std::string::npos);
    };
    ucp_mem_map_params_t p = good;
    p.field_mask &= ~uint64_t(UCP_MEM_MAP_PARAM_FIELD_LENGTH);
    refused(p, "length is required");

    p = good;
    p.field_mask &= ~uint64_t(UCP_MEM_MAP_PARAM_FIELD_ADDRESS); /* = NULL */
    refused(p, "requires UCP_MEM_MAP_ALLOCATE");

    p         = good;
    p.address = nullptr;
    refused(p, "requires UCP_MEM_MAP_ALLOCATE");

    p       = good;
    p.flags = 1u << 7;
    refused(p, "unknown flags");

    p = good;
    p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_PROT;
    p.prot = 1u << 4;
    refused(p, "protection");

    p = good;
    p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    const int bad_type = 77; /* what a C caller may store in the enum */
    std::memcpy(&p.memory_type, &bad_type, sizeof(bad_type));
    refused(p, "memory type");

    p       = good;
    p.flags = UCP_MEM_MAP_FIXED;
    refused(p, "requires UCP_MEM_MAP_ALLOCATE");

    p         = good;
    p.flags   = UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED;
    p.address = nullptr;
    refused(p, "page-aligned");
    p.address = free_range(4 * page_size());
    p.address = static_cast<char *>(p.address) + 16;
    refused(p, "page-aligned");

    p         = good;
    p.address = reinterpret_cast<void *>(UINTPTR_MAX - 100);
    refused(p, "wraps");
    p         = good;
    p.flags   = UCP_MEM_MAP_ALLOCATE;
    p.address = nullptr;
    p.length  = SIZE_MAX - 10;
    refused(p, "wraps");

    p = map_params(nullptr, 4096, UCP_MEM_MAP_ALLOCATE);
    p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = UCS_MEMORY_TYPE_UNKNOWN;
    refused(p, "unknown");

    /* NULLs, and handles from elsewhere in the other calls. */
    log_capture log(UCS_LOG_LEVEL_ERROR);
    CHECK(ucp_mem_map(nullptr, &good, &memh) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_map(ctx.context, nullptr, &memh) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_map(ctx.context, &good, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("NULL") != std::string::npos);
    mapped m(ctx.context, good);
    REQUIRE(m.status == UCS_OK);
    context_holder other(rma_params());
    REQUIRE(other.status == UCS_OK);
    CHECK(ucp_mem_unmap(nullptr, m.memh) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_unmap(ctx.context, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_unmap(other.context, m.memh) == UCS_ERR_INVALID_PARAM);
    ucp_mem_attr_t attr{};
    CHECK(ucp_mem_query(nullptr, &attr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_query(m.memh, nullptr) == UCS_ERR_INVALID_PARAM);

    ucp_mem_advise_params_t advise{};
    advise.field_mask = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS | UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                        UCP_MEM_ADVISE_PARAM_FIELD_ADVICE;
    advise.address = buffer.data();
    advise.length  = buffer.size();
    advise.advice  = UCP_MADV_WILLNEED;
    CHECK(ucp_mem_advise(ctx.context, m.memh, &advise) == UCS_OK);
    CHECK(ucp_mem_advise(nullptr, m.memh, &advise) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_advise(ctx.context, nullptr, &advise) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_advise(ctx.context, m.memh, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_advise(other.context, m.memh, &advise) == UCS_ERR_INVALID_PARAM);
    ucp_mem_advise_params_t bad = advise;
    bad.field_mask &= ~uint64_t(UCP_MEM_ADVISE_PARAM_FIELD_ADVICE);
    CHECK(ucp_mem_advise(ctx.context, m.memh, &bad) == UCS_ERR_INVALID_PARAM);
    bad        = advise;
    bad.length = buffer.size() + 1;
    CHECK(ucp_mem_advise(ctx.context, m.memh, &bad) == UCS_ERR_INVALID_PARAM);
    bad         = advise;
    bad.address = buffer.data() - 1;
    CHECK(ucp_mem_advise(ctx.context, m.memh, &bad) == UCS_ERR_INVALID_PARAM);
    bad                  = advise;
    const int bad_advice = 9;
    std::memcpy(&bad.advice, &bad_advice, sizeof(bad_advice));
    CHECK(ucp_mem_advise(ctx.context, m.memh, &bad) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("a memory handle that is not live is refused, never dereferenced", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(8192);
    ucp_mem_map_params_t params = map_params(buffer.data(), buffer.size());
    ucp_mem_h memh = nullptr, other = nullptr;
    REQUIRE(ucp_mem_map(ctx.context, &params, &memh) == UCS_OK);
    REQUIRE(ucp_mem_map(ctx.context, &params, &other) == UCS_OK);
    REQUIRE(ucp_mem_unmap(ctx.context, memh) == UCS_OK);

    /* The freed handle, and a wild pointer whose memory reads as garbage
     * (dereferencing either would crash or corrupt). */
    std::vector<uint64_t> garbage(64, 0x4d4d4d4d4d4d4d4dull);
    for (ucp_mem_h bad : {memh, reinterpret_cast<ucp_mem_h>(garbage.data()),
                          reinterpret_cast<ucp_mem_h>(uintptr_t(0x4d4d4d4d4d4d4d4dull))}) {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        CHECK(ucp_mem_unmap(ctx.context, bad) == UCS_ERR_INVALID_PARAM);
        ucp_mem_attr_t attr{};
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        CHECK(ucp_mem_query(bad, &attr) == UCS_ERR_INVALID_PARAM);
        void *rkey_buffer = nullptr;
        size_t size       = 0;
        CHECK(ucp_rkey_pack(ctx.context, bad, &rkey_buffer, &size) == UCS_ERR_INVALID_PARAM);
        CHECK(rkey_buffer == nullptr);
        ucp_mem_advise_params_t advise{};
        advise.field_mask = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS | UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                            UCP_MEM_ADVISE_PARAM_FIELD_ADVICE;
        advise.address = buffer.data();
        advise.length  = 64;
        advise.advice  = UCP_MADV_NORMAL;
        CHECK(ucp_mem_advise(ctx.context, bad, &advise) == UCS_ERR_INVALID_PARAM);
        CHECK(log.text().find("not a live memory handle") != std::string::npos);
    }
    CHECK(garbage[0] == 0x4d4d4d4d4d4d4d4dull); /* nothing wrote through it */

    /* The other handle of the same range is untouched and still works. */
    void *rkey_buffer = nullptr;
    size_t size       = 0;
    CHECK(ucp_rkey_pack(ctx.context, other, &rkey_buffer, &size) == UCS_OK);
    ucp_rkey_buffer_release(rkey_buffer);
    CHECK(ucp_mem_unmap(ctx.context, other) == UCS_OK);
}

TEST_CASE("mem_print_info allocates, reports and frees", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::string text      = ucp_test::print_to_string([&](FILE *f) {
        ucp_mem_print_info("6k", ctx.context, f);
    });
    const size_t expected = (6144 + page_size() - 1) / page_size() * page_size();
    CHECK(text.find("allocated " + std::to_string(expected) + " bytes") != std::string::npos);
    CHECK(text.find("registered on:") != std::string::npos);
    for (const auto &md : ctx.context->mds) {
        if (md.md->attr().flags & uct::md_flag::REG) {
            CHECK(text.find(" " + md.name) != std::string::npos);
        }
    }

    log_capture log(UCS_LOG_LEVEL_ERROR);
    text = ucp_test::print_to_string([&](FILE *f) { ucp_mem_print_info("lots", ctx.context, f); });
    CHECK(text.empty());
    CHECK(log.text().find("'lots'") != std::string::npos);
    ucp_mem_print_info(nullptr, ctx.context, stdout); /* must not crash */
    ucp_mem_print_info("1k", nullptr, stdout);
}

TEST_CASE("mem_reg_temp registers on one md for one operation", "[ucp_mem]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    ucp_context &context = *ctx.context;
    std::vector<char> buffer(3000);
    bool tried_one = false;
    for (unsigned i = 0; i < context.mds.size(); ++i) {
        CAPTURE(context.mds[i].name);
        uct::mem_h memh     = nullptr;
        ucs_status_t status = ucp::mem_reg_temp(context, i, buffer.data(), buffer.size(), &memh);
        if (!(context.mds[i].md->attr().flags & uct::md_flag::REG)) {
            CHECK(status == UCS_ERR_UNSUPPORTED);
            continue;
        }
        REQUIRE(status == UCS_OK);
        CHECK(memh != nullptr);
        CHECK(ucp::mem_dereg_temp(context, i, memh) == UCS_OK);
        tried_one = true;
    }
    CHECK(tried_one == (registering_mds(ctx.context) != 0));

    uct::mem_h memh = nullptr;
    const auto bad  = unsigned(context.mds.size());
    CHECK(ucp::mem_reg_temp(context, bad, buffer.data(), 1, &memh) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::mem_reg_temp(context, 0, buffer.data(), 1, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::mem_reg_temp(context, 0, nullptr, 1, &memh) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::mem_dereg_temp(context, bad, &memh) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::mem_dereg_temp(context, 0, nullptr) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("mem_map and unmap from several threads of a shared context", "[ucp_mem]")
{
    ucp_params_t params = rma_params();
    params.field_mask |= UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.mt_workers_shared = 1;
    context_holder ctx(params);
    REQUIRE(ctx.status == UCS_OK);

    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t]() {
            std::vector<char> buffer(4096, char(t));
            for (int i = 0; i < 200; ++i) {
                const unsigned flags   = (i % 2) ? UCP_MEM_MAP_ALLOCATE : 0;
                ucp_mem_map_params_t p = map_params(flags ? nullptr : buffer.data(), buffer.size(),
                                                    flags);
                ucp_mem_h memh         = nullptr;
                if ((ucp_mem_map(ctx.context, &p, &memh) != UCS_OK) ||
                    (ucp_mem_unmap(ctx.context, memh) != UCS_OK)) {
                    ++failures;
                }
            }
        });
    }
    for (auto &thread : threads) {
        thread.join();
    }
    CHECK(failures == 0);
}
