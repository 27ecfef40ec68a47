/* Thread-safety levels a context or worker is created with (UCX 1.13 values). */
#ifndef UCS_TYPE_THREAD_MODE_H
#define UCS_TYPE_THREAD_MODE_H

typedef enum {
    UCS_THREAD_MODE_SINGLE,     /* only the creating thread calls in */
    UCS_THREAD_MODE_SERIALIZED, /* many threads, one at a time */
    UCS_THREAD_MODE_MULTI,      /* many threads at once */
    UCS_THREAD_MODE_LAST
} ucs_thread_mode_t;

#ifdef __cplusplus
extern "C" {
#endif
extern const char *ucs_thread_mode_names[];
#ifdef __cplusplus
}
#endif

#endif
