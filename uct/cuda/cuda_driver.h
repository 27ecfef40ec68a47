/*
 * The CUDA driver API, opened at run time: the module dlopens libcuda.so.1
 * on first use instead of linking it, so it loads (and reports no
 * resources) on machines without a driver or a GPU. cuda.h provides the
 * types and prototypes; its macros map the names to the versioned entry
 * points (cuMemAlloc -> cuMemAlloc_v2), and so does this table.
 */
#ifndef UCT_CUDA_CUDA_DRIVER_H
#define UCT_CUDA_CUDA_DRIVER_H

#include <ucs/type/status.h>

#include <cuda.h>

namespace uct::cuda {

#define UCT_CUDA_DRIVER_FUNCTIONS(_fn) \
    _fn(cuInit) _fn(cuGetErrorString) _fn(cuDeviceGetCount) _fn(cuDeviceGet) _fn(cuDeviceGetName) \
        _fn(cuDevicePrimaryCtxRetain) _fn(cuCtxGetCurrent) _fn(cuCtxSetCurrent) \
            _fn(cuPointerGetAttributes) _fn(cuPointerSetAttribute) _fn(cuMemGetAddressRange) \
                _fn(cuMemAlloc) _fn(cuMemAllocManaged) _fn(cuMemFree) _fn(cuMemHostAlloc) \
                    _fn(cuMemcpyAsync) _fn(cuStreamCreate) _fn(cuStreamDestroy) \
                        _fn(cuStreamSynchronize) _fn(cuStreamWaitEvent) _fn(cuEventCreate) \
                            _fn(cuEventDestroy) _fn(cuEventRecord) _fn(cuEventQuery) \
                                _fn(cuIpcGetMemHandle) _fn(cuIpcOpenMemHandle) \
                                    _fn(cuIpcCloseMemHandle) _fn(cuMemFreeHost)

/* Entry points the module does without (nullptr when the driver lacks them). */
#define UCT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(_fn) \
    _fn(cuMemHostGetDevicePointer) _fn(cuStreamWriteValue32)

struct driver_api {
#define UCT_CUDA_DECLARE(_name) decltype(&::_name) _name = nullptr;
    UCT_CUDA_DRIVER_FUNCTIONS(UCT_CUDA_DECLARE)
    UCT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(UCT_CUDA_DECLARE)
#undef UCT_CUDA_DECLARE
    int device_count = 0;
};

/*
 * The driver, loaded and initialised (cuInit) by the first call; nullptr
 * when there is no driver library, a symbol is missing, cuInit fails (a
 * stub library) or there is no device. Why is said once at debug level.
 */
const driver_api *driver();

/* UCS_OK for CUDA_SUCCESS; otherwise logs `what` with the driver's message
 * at `error` level and returns UCS_ERR_IO_ERROR. */
ucs_status_t check(CUresult result, const char *what);

/*
 * Makes a context current on the calling thread when none is: the primary
 * context of device 0, as the runtime API (cudaMalloc) uses it.
 */
ucs_status_t ensure_context();

} // namespace uct::cuda

#endif
