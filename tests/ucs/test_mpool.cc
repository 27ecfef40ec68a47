#include <catch2/catch.hpp>

#include <ucs/debug/log.h>
#include <ucs/memory/block_cache.h>
#include <ucs/memory/mpool.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/* Counts what the pool asks of its callbacks; hands out heap chunks, or
 * deliberately misaligned ones to prove the pool aligns by itself. */
struct pool_probe {
    int chunk_allocs     = 0;
    int chunk_releases   = 0;
    bool fail_alloc      = false;
    std::size_t misalign = 0;
    std::map<void *, void *> chunks; /* returned pointer -> malloc'ed block */
    std::map<void *, int> init_count;
    std::map<void *, int> cleanup_count;
    std::set<void *> init_chunks;

    static ucs_status_t chunk_alloc(void *arg, std::size_t *size_p, void **chunk_p)
    {
        auto *probe = static_cast<pool_probe *>(arg);
        ++probe->chunk_allocs;
        if (probe->fail_alloc) {
            return UCS_ERR_NO_MEMORY;
        }
        void *block = std::malloc(*size_p + probe->misalign);
        if (block == nullptr) {
            return UCS_ERR_NO_MEMORY;
        }
        void *chunk          = static_cast<char *>(block) + probe->misalign;
        probe->chunks[chunk] = block;
        *chunk_p             = chunk;
        return UCS_OK;
    }

    static void chunk_release(void *arg, void *chunk, std::size_t)
    {
        auto *probe = static_cast<pool_probe *>(arg);
        ++probe->chunk_releases;
        auto it = probe->chunks.find(chunk);
        REQUIRE(it != probe->chunks.end());
        std::free(it->second);
        probe->chunks.erase(it);
    }

    static void obj_init(void *arg, void *obj, void *chunk)
    {
        auto *probe = static_cast<pool_probe *>(arg);
        ++probe->init_count[obj];
        probe->init_chunks.insert(chunk);
        std::memset(obj, 0xa5, 16); /* what request_init would set up */
    }

    static void obj_cleanup(void *arg, void *obj)
    {
        ++static_cast<pool_probe *>(arg)->cleanup_count[obj];
    }

    ucs::mpool_params params(const char *name, std::size_t elem_size, unsigned per_chunk,
                             unsigned max_elems = ucs::mpool::unlimited)
    {
        ucs::mpool_params p;
        p.name              = name;
        p.elem_size         = elem_size;
        p.elems_per_chunk   = per_chunk;
        p.max_elems         = max_elems;
        p.ops.chunk_alloc   = chunk_alloc;
        p.ops.chunk_release = chunk_release;
        p.ops.obj_init      = obj_init;
        p.ops.obj_cleanup   = obj_cleanup;
        p.arg               = this;
        return p;
    }
};

std::string read_file(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::size_t count_of(const std::string &text, const std::string &word)
{
    std::size_t count = 0;
    for (std::size_t pos = text.find(word); pos != std::string::npos;
         pos             = text.find(word, pos + 1)) {
        ++count;
    }
    return count;
}

/* Sends log output to a fresh temp file for one test; restores after. */
struct log_capture {
    char path[32]         = "/tmp/ucs_mpool_log_XXXXXX";
    ucs_log_level_t saved = ucs::g_log_level;

    explicit log_capture(ucs_log_level_t level)
    {
        int fd = mkstemp(path);
        REQUIRE(fd >= 0);
        close(fd);
        REQUIRE(ucs::log_set_file(path) == UCS_OK);
        ucs::log_set_level(level);
    }

    ~log_capture()
    {
        ucs::log_set_level(saved);
        ucs::log_set_file("stdout");
        unlink(path);
    }

    std::string text()
    {
        std::fflush(ucs::log_stream());
        return read_file(path);
    }
};

} // namespace

