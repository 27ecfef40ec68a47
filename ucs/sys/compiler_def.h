/*
 * Compiler helpers shared by the public headers.
 * The macro names and meanings follow UCX's ucs/sys/compiler_def.h, so that
 * code written against UCX headers compiles unchanged.
 */
#ifndef UCS_COMPILER_DEF_H
#define UCS_COMPILER_DEF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define BEGIN_C_DECLS extern "C" {
#define END_C_DECLS   }
#else
#define BEGIN_C_DECLS
#define END_C_DECLS
#endif

/* Compile-time check usable as a statement. */
#define UCS_STATIC_ASSERT(_cond) \
    switch (0) { \
    case 0: \
    case (_cond):; \
    }

#define UCS_ALLOCA_MAX_SIZE 1200

#define UCS_S_MAY_ALIAS         __attribute__((may_alias))
#define UCS_S_PACKED            __attribute__((packed))
#define UCS_F_PURE              __attribute__((pure))
#define UCS_F_NORETURN          __attribute__((noreturn))
#define UCS_F_NOINLINE          __attribute__((noinline))
#define UCS_F_CTOR              __attribute__((constructor))
#define UCS_F_DTOR              __attribute__((destructor))
#define UCS_F_MAYBE_UNUSED      __attribute__((used))
#define UCS_F_NON_NULL          __attribute__((nonnull))
#define UCS_F_ALWAYS_INLINE     inline __attribute__((always_inline))
#define UCS_F_PRINTF(_fmt, _va) __attribute__((format(printf, _fmt, _va)))
#define UCS_V_UNUSED            __attribute__((unused))
#define UCS_V_ALIGNED(_align)   __attribute__((aligned(_align)))
#define UCS_V_INITIALIZED(_v)   ((void)0)
#define UCS_EMPTY_STATEMENT \
    { \
    }

#define UCS_BIT(_i)  (1ul << (_i))
#define UCS_MASK(_i) (UCS_BIT(_i) - 1)

#define ucs_typeof(_x) __typeof__(_x)

#define UCS_PTR_BYTE_OFFSET(_ptr, _offset) ((void *)((intptr_t)(_ptr) + (intptr_t)(_offset)))
#define UCS_PTR_TYPE_OFFSET(_ptr, _type)   ((void *)((ucs_typeof(_type) *)(_ptr) + 1))
#define UCS_PTR_BYTE_DIFF(_start, _end)    ((ptrdiff_t)((uintptr_t)(_end) - (uintptr_t)(_start)))

#define ucs_static_array_size(_array) (sizeof(_array) / sizeof((_array)[0]))
#define ucs_offsetof(_type, _member)  ((unsigned long)&(((_type *)0)->_member))
#define ucs_container_of(_ptr, _type, _member) \
    ((_type *)((char *)(void *)(_ptr)-ucs_offsetof(_type, _member)))
#define ucs_field_sizeof(_type, _field) sizeof(((_type *)0)->_field)
#define ucs_field_type(_type, _field)   ucs_typeof(((_type *)0)->_field)
#define ucs_same_type(_type1, _type2)   __builtin_types_compatible_p(_type1, _type2)

/* Pointer to the structure whose first member, named `super`, is at _ptr. */
#define ucs_derived_of(_ptr, _type) \
    ({ \
        UCS_STATIC_ASSERT(offsetof(_type, super) == 0) \
        ucs_container_of(_ptr, _type, super); \
    })

/* Unique identifiers for file-scope helpers defined by macros. */
#define UCS_PP_TOKENPASTE_(_a, _b)     _a##_b
#define UCS_PP_TOKENPASTE(_a, _b)      UCS_PP_TOKENPASTE_(_a, _b)
#define UCS_PP_APPEND_UNIQUE_ID(_name) UCS_PP_TOKENPASTE(_name, __COUNTER__)

/* Functions run when the library is loaded / unloaded. */
#define UCS_STATIC_INIT static void UCS_F_CTOR UCS_PP_APPEND_UNIQUE_ID(ucs_initializer_ctor)(void)
#define UCS_STATIC_CLEANUP \
    static void UCS_F_DTOR UCS_PP_APPEND_UNIQUE_ID(ucs_initializer_dtor)(void)

#define ucs_compiler_fence() __asm__ __volatile__("" ::: "memory")
#define ucs_prefetch(_p)     __builtin_prefetch(_p)
/* The value of _x is the result, as in UCX (the cast lets pointers through). */
#define ucs_likely(_x)         __builtin_expect((long)(_x), 1)
#define ucs_unlikely(_x)       __builtin_expect((long)(_x), 0)
#define ucs_is_constant(_expr) __builtin_constant_p(_expr)

#endif
