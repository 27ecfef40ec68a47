/*
 * The registration cache (ucs/memory/rcache.h) over a registrar that counts
 * and checks: hits, page alignment, merging of overlapping regions,
 * reference counts, invalidation by real munmap/mremap/madvise, eviction at
 * the bounds, unmaps raised while the cache's lock is held (queued), and
 * concurrent use from several threads.
 */
#include <catch2/catch.hpp>

#include <ucm/api/ucm.h>
#include <ucs/memory/rcache.h>
#include <ucs/sys/sys_info.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <malloc.h>
#include <mutex>
#include <set>
#include <sys/mman.h>
#include <thread>
#include <utility>
#include <vector>

namespace {

const size_t page = ucs::sys::page_size();

/* Hands out a fresh number per registration and remembers which are live,
 * so a test can tell a stale handle from a current one. */
struct counting_registrar : ucs::rcache_registrar {
    std::mutex lock;
    uintptr_t next_handle = 1;
    std::set<uintptr_t> live;
    std::vector<std::pair<uintptr_t, size_t>> registered; /* every mem_reg */
    unsigned dereg_of_unknown = 0;
    /* Optional: refuse some ranges; run something inside mem_reg. */
    std::function<bool(uintptr_t, size_t)> refuse;
    std::function<void()> during_reg;

    ucs_status_t mem_reg(void *address, size_t length, void **handle_p) override
    {
        if (during_reg) {
            during_reg();
        }
        std::lock_guard<std::mutex> guard(lock);
        const auto start = reinterpret_cast<uintptr_t>(address);
        if (refuse && refuse(start, length)) {
            return UCS_ERR_IO_ERROR;
        }
        registered.emplace_back(start, length);
        const uintptr_t handle = next_handle++;
        live.insert(handle);
        *handle_p = reinterpret_cast<void *>(handle);
        return UCS_OK;
    }

    void mem_dereg(void *handle) override
    {
        std::lock_guard<std::mutex> guard(lock);
        if (live.erase(reinterpret_cast<uintptr_t>(handle)) == 0) {
            ++dereg_of_unknown;
        }
    }

    bool is_live(void *handle)
    {
        std::lock_guard<std::mutex> guard(lock);
        return live.count(reinterpret_cast<uintptr_t>(handle)) != 0;
    }

    size_t live_count()
    {
        std::lock_guard<std::mutex> guard(lock);
        return live.size();
    }
};

std::unique_ptr<ucs::rcache> make_cache(counting_registrar &reg, size_t max_regions = SIZE_MAX,
                                        size_t max_size = SIZE_MAX)
{
    ucs::rcache_params params;
    params.name        = "test";
    params.registrar   = &reg;
    params.max_regions = max_regions;
    params.max_size    = max_size;
    std::unique_ptr<ucs::rcache> cache;
    REQUIRE(ucs::rcache::create(params, &cache) == UCS_OK);
    return cache;
}

/* Anonymous pages, unmapped at the end unless the test did it. */
struct mapping {
    uint8_t *base = nullptr;
    size_t length;

    explicit mapping(size_t pages) : length(pages * page)
    {
        void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        base = static_cast<uint8_t *>(p);
    }
    ~mapping()
    {
        if (base != nullptr) {
            munmap(base, length);
        }
    }
    uint8_t *at(size_t page_index) const { return base + page_index * page; }
    uintptr_t addr(size_t page_index) const { return reinterpret_cast<uintptr_t>(at(page_index)); }
};

bool covers(const ucs::rcache_region *r, const void *address, size_t length)
{
    const auto a = reinterpret_cast<uintptr_t>(address);
    return (r->start() <= a) && (a + length <= r->end());
}

} // namespace

TEST_CASE("rcache: a second get of the same buffer is a hit", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(4);

    ucs::rcache_region *r1, *r2;
    REQUIRE(cache->get(m.at(1) + 100, 1000, &r1) == UCS_OK);
    REQUIRE(cache->get(m.at(1) + 200, 500, &r2) == UCS_OK);
    CHECK(r1 == r2);
    CHECK(reg.registered.size() == 1);
    const auto st = cache->stats();
    CHECK(st.gets == 2);
    CHECK(st.hits == 1);
    CHECK(st.registrations == 1);
    cache->put(r1);
    cache->put(r2);
    /* Still cached when unused: a third get registers nothing. */
    REQUIRE(cache->get(m.at(1), 10, &r1) == UCS_OK);
    CHECK(reg.registered.size() == 1);
    cache->put(r1);
}