TEST_CASE("mpool: invalid parameters are refused", "[mpool]")
{
    log_capture capture(UCS_LOG_LEVEL_ERROR);
    ucs::mpool pool;
    ucs::mpool_params good;
    good.name      = "bad_params";
    good.elem_size = 32;

    auto p      = good;
    p.elem_size = 0;
    CHECK(pool.init(p) == UCS_ERR_INVALID_PARAM);
    p           = good;
    p.alignment = 0;
    CHECK(pool.init(p) == UCS_ERR_INVALID_PARAM);
    p.alignment = 24;
    CHECK(pool.init(p) == UCS_ERR_INVALID_PARAM);
    p              = good;
    p.align_offset = 33;
    CHECK(pool.init(p) == UCS_ERR_INVALID_PARAM);
    p                 = good;
    p.elems_per_chunk = 0;
    CHECK(pool.init(p) == UCS_ERR_INVALID_PARAM);
    p           = good;
    p.max_elems = 0;
    CHECK(pool.init(p) == UCS_ERR_INVALID_PARAM);
    p                 = good;
    p.ops.chunk_alloc = pool_probe::chunk_alloc; /* without chunk_release */
    CHECK(pool.init(p) == UCS_ERR_INVALID_PARAM);
    CHECK_FALSE(pool.is_initialized());

    /* An uninitialized pool gives nothing and cannot grow. */
    CHECK(pool.get() == nullptr);
    CHECK(pool.grow(4) == UCS_ERR_INVALID_PARAM);

    REQUIRE(pool.init(good) == UCS_OK);
    CHECK(pool.init(good) == UCS_ERR_ALREADY_EXISTS);
    CHECK(pool.grow(0) == UCS_ERR_INVALID_PARAM);
    CHECK(capture.text().find("bad_params") != std::string::npos);
}

TEST_CASE("mpool: elements are reused LIFO without new chunks", "[mpool]")
{
    pool_probe probe;
    ucs::mpool pool;
    REQUIRE(pool.init(probe.params("reuse", 40, 8)) == UCS_OK);
    CHECK(probe.chunk_allocs == 0); /* lazy */
    CHECK(std::string(pool.name()) == "reuse");

    void *a = pool.get();
    void *b = pool.get();
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(a != b);
    CHECK(ucs::mpool::owner(a) == &pool);
    CHECK(probe.chunk_allocs == 1);
    CHECK(pool.num_free() == 6);

    ucs::mpool::put(a);
    ucs::mpool_put(b);
    CHECK(pool.num_free() == 8);
    CHECK(pool.get() == b); /* last returned, first out */
    CHECK(pool.get() == a);

    /* Warm: many cycles touch no allocator and only known elements. */
    std::set<void *> warm{a, b};
    ucs::mpool::put(a);
    ucs::mpool::put(b);
    std::vector<void *> held;
    for (int i = 0; i < 8; ++i) {
        held.push_back(pool.get());
        warm.insert(held.back());
    }
    for (void *obj : held) {
        ucs::mpool::put(obj);
    }
    const int allocs_after_warmup = probe.chunk_allocs;
    std::mt19937 rng(7);
    held.clear();
    for (int i = 0; i < 100000; ++i) {
        if (!held.empty() && ((rng() % 2 == 0) || (held.size() == 8))) {
            ucs::mpool::put(held.back());
            held.pop_back();
        } else {
            void *obj = pool.get();
            REQUIRE(obj != nullptr);
            REQUIRE(warm.count(obj) == 1);
            held.push_back(obj);
        }
    }
    CHECK(probe.chunk_allocs == allocs_after_warmup);
    CHECK(pool.num_chunks() == 1);
    for (void *obj : held) {
        ucs::mpool::put(obj);
    }
    CHECK(pool.num_free() == pool.num_elems());
}

TEST_CASE("mpool: put does not disturb the element's contents", "[mpool]")
{
    pool_probe probe;
    ucs::mpool pool;
    REQUIRE(pool.init(probe.params("contents", 64, 4)) == UCS_OK);
    auto *obj = static_cast<unsigned char *>(pool.get());
    REQUIRE(obj != nullptr);
    for (int i = 0; i < 16; ++i) {
        CHECK(obj[i] == 0xa5); /* set by obj_init */
    }
    for (int i = 0; i < 64; ++i) {
        obj[i] = static_cast<unsigned char>(i);
    }
    ucs::mpool::put(obj);
    REQUIRE(pool.get() == obj);
    bool intact = true;
    for (int i = 0; i < 64; ++i) {
        intact = intact && (obj[i] == i);
    }
    CHECK(intact);
    ucs::mpool::put(obj);
}

