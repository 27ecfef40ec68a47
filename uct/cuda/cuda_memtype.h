/*
 * What the CUDA module gives ucs's memory-type registry: detectors for
 * CUDA and CUDA_MANAGED memory (cuPointerGetAttributes) and the staging
 * copier for both (cuMemcpyAsync on the module's stream, then a stream
 * synchronize: the data is in place when the copy returns). A small copy
 * between host and device memory goes through a pinned host buffer: the
 * copy engine reaches pinned memory directly, where pageable memory costs
 * the driver a staging pass of its own.
 *
 * Pipelines of staging copies get an asynchronous pair (start: the copy
 * queued on the same stream; finish: a stream synchronize), and bounce
 * buffers come from a cache of pinned host blocks: the copy engine moves
 * pinned memory at 40-50 GB/s on an H200, pageable at 6-12.
 *
 * The module's streams are ordinary (blocking) streams: their copies run
 * after work the application queued on the legacy default stream before
 * the UCP call (a cudaMemset or kernel on stream 0), as MPI programs that
 * use the default stream expect. Work on the application's own
 * non-blocking streams must be synchronised before the call, as with UCX.
 */
#ifndef UCT_CUDA_CUDA_MEMTYPE_H
#define UCT_CUDA_CUDA_MEMTYPE_H

#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>

#include <cstddef>

namespace uct::cuda {

/* HOST for memory the driver does not know (or no driver). */
ucs_memory_type_t pointer_memory_type(const void *address);

/* Copies between any memory the driver can address (unified addressing);
 * the types say which side is host memory (UNKNOWN: either). */
ucs_status_t staged_copy(void *dest, ucs_memory_type_t dest_type, const void *src,
                         ucs_memory_type_t src_type, size_t length);

/* staged_copy without the wait: it lands at staged_copy_finish(). */
ucs_status_t staged_copy_start(void *dest, ucs_memory_type_t dest_type, const void *src,
                               ucs_memory_type_t src_type, size_t length);
ucs_status_t staged_copy_finish();

/* Registers the detectors and copiers, once per process; called when the
 * first cuda md opens (a driver and a device are present). */
void register_memtype_services();

} // namespace uct::cuda

#endif
