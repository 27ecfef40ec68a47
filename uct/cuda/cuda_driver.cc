#include <uct/cuda/cuda_driver.h>

#include <ucs/debug/log.h>

#include <dlfcn.h>

#include <mutex>

namespace uct::cuda {

namespace {

#define UCT_CUDA_SYMBOL_NAME(_x) #_x
/* The name after cuda.h's macros: cuMemAlloc is looked up as cuMemAlloc_v2. */
#define UCT_CUDA_SYMBOL(_x) UCT_CUDA_SYMBOL_NAME(_x)

const driver_api *load()
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        ucs_debug("cuda: no driver library: %s", dlerror());
        return nullptr;
    }
    static driver_api api;
#define UCT_CUDA_LOAD(_name) \
    api._name = reinterpret_cast<decltype(api._name)>(dlsym(lib, UCT_CUDA_SYMBOL(_name))); \
    if (api._name == nullptr) { \
        ucs_debug("cuda: the driver lacks %s", UCT_CUDA_SYMBOL(_name)); \
        return nullptr; \
    }
    UCT_CUDA_DRIVER_FUNCTIONS(UCT_CUDA_LOAD)
#undef UCT_CUDA_LOAD
#define UCT_CUDA_LOAD_OPTIONAL(_name) \
    api._name = reinterpret_cast<decltype(api._name)>(dlsym(lib, UCT_CUDA_SYMBOL(_name)));
    UCT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(UCT_CUDA_LOAD_OPTIONAL)
#undef UCT_CUDA_LOAD_OPTIONAL
    /* The library stays open: the table points into it. */
    CUresult result = api.cuInit(0);
    if (result != CUDA_SUCCESS) {
        const char *text = nullptr;
        api.cuGetErrorString(result, &text);
        ucs_debug("cuda: cuInit failed: %s", (text != nullptr) ? text : "unknown error");
        return nullptr;
    }
    int count = 0;
    if ((api.cuDeviceGetCount(&count) != CUDA_SUCCESS) || (count <= 0)) {
        ucs_debug("cuda: no device");
        return nullptr;
    }
    api.device_count = count;
    return &api;
}

} // namespace

const driver_api *driver()
{
    static const driver_api *api = load();
    return api;
}

ucs_status_t check(CUresult result, const char *what)
{
    if (ucs_likely(result == CUDA_SUCCESS)) {
        return UCS_OK;
    }
    const char *text = nullptr;
    if (driver() != nullptr) {
        driver()->cuGetErrorString(result, &text);
    }
    ucs_error("cuda: %s failed: %s (%d)", what, (text != nullptr) ? text : "unknown error",
              int(result));
    return UCS_ERR_IO_ERROR;
}

ucs_status_t ensure_context()
{
    const driver_api *api = driver();
    if (api == nullptr) {
        return UCS_ERR_NO_DEVICE;
    }
    CUcontext current = nullptr;
    if ((api->cuCtxGetCurrent(&current) == CUDA_SUCCESS) && (current != nullptr)) {
        return UCS_OK;
    }
    static CUcontext primary = nullptr;
    static std::once_flag once;
    static ucs_status_t retained = UCS_ERR_NO_DEVICE;
    std::call_once(once, [api] {
        CUdevice device;
        retained = check(api->cuDeviceGet(&device, 0), "cuDeviceGet");
        if (retained == UCS_OK) {
            retained = check(api->cuDevicePrimaryCtxRetain(&primary, device),
                             "cuDevicePrimaryCtxRetain");
        }
    });
    if (retained != UCS_OK) {
        return retained;
    }
    return check(api->cuCtxSetCurrent(primary), "cuCtxSetCurrent");
}

} // namespace uct::cuda