TEST_CASE("mpool: grows chunk by chunk up to max_elems", "[mpool]")
{
    pool_probe probe;
    ucs::mpool pool;
    REQUIRE(pool.init(probe.params("limited", 24, 4, 10)) == UCS_OK);

    std::vector<void *> objs;
    for (int i = 0; i < 10; ++i) {
        void *obj = pool.get();
        REQUIRE(obj != nullptr);
        std::memset(obj, 0x11 * i, 24); /* elements must not overlap */
        objs.push_back(obj);
    }
    CHECK(std::set<void *>(objs.begin(), objs.end()).size() == 10);
    CHECK(probe.chunk_allocs == 3); /* 4 + 4 + 2 */
    CHECK(pool.num_chunks() == 3);
    CHECK(pool.num_elems() == 10);
    for (int i = 0; i < 10; ++i) {
        auto *bytes = static_cast<unsigned char *>(objs[i]);
        CHECK(bytes[0] == static_cast<unsigned char>(0x11 * i));
        CHECK(bytes[23] == static_cast<unsigned char>(0x11 * i));
    }

    CHECK(pool.get() == nullptr); /* limit reached */
    CHECK(pool.grow(1) == UCS_ERR_EXCEEDS_LIMIT);
    CHECK(probe.chunk_allocs == 3);

    ucs::mpool::put(objs[4]);
    CHECK(pool.get() == objs[4]);
    CHECK(pool.get() == nullptr);
    for (void *obj : objs) {
        ucs::mpool::put(obj);
    }
}

TEST_CASE("mpool: obj_init once per element, obj_cleanup once on destroy", "[mpool]")
{
    pool_probe probe;
    {
        ucs::mpool pool;
        REQUIRE(pool.init(probe.params("init_once", 48, 16)) == UCS_OK);
        std::mt19937 rng(99);
        std::vector<void *> held;
        for (int cycle = 0; cycle < 20000; ++cycle) {
            if (!held.empty() && (rng() % 3 == 0)) {
                std::size_t pick = rng() % held.size();
                ucs::mpool::put(held[pick]);
                held[pick] = held.back();
                held.pop_back();
            } else if (held.size() < 200) {
                void *obj = pool.get();
                REQUIRE(obj != nullptr);
                /* init ran before the first get, never again. */
                REQUIRE(probe.init_count[obj] == 1);
                held.push_back(obj);
            }
        }
        CHECK(probe.init_count.size() == pool.num_elems());
        for (const auto &[obj, count] : probe.init_count) {
            CHECK(count == 1);
        }
        /* Every chunk handed to obj_init is one the allocator gave. */
        CHECK(probe.init_chunks.size() == pool.num_chunks());
        for (void *chunk : probe.init_chunks) {
            CHECK(probe.chunks.count(chunk) == 1);
        }
        for (void *obj : held) {
            ucs::mpool::put(obj);
        }
        CHECK(probe.cleanup_count.empty());
    }
    /* Destroyed: every element cleaned once and every chunk released. */
    CHECK(probe.cleanup_count.size() == probe.init_count.size());
    for (const auto &[obj, count] : probe.cleanup_count) {
        CHECK(count == 1);
        CHECK(probe.init_count.count(obj) == 1);
    }
    CHECK(probe.chunk_releases == probe.chunk_allocs);
    CHECK(probe.chunks.empty());
}

TEST_CASE("mpool: every element is aligned at its offset", "[mpool]")
{
    struct layout {
        std::size_t elem_size, alignment, align_offset, misalign;
    };
    const layout layouts[] = {
        {100, 64, 24, 0}, {100, 64, 24, 3}, {8, 128, 0, 5},
        {33, 1, 0, 1},    {77, 16, 13, 7},  {4096, 4096, 64, 1},
    };

    for (const layout &l : layouts) {
        CAPTURE(l.elem_size, l.alignment, l.align_offset, l.misalign);
        pool_probe probe;
        probe.misalign = l.misalign;
        ucs::mpool pool;
        auto params         = probe.params("aligned", l.elem_size, 5);
        params.alignment    = l.alignment;
        params.align_offset = l.align_offset;
        REQUIRE(pool.init(params) == UCS_OK);
        CHECK(pool.elem_stride() % l.alignment == 0);
        CHECK(pool.elem_stride() >= l.elem_size + ucs::mpool::header_size);

        std::vector<void *> objs;
        for (int i = 0; i < 23; ++i) {
            void *obj = pool.get();
            REQUIRE(obj != nullptr);
            auto at = reinterpret_cast<std::uintptr_t>(obj) + l.align_offset;
            CHECK(at % l.alignment == 0);
            std::memset(obj, i, l.elem_size);
            CHECK(ucs::mpool::owner(obj) == &pool); /* header not clobbered */
            objs.push_back(obj);
        }
        CHECK(probe.chunk_allocs == 5);
        for (std::size_t i = 0; i < objs.size(); ++i) {
            auto *bytes = static_cast<unsigned char *>(objs[i]);
            CHECK(bytes[l.elem_size - 1] == i);
            ucs::mpool::put(objs[i]);
        }
    }
}

