/*
 * Kinds of memory a buffer can live in. Values are UCX 1.13's: they are
 * passed through ucp_request_param_t and ucp_mem_map_params_t.
 */
#ifndef UCS_MEMORY_TYPE_H_
#define UCS_MEMORY_TYPE_H_

#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

typedef enum ucs_memory_type {
    UCS_MEMORY_TYPE_HOST,         /* ordinary system memory */
    UCS_MEMORY_TYPE_CUDA,         /* CUDA device memory */
    UCS_MEMORY_TYPE_CUDA_MANAGED, /* CUDA managed (unified) memory */
    UCS_MEMORY_TYPE_ROCM,         /* ROCm device memory */
    UCS_MEMORY_TYPE_ROCM_MANAGED, /* ROCm managed memory */
    UCS_MEMORY_TYPE_LAST,
    UCS_MEMORY_TYPE_UNKNOWN = UCS_MEMORY_TYPE_LAST
} ucs_memory_type_t;

/* Memory types a CPU load or store can touch directly. */
#define UCS_MEMORY_TYPES_CPU_ACCESSIBLE \
    (UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCS_BIT(UCS_MEMORY_TYPE_ROCM_MANAGED))

#define ucs_memory_type_for_each(_x) \
    for ((_x) = UCS_MEMORY_TYPE_HOST; (_x) < UCS_MEMORY_TYPE_LAST; (_x)++)

/* Short names ("host", "cuda", ...) and descriptions, indexed by type. */
extern const char *ucs_memory_type_names[];
extern const char *ucs_memory_type_descs[];

END_C_DECLS

#endif
