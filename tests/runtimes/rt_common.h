/*
 * Shared helpers of the runtime test programs (MPI and OpenSHMEM).
 *
 * Before including this header a program defines RT_ABORT() (MPI_Abort or
 * shmem_global_exit) and RT_RANK() (its rank), so that a failed check ends
 * the whole job at once instead of leaving the other processes waiting.
 */
#ifndef RT_COMMON_H
#define RT_COMMON_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(RT_ABORT) || !defined(RT_RANK)
#error "define RT_ABORT() and RT_RANK() before including rt_common.h"
#endif

/* The runner names the directory our libucp.so.0 must come from. */
#define RT_EXPECT_ENV "RUNTIME_TEST_UCP_DIR"

static int rt_verbose;

static void rt_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    int len;
    va_list ap;

    /* One write, so lines of several failing ranks do not interleave. */
    len = snprintf(msg, sizeof(msg), "[rank %d] FAILED at %s:%d: ", RT_RANK(), file, line);
    va_start(ap, fmt);
    vsnprintf(msg + len, sizeof(msg) - (size_t)len - 1, fmt, ap);
    va_end(ap);
    strcat(msg, "\n");
    fputs(msg, stderr);
    fflush(stderr);
    RT_ABORT();
    exit(1); /* in case the abort call returns */
}

#define RT_CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            rt_fail(__FILE__, __LINE__, __VA_ARGS__); \
        } \
    } while (0)

/* For MPI calls: anything but MPI_SUCCESS is a failure. */
#define RT_MPI(_call) \
    do { \
        int _rc = (_call); \
        RT_CHECK(_rc == 0, "%s returned %d", #_call, _rc); \
    } while (0)

/* Progress note on rank 0 only, so a failing run shows how far it got. */
#define RT_STEP(...) \
    do { \
        if (rt_verbose && (RT_RANK() == 0)) { \
            printf("  - " __VA_ARGS__); \
            putchar('\n'); \
            fflush(stdout); \
        } \
    } while (0)

/* A byte pattern that differs per sender, per message and per position, so a
 * misplaced, stale or truncated block never passes the check by accident. */
static inline unsigned char rt_pattern(uint64_t seed, size_t i)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0x100000001B3ull;

    return (unsigned char)((x >> 29) ^ (x >> 7) ^ i);
}

static inline void rt_fill(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = (unsigned char *)buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = rt_pattern(seed, i);
    }
}

/* Returns the first mismatching offset, or (size_t)-1 when the data is right. */
static inline size_t rt_find_mismatch(const void *buf, size_t len, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        if (p[i] != rt_pattern(seed, i)) {
            return i;
        }
    }
    return (size_t)-1;
}

#define RT_CHECK_DATA(_buf, _len, _seed, _what) \
    do { \
        size_t _bad = rt_find_mismatch((_buf), (_len), (_seed)); \
        RT_CHECK(_bad == (size_t)-1, \
                 "%s: %zu bytes, wrong byte at offset %zu " \
                 "(got 0x%02x, expected 0x%02x)", \
                 (_what), (size_t)(_len), _bad, ((const unsigned char *)(_buf))[_bad], \
                 rt_pattern((_seed), _bad)); \
    } while (0)

static inline void *rt_malloc(size_t len)
{
    void *p = malloc(len ? len : 1);

    RT_CHECK(p != NULL, "malloc(%zu) failed", len);
    return p;
}

/* The runner sets this when the library under test is Debian's UCX 1.13:
 * checks of behaviour UCX 1.13 itself gets wrong are skipped there (ours
 * must pass them). */
static inline int rt_skip_ucx113_bugs(void)
{
    const char *v = getenv("RUNTIME_TEST_SKIP_UCX113_BUGS");

    return (v != NULL) && (strcmp(v, "1") == 0);
}

/* Directory part of a path, resolved (so /lib and /usr/lib compare equal on
 * merged-/usr systems); returns 0 on failure. */
static int rt_real_dir(const char *path, int strip_file, char *out)
{
    char tmp[PATH_MAX];
    char *slash;

    snprintf(tmp, sizeof(tmp), "%s", path);
    if (strip_file) {
        slash = strrchr(tmp, '/');
        if (slash == NULL) {
            return 0;
        }
        *slash = '\0';
    }
    return realpath(tmp, out) != NULL;
}

/* True when the file name is NAME followed by nothing or by a dot
 * ("libuct.so.0" is libuct, "libuct_ib.so.0" is not). */
static int rt_is_lib(const char *path, const char *name)
{
    const char *base = strrchr(path, '/');
    size_t len       = strlen(name);

    base = (base == NULL) ? path : base + 1;
    return (strncmp(base, name, len) == 0) && ((base[len] == '\0') || (base[len] == '.'));
}

/*
 * Checks that libucp.so.0 is mapped into this process and that it, and any
 * libucs/libuct/libucm mapped beside it, comes from the expected directory
 * (the runner sets RUNTIME_TEST_UCP_DIR; the ucs/uct/ucm libraries may live
 * in sibling directories of a build tree, so only their presence in the
 * runner's LD_LIBRARY_PATH matters for them: RUNTIME_TEST_UCX_DIRS).
 * Call it after MPI_Init/shmem_init: Open MPI loads libucp with dlopen.
 */
static void rt_check_ucx_mapping(void)
{
    static const char *const others[] = {"libucs", "libuct", "libucm"};
    const char *expect                = getenv(RT_EXPECT_ENV);
    const char *all_dirs              = getenv("RUNTIME_TEST_UCX_DIRS");
    char want[PATH_MAX], got[PATH_MAX], line[PATH_MAX + 256];
    int found_ucp = 0;
    unsigned i;
    FILE *maps;

    rt_verbose = getenv("RUNTIME_TEST_VERBOSE") != NULL;
    RT_CHECK(expect != NULL, "%s is not set: run through run_runtime_tests.py", RT_EXPECT_ENV);
    RT_CHECK(rt_real_dir(expect, 0, want), "expected directory %s: %s", expect, "cannot resolve");

    maps = fopen("/proc/self/maps", "r");
    RT_CHECK(maps != NULL, "cannot open /proc/self/maps");
    while (fgets(line, sizeof(line), maps) != NULL) {
        char *path = strchr(line, '/');

        if (path == NULL) {
            continue;
        }
        path[strcspn(path, "\n")] = '\0';
        if (rt_is_lib(path, "libucp")) {
            RT_CHECK(rt_real_dir(path, 1, got), "cannot resolve %s", path);
            RT_CHECK(strcmp(got, want) == 0, "libucp mapped from %s, expected from %s (%s)", got,
                     want, path);
            found_ucp = 1;
            continue;
        }
        for (i = 0; i < sizeof(others) / sizeof(others[0]); ++i) {
            char dirs[4 * PATH_MAX], *save = NULL, *dir;
            int matched = 0;

            if (!rt_is_lib(path, others[i]) || (all_dirs == NULL)) {
                continue;
            }
            RT_CHECK(rt_real_dir(path, 1, got), "cannot resolve %s", path);
            snprintf(dirs, sizeof(dirs), "%s", all_dirs);
            for (dir = strtok_r(dirs, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
                char real[PATH_MAX];

                if (rt_real_dir(dir, 0, real) && (strcmp(real, got) == 0)) {
                    matched = 1;
                }
            }
            RT_CHECK(matched, "%s mapped from %s, which is not one of %s", path, got, all_dirs);
        }
    }
    fclose(maps);
    RT_CHECK(found_ucp, "libucp.so is not mapped into this process: "
                        "the runtime did not select UCX");
}

#endif