TEST_CASE("mpool: default allocator with small and mmap-sized chunks", "[mpool]")
{
    for (std::size_t elem_size : {std::size_t(16), std::size_t(8192)}) {
        CAPTURE(elem_size);
        ucs::mpool pool;
        ucs::mpool_params params;
        params.name            = "default_alloc";
        params.elem_size       = elem_size;
        params.alignment       = 64;
        params.elems_per_chunk = 64; /* 8k elements: a 512k chunk, mmap */
        REQUIRE(pool.init(params) == UCS_OK);

        std::vector<void *> objs;
        for (int i = 0; i < 200; ++i) {
            void *obj = pool.get();
            REQUIRE(obj != nullptr);
            CHECK(reinterpret_cast<std::uintptr_t>(obj) % 64 == 0);
            std::memset(obj, 0x5a, elem_size);
            objs.push_back(obj);
        }
        CHECK(pool.num_elems() >= 200);
        CHECK(pool.num_chunks() <= 4);
        for (void *obj : objs) {
            ucs::mpool::put(obj);
        }
        pool.cleanup();
        CHECK_FALSE(pool.is_initialized());
    }
}

TEST_CASE("mpool: grow pre-allocates so gets need no allocator", "[mpool]")
{
    pool_probe probe;
    ucs::mpool pool;
    REQUIRE(pool.init(probe.params("reserved", 32, 4, 100)) == UCS_OK);
    REQUIRE(pool.grow(50) == UCS_OK);
    CHECK(probe.chunk_allocs == 1);
    CHECK(pool.num_elems() == 50);
    CHECK(pool.num_free() == 50);

    std::vector<void *> objs;
    for (int i = 0; i < 50; ++i) {
        objs.push_back(pool.get());
        REQUIRE(objs.back() != nullptr);
    }
    CHECK(probe.chunk_allocs == 1);

    /* Past max_elems grow gives what is left, then refuses. */
    REQUIRE(pool.grow(80) == UCS_OK);
    CHECK(pool.num_elems() == 100);
    CHECK(pool.grow(1) == UCS_ERR_EXCEEDS_LIMIT);
    for (void *obj : objs) {
        ucs::mpool::put(obj);
    }
}

TEST_CASE("mpool: a failing chunk allocator makes get return null", "[mpool]")
{
    log_capture capture(UCS_LOG_LEVEL_ERROR);
    pool_probe probe;
    probe.fail_alloc = true;
    ucs::mpool pool;
    REQUIRE(pool.init(probe.params("no_memory", 32, 4)) == UCS_OK);
    CHECK(pool.get() == nullptr);
    CHECK(pool.grow(4) == UCS_ERR_NO_MEMORY);
    CHECK(pool.num_elems() == 0);

    probe.fail_alloc = false; /* recovers once memory is back */
    void *obj        = pool.get();
    CHECK(obj != nullptr);
    ucs::mpool::put(obj);
    CHECK(capture.text().find("no_memory") != std::string::npos);
}

TEST_CASE("mpool: elements go back to their own pool", "[mpool]")
{
    pool_probe probe_a, probe_b;
    ucs::mpool a, b;
    REQUIRE(a.init(probe_a.params("pool_a", 16, 4)) == UCS_OK);
    REQUIRE(b.init(probe_b.params("pool_b", 16, 4)) == UCS_OK);
    void *from_a = a.get();
    void *from_b = b.get();
    REQUIRE(from_a != nullptr);
    REQUIRE(from_b != nullptr);
    CHECK(ucs::mpool::owner(from_a) == &a);
    CHECK(ucs::mpool::owner(from_b) == &b);

    const unsigned free_a = a.num_free(), free_b = b.num_free();
    ucs::mpool_put(from_b);
    CHECK(b.num_free() == free_b + 1);
    CHECK(a.num_free() == free_a);
    ucs::mpool_put(from_a);
    CHECK(a.num_free() == free_a + 1);
}

TEST_CASE("mpool: cleanup reports leaked elements once, with the name", "[mpool]")
{
    log_capture capture(UCS_LOG_LEVEL_WARN);
    pool_probe probe;
    {
        ucs::mpool pool;
        REQUIRE(pool.init(probe.params("leaky_pool", 32, 8)) == UCS_OK);
        void *kept[3];
        for (void *&obj : kept) {
            obj = pool.get();
            REQUIRE(obj != nullptr);
        }
        void *returned = pool.get();
        ucs::mpool::put(returned);
        /* kept[] are never put back. */
    }
    std::string text = capture.text();
    CHECK(count_of(text, "not returned") == 1);
    CHECK(text.find("leaky_pool: 3 of 8 elements were not returned") != std::string::npos);
    CHECK(text.find("WARN") != std::string::npos);
    CHECK(probe.chunk_releases == 1); /* leaked or not, memory is released */

    /* A clean pool says nothing. */
    {
        ucs::mpool pool;
        REQUIRE(pool.init(probe.params("tidy_pool", 32, 8)) == UCS_OK);
        ucs::mpool::put(pool.get());
    }
    CHECK(capture.text().find("tidy_pool") == std::string::npos);
}

