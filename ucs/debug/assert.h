/*
 * Assertions on invariants of the hot paths: checked in debug builds
 * (meson's buildtype=debug or -Db_ndebug=false, as CI's debug job builds),
 * compiled out in release builds, where NDEBUG is defined. A failed one
 * reports file, line and the condition through the fatal log, which aborts.
 */
#ifndef UCS_DEBUG_ASSERT_H
#define UCS_DEBUG_ASSERT_H

#include <ucs/debug/log.h>

#ifdef NDEBUG
#define ucs_assert(_cond) \
    do { \
        if (false) { \
            (void)(_cond); \
        } \
    } while (0)
#else
#define ucs_assert(_cond) \
    do { \
        if (ucs_unlikely(!(_cond))) { \
            ucs::log_fatal(__FILE__, __LINE__, __func__, "assertion failed: %s", #_cond); \
        } \
    } while (0)
#endif

#endif