TEST_CASE("rcache: regions are page-aligned and cover the request", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(4);

    ucs::rcache_region *r;
    REQUIRE(cache->get(m.at(1) + 10, page, &r) == UCS_OK); /* crosses into page 2 */
    CHECK(r->start() == m.addr(1));
    CHECK(r->end() == m.addr(3));
    CHECK(covers(r, m.at(1) + 10, page));
    REQUIRE(reg.registered.size() == 1);
    CHECK(reg.registered[0].first == m.addr(1));
    CHECK(reg.registered[0].second == 2 * page);
    cache->put(r);
}

TEST_CASE("rcache: bad requests are refused", "[rcache]")
{
    counting_registrar reg;
    auto cache            = make_cache(reg);
    ucs::rcache_region *r = nullptr;
    int x;
    CHECK(cache->get(&x, 0, &r) == UCS_ERR_INVALID_PARAM);
    CHECK(cache->get(reinterpret_cast<void *>(UINTPTR_MAX - 10), 100, &r) == UCS_ERR_INVALID_PARAM);
    CHECK(cache->get(&x, sizeof(x), nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(reg.registered.empty());

    ucs::rcache_params params; /* no registrar */
    std::unique_ptr<ucs::rcache> other;
    CHECK(ucs::rcache::create(params, &other) == UCS_ERR_INVALID_PARAM);
    params.registrar = &reg;
    params.alignment = 3000; /* not a power of two */
    CHECK(ucs::rcache::create(params, &other) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("rcache: a failed registration caches nothing", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(2);
    reg.refuse = [](uintptr_t, size_t) { return true; };
    ucs::rcache_region *r;
    CHECK(cache->get(m.at(0), 10, &r) == UCS_ERR_IO_ERROR);
    CHECK(cache->stats().regions == 0);
    reg.refuse = nullptr;
    REQUIRE(cache->get(m.at(0), 10, &r) == UCS_OK);
    CHECK(cache->stats().registrations == 1);
    cache->put(r);
}

TEST_CASE("rcache: overlapping requests merge into one region", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(8);

    ucs::rcache_region *a, *b, *c;
    REQUIRE(cache->get(m.at(1), 2 * page, &a) == UCS_OK); /* pages 1-2 */
    REQUIRE(cache->get(m.at(2), 2 * page, &b) == UCS_OK); /* pages 2-3 */
    CHECK(a != b);
    CHECK(b->start() == m.addr(1)); /* the union */
    CHECK(b->end() == m.addr(4));
    auto st = cache->stats();
    CHECK(st.merges == 1);
    CHECK(st.regions == 1);
    CHECK(st.bytes == 3 * page);
    /* `a` left the cache but is still in use: not deregistered yet. */
    CHECK(st.deregistrations == 0);
    CHECK(reg.is_live(a->handle()));
    void *a_handle = a->handle();
    cache->put(a);
    CHECK(cache->stats().deregistrations == 1);
    CHECK_FALSE(reg.is_live(a_handle));

    /* Anything inside the union hits the merged region. */
    REQUIRE(cache->get(m.at(1), 3 * page, &c) == UCS_OK);
    CHECK(c == b);
    CHECK(cache->stats().registrations == 2);
    cache->put(b);
    cache->put(c);

    /* Regions that only touch stay apart. */
    ucs::rcache_region *d;
    REQUIRE(cache->get(m.at(4), page, &d) == UCS_OK);
    CHECK(d->start() == m.addr(4));
    CHECK(cache->stats().regions == 2);
    cache->put(d);
}

TEST_CASE("rcache: a merge spanning several regions, and its fallback", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(10);

    ucs::rcache_region *r;
    /* Pages 1-2, 4 and 6-7. */
    for (auto [first, count] : {std::pair{1, 2}, std::pair{4, 1}, std::pair{6, 2}}) {
        REQUIRE(cache->get(m.at(first), count * page, &r) == UCS_OK);
        cache->put(r);
    }
    REQUIRE(cache->stats().regions == 3);
    REQUIRE(cache->get(m.at(2), 5 * page, &r) == UCS_OK); /* pages 2-6 */
    CHECK(r->start() == m.addr(1));
    CHECK(r->end() == m.addr(8));
    CHECK(cache->stats().merges == 3);
    CHECK(cache->stats().regions == 1);
    CHECK(reg.live_count() == 1); /* the unused merged ones are gone */
    cache->put(r);

    /* If the union cannot be registered, the request alone is. */
    reg.refuse = [](uintptr_t, size_t length) { return length > 2 * page; };
    REQUIRE(cache->get(m.at(7), 2 * page, &r) == UCS_OK); /* pages 7-8 */
    CHECK(r->start() == m.addr(7));
    CHECK(r->end() == m.addr(9));
    CHECK(cache->stats().regions == 1);
    cache->put(r);
}

TEST_CASE("rcache: munmap invalidates the region", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping keep(1); /* another region that must survive */
    ucs::rcache_region *k;
    REQUIRE(cache->get(keep.at(0), 8, &k) == UCS_OK);
    cache->put(k);

    auto *m       = new mapping(4);
    uint8_t *addr = m->at(0);
    ucs::rcache_region *r;
    REQUIRE(cache->get(addr, 4 * page, &r) == UCS_OK);
    void *old_handle = r->handle();
    cache->put(r);

    REQUIRE(munmap(m->base, m->length) == 0); /* through libucm's hook */
    m->base = nullptr;
    delete m;

    /* Map memory at the same address again: the old registration must not
     * be handed out for it. */
    void *again = mmap(addr, 4 * page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    REQUIRE(again == addr);
    REQUIRE(cache->get(addr, 4 * page, &r) == UCS_OK);
    CHECK(r->handle() != old_handle);
    CHECK(reg.is_live(r->handle()));
    CHECK_FALSE(reg.is_live(old_handle));
    const auto st = cache->stats();
    CHECK(st.invalidations == 1);
    CHECK(st.registrations == 3);
    CHECK(st.regions == 2);
    cache->put(r);
    munmap(addr, 4 * page);

    /* The unrelated region is still a hit. */
    REQUIRE(cache->get(keep.at(0), 8, &k) == UCS_OK);
    CHECK(cache->stats().invalidations == 2); /* the second mapping went too */
    CHECK(cache->stats().registrations == 3);
    cache->put(k);
}

TEST_CASE("rcache: unmapping part of a region invalidates all of it", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(4);
    ucs::rcache_region *r;
    REQUIRE(cache->get(m.at(0), 4 * page, &r) == UCS_OK);
    cache->put(r);
    REQUIRE(munmap(m.at(3), page) == 0);
    m.length = 3 * page;
    REQUIRE(cache->get(m.at(0), page, &r) == UCS_OK);
    CHECK(cache->stats().hits == 0);
    CHECK(cache->stats().invalidations == 1);
    CHECK(r->end() == m.addr(1));
    cache->put(r);
}

TEST_CASE("rcache: madvise(DONTNEED) and mremap invalidate", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(4);
    ucs::rcache_region *r;

    REQUIRE(cache->get(m.at(0), page, &r) == UCS_OK);
    cache->put(r);
    REQUIRE(madvise(m.at(0), page, MADV_DONTNEED) == 0);
    REQUIRE(cache->get(m.at(0), page, &r) == UCS_OK);
    CHECK(cache->stats().invalidations == 1);
    CHECK(cache->stats().registrations == 2);
    cache->put(r);

    /* libucm reports the whole old range of an mremap as unmapped (the
     * mapping may move): both regions go. */
    REQUIRE(cache->get(m.at(2), 2 * page, &r) == UCS_OK);
    cache->put(r);
    REQUIRE(mremap(m.base, 4 * page, 2 * page, 0) == m.base);
    m.length = 2 * page;
    REQUIRE(cache->get(m.at(0), page, &r) == UCS_OK); /* applies the events */
    CHECK(cache->stats().invalidations == 3);
    CHECK(cache->stats().hits == 0);
    cache->put(r);
}

TEST_CASE("rcache: a region unmapped while in use is deregistered at its last put", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping other(1);
    auto *m = new mapping(2);
    ucs::rcache_region *r, *o;
    REQUIRE(cache->get(m->at(0), page, &r) == UCS_OK);
    void *handle = r->handle();
    REQUIRE(munmap(m->base, m->length) == 0);
    m->base = nullptr;
    delete m;

    REQUIRE(cache->get(other.at(0), 8, &o) == UCS_OK); /* applies the unmap */
    CHECK(cache->stats().invalidations == 1);
    CHECK(cache->stats().regions == 1); /* only `o` */
    CHECK(reg.is_live(handle));         /* still in use */
    cache->put(r);
    CHECK_FALSE(reg.is_live(handle));
    CHECK(cache->stats().deregistrations == 1);
    cache->put(o);
}

TEST_CASE("rcache: unmaps raised under the cache's lock are queued, then applied", "[rcache]")
{
    counting_registrar reg;
    auto cache = make_cache(reg);
    mapping m(1);
    ucs::rcache_region *r;

    SECTION("one") {
        auto *victim = new mapping(1);
        REQUIRE(cache->get(victim->at(0), 8, &r) == UCS_OK);
        cache->put(r);
        /* The registrar runs under the lock: its munmap cannot take it. */
        reg.during_reg = [&] {
            if (victim != nullptr) {
                munmap(victim->base, victim->length);
                victim->base = nullptr;
            }
        };
        REQUIRE(cache->get(m.at(0), 8, &r) == UCS_OK);
        reg.during_reg = nullptr;
        CHECK(cache->stats().invalidations == 0); /* queued */
        cache->put(r);                            /* applies the queue */
        CHECK(cache->stats().invalidations == 1);
        CHECK(cache->stats().regions == 1);
        delete victim;
    }

    SECTION("more than the queue holds: nothing is missed") {
        constexpr size_t count = 100;
        mapping many(2 * count);
        for (size_t i = 0; i < count; ++i) {
            REQUIRE(cache->get(many.at(2 * i), 8, &r) == UCS_OK);
            cache->put(r);
        }
        REQUIRE(cache->stats().regions == count);
        bool done      = false;
        reg.during_reg = [&] {
            if (!done) {
                done = true;
                for (size_t i = 0; i < count; ++i) {
                    munmap(many.at(2 * i), page); /* 100 separate ranges */
                }
            }
        };
        REQUIRE(cache->get(m.at(0), 8, &r) == UCS_OK);
        reg.during_reg = nullptr;
        cache->put(r);
        CHECK(cache->stats().invalidations == count);
        CHECK(cache->stats().regions == 1);
        CHECK(reg.live_count() == 1);
    }
}

TEST_CASE("rcache: eviction keeps the bounds, least recently used first", "[rcache]")
{
    counting_registrar reg;
    mapping m(8);
    ucs::rcache_region *r;

    SECTION("max regions") {
        auto cache = make_cache(reg, 2);
        for (size_t p : {0, 2, 4}) {
            REQUIRE(cache->get(m.at(p), page, &r) == UCS_OK);
            cache->put(r);
        }
        CHECK(cache->stats().regions == 2);
        CHECK(cache->stats().evictions == 1);
        CHECK(reg.live_count() == 2);
        /* Page 0 was the least recently used: a miss; page 4 a hit. */
        REQUIRE(cache->get(m.at(4), page, &r) == UCS_OK);
        cache->put(r);
        CHECK(cache->stats().hits == 1);
        REQUIRE(cache->get(m.at(0), page, &r) == UCS_OK);
        cache->put(r);
        CHECK(cache->stats().hits == 1);
        CHECK(cache->stats().registrations == 4);
        /* ...which evicted page 2, now the least recent. */
        REQUIRE(cache->get(m.at(4), page, &r) == UCS_OK);
        cache->put(r);
        CHECK(cache->stats().hits == 2);
    }

    SECTION("max size") {
        auto cache = make_cache(reg, SIZE_MAX, 3 * page);
        REQUIRE(cache->get(m.at(0), 2 * page, &r) == UCS_OK);
        cache->put(r);
        REQUIRE(cache->get(m.at(4), 2 * page, &r) == UCS_OK);
        cache->put(r);
        CHECK(cache->stats().bytes == 2 * page);
        CHECK(cache->stats().evictions == 1);
    }

    SECTION("regions in use are not evicted") {
        auto cache = make_cache(reg, 1);
        ucs::rcache_region *a, *b;
        REQUIRE(cache->get(m.at(0), page, &a) == UCS_OK);
        REQUIRE(cache->get(m.at(2), page, &b) == UCS_OK);
        CHECK(cache->stats().regions == 2); /* over the bound, both in use */
        CHECK(cache->stats().evictions == 0);
        CHECK(reg.is_live(a->handle()));
        cache->put(a); /* now it can go */
        CHECK(cache->stats().evictions == 1);
        CHECK(cache->stats().regions == 1);
        cache->put(b);
    }
}

TEST_CASE("rcache: without memory events there is no cache", "[rcache]")
{
    counting_registrar reg;
    ucs::rcache_params params;
    params.registrar = &reg;
    std::unique_ptr<ucs::rcache> cache;
    setenv("UCX_MEM_EVENTS", "no", 1);
    const ucs_status_t status = ucs::rcache::create(params, &cache);
    unsetenv("UCX_MEM_EVENTS");
    CHECK(status == UCS_ERR_UNSUPPORTED);
    CHECK(cache == nullptr);
}

TEST_CASE("rcache: concurrent gets, puts and unmaps from several threads", "[rcache]")
{
    counting_registrar reg;
    auto cache             = make_cache(reg, 16);
    constexpr size_t pages = 64;
    mapping shared(pages);
    std::atomic<unsigned> bad{0};
    std::atomic<bool> stop{false};

    auto user = [&](unsigned seed) {
        uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
        for (int i = 0; i < 20000; ++i) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            const size_t first = x % (pages - 4);
            const size_t len   = 1 + (x >> 20) % (3 * page);
            uint8_t *addr      = shared.at(first) + (x >> 40) % page;
            ucs::rcache_region *r;
            if (cache->get(addr, len, &r) != UCS_OK) {
                ++bad;
                continue;
            }
            if (!covers(r, addr, len) || !reg.is_live(r->handle())) {
                ++bad;
            }
            cache->put(r);
        }
    };
    /* Maps and unmaps memory of its own, next to the cached regions (no
     * Catch assertion here: they are not thread-safe). */
    auto unmapper = [&] {
        while (!stop.load()) {
            void *p = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            ucs::rcache_region *r;
            if ((p == MAP_FAILED) || (cache->get(p, page, &r) != UCS_OK)) {
                ++bad;
            } else {
                cache->put(r);
            }
            if (p != MAP_FAILED) {
                munmap(p, 2 * page);
            }
        }
    };

    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 3; ++t) {
        threads.emplace_back(user, t + 1);
    }
    std::thread churn(unmapper);
    for (auto &t : threads) {
        t.join();
    }
    stop = true;
    churn.join();

    CHECK(bad == 0);
    const auto st = cache->stats();
    CHECK(st.hits > 0);
    CHECK(st.regions <= 16);               /* nothing in use any more */
    CHECK(reg.live_count() == st.regions); /* every other one deregistered */
    CHECK(st.registrations - st.deregistrations == st.regions);
    CHECK(reg.dereg_of_unknown == 0);
}

/* Also run with UCX_MEM_MMAP_HOOK_MODE=reloc (meson test rcache_reloc_hooks). */
TEST_CASE("rcache: need_allocator_unmaps needs hooks on libc's own entries",
          "[rcache][rcache_hook_mode]")
{
    counting_registrar reg;
    ucs::rcache_params params;
    params.name                  = "pinning";
    params.registrar             = &reg;
    params.need_allocator_unmaps = true;
    std::unique_ptr<ucs::rcache> cache;
    const ucs_status_t status = ucs::rcache::create(params, &cache);
    /* create() installed the hooks: their method decides. */
    if (ucm_get_installed_mmap_hook_mode() != UCM_MMAP_HOOK_BISTRO) {
        CHECK(status == UCS_ERR_UNSUPPORTED);
        CHECK(cache == nullptr);
        return;
    }
    REQUIRE(status == UCS_OK);

    /* A block malloc maps: free() unmaps it inside glibc, and the cache
     * hears of it. */
    const size_t size = 1 << 20;
    if (mallopt(M_MMAP_THRESHOLD, 64 * 1024) != 1) {
        WARN("skipped: malloc is not glibc's (a sanitizer's allocator)");
        return;
    }
    void *block = malloc(size);
    REQUIRE(block != nullptr);
    ucs::rcache_region *region;
    REQUIRE(cache->get(block, size, &region) == UCS_OK);
    void *const block_handle = region->handle();
    cache->put(region);
    free(block);
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    void *other = malloc(64); /* any get or put applies the queued unmaps */
    REQUIRE(cache->get(other, 64, &region) == UCS_OK);
    cache->put(region);
    free(other);
    CHECK(cache->stats().invalidations == 1);
    CHECK_FALSE(reg.is_live(block_handle)); /* deregistered */
}