TEST_CASE("mpool: can be initialized again after cleanup", "[mpool]")
{
    pool_probe probe;
    ucs::mpool pool;
    REQUIRE(pool.init(probe.params("first", 32, 4)) == UCS_OK);
    ucs::mpool::put(pool.get());
    pool.cleanup();
    pool.cleanup(); /* twice: harmless */
    CHECK(probe.chunk_releases == 1);

    REQUIRE(pool.init(probe.params("second", 64, 2)) == UCS_OK);
    CHECK(std::string(pool.name()) == "second");
    CHECK(pool.num_elems() == 0);
    void *obj = pool.get();
    REQUIRE(obj != nullptr);
    CHECK(pool.num_elems() == 2);
    ucs::mpool::put(obj);
}

/* ---- block_cache: slow blocks kept for reuse, within a total ---------- */

namespace {

/* What the cache asked for: blocks got and given back, by size. */
struct block_source {
    static inline std::map<void *, size_t> live;
    static inline int gets     = 0;
    static inline int releases = 0;
    static inline bool fail    = false;

    static void *get(size_t size)
    {
        if (fail) {
            return nullptr;
        }
        ++gets;
        void *block = std::malloc(size);
        live[block] = size;
        return block;
    }

    static void release(void *block, size_t size)
    {
        ++releases;
        CHECK(live.at(block) == size);
        live.erase(block);
        std::free(block);
    }

    static void reset()
    {
        CHECK(live.empty());
        gets = releases = 0;
        fail            = false;
    }
};

} // namespace

TEST_CASE("block cache: reuse by size class, a bounded total, idle blocks of other sizes "
          "give room",
          "[mpool]")
{
    block_source::reset();
    constexpr size_t KiB = 1024;
    {
        ucs::block_cache cache(block_source::get, block_source::release,
                               {64 * KiB, 1024 * KiB, 1024 * KiB});
        /* Outside the limits: no block, nothing asked of the source. */
        CHECK(cache.get(100) == nullptr);
        CHECK(cache.get(2048 * KiB) == nullptr);
        CHECK(block_source::gets == 0);

        /* A window of four 200 KiB blocks (class 256 KiB): got once, reused. */
        for (int round = 0; round < 3; ++round) {
            std::vector<void *> window;
            for (int i = 0; i < 4; ++i) {
                window.push_back(cache.get(200 * KiB));
                REQUIRE(window.back() != nullptr);
                std::memset(window.back(), i, 200 * KiB);
            }
            CHECK(cache.get(200 * KiB) == nullptr); /* 1 MiB in use: the total */
            for (void *block : window) {
                cache.put(block, 200 * KiB);
            }
        }
        CHECK(block_source::gets == 4);
        CHECK(block_source::releases == 0);
        CHECK(cache.total() == 1024 * KiB);

        /* Another size: idle blocks make room, in use ones do not. */
        void *held = cache.get(256 * KiB); /* an idle 256 KiB block */
        void *big  = cache.get(512 * KiB); /* two idle ones give way */
        REQUIRE(big != nullptr);
        CHECK(block_source::releases == 2);
        CHECK(cache.get(512 * KiB) == nullptr); /* one idle 256 KiB left: not enough, */
        CHECK(block_source::releases == 2);     /* so it stays */
        CHECK(cache.total() == 1024 * KiB);
        void *again = cache.get(200 * KiB); /* and serves its size */
        CHECK(again != nullptr);
        CHECK(block_source::gets == 5); /* the four, and the big one */
        cache.put(again, 200 * KiB);

        /* A failing source: nothing reserved for it. */
        cache.put(held, 256 * KiB);
        held               = nullptr;
        block_source::fail = true;
        CHECK(cache.get(128 * KiB) == nullptr); /* makes room, then gets nothing */
        CHECK(block_source::releases == 3);
        CHECK(cache.total() == 768 * KiB);
        block_source::fail = false;

        cache.put(big, 512 * KiB);
    }
    /* Destroyed: every idle block went back. */
    CHECK(block_source::releases == block_source::gets);
    block_source::reset();
}
