#include <ucs/memory/memory_type.h>

/* One extra entry so that UCS_MEMORY_TYPE_UNKNOWN has a name too. */
extern "C" {

const char *ucs_memory_type_names[] = {
    "host", "cuda", "cuda-managed", "rocm", "rocm-managed", "unknown",
};

const char *ucs_memory_type_descs[] = {
    "System memory",       "NVIDIA GPU memory",           "NVIDIA GPU managed/unified memory",
    "AMD/ROCm GPU memory", "AMD/ROCm GPU managed memory", "Unknown memory type",
};
}
