/*
 * A module the test dlopens: it links libibverbs itself, like a transport
 * plugin would, and must still reach the emulator in LD_PRELOAD.
 */
#include <infiniband/verbs.h>

#include <cstring>

extern "C" __attribute__((visibility("default"))) const char *verbs_emu_probe()
{
    static char name[IBV_SYSFS_NAME_MAX];
    int count                = 0;
    struct ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr || count < 1) {
        return nullptr;
    }
    std::strncpy(name, ibv_get_device_name(list[0]), sizeof(name) - 1);
    /* an inline helper too: ibv_query_port dispatches through the context */
    struct ibv_context *ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    struct ibv_port_attr port;
    bool ok = ctx != nullptr && ibv_query_port(ctx, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE;
    if (ctx != nullptr) {
        ibv_close_device(ctx);
    }
    return ok ? name : nullptr;
}
