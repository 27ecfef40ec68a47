/*
 * cuda_ipc: device memory of another process on this node, reached through
 * CUDA IPC handles. Registering a buffer takes the IPC handle of the
 * allocation holding it (cached per allocation: buffer ids are never
 * reused); its packed key carries the handle and the allocation's bounds.
 * A peer unpacking the key opens the handle (cuIpcOpenMemHandle) through a
 * process-wide cache of opened handles, so a buffer used again costs no
 * driver call; unused entries are closed beyond a fixed count.
 */
#ifndef UCT_CUDA_CUDA_IPC_H
#define UCT_CUDA_CUDA_IPC_H

#include <uct/base/uct_md.h>
#include <uct/cuda/cuda_driver.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace uct::cuda {

constexpr const char *IPC_NAME = "cuda_ipc";

/* The wire form of a key. Frozen: peers of one build version read it. */
struct __attribute__((packed)) ipc_packed_key {
    uint32_t magic;
    uint32_t pid;        /* the owner, with its start time: a key of */
    uint64_t start_time; /* our own memory needs no handle opened    */
    uint64_t node;       /* ucs::sys::machine_id() of the owner */
    uint64_t base;       /* the allocation the handle maps */
    uint64_t length;
    CUipcMemHandle handle;
};

/* The pointer of [remote_addr, +length) in the mapping of `rkey` (an
 * unpacked ipc key); nullptr when outside the allocation. */
char *ipc_target(rkey_t rkey, uint64_t remote_addr, size_t length);

class ipc_component final : public uct::component {
public:
    const char *name() const override { return IPC_NAME; }
    ucs_status_t query_md_resources(std::vector<md_resource> *out) override;
    ucs_status_t md_open(const char *md_name, uct::md **md_p) override;
    /* UCS_ERR_INVALID_PARAM for a short or foreign buffer,
     * UCS_ERR_UNREACHABLE for a key of another node. */
    ucs_status_t rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p) override;
    void rkey_release(const rkey_bundle &rkey) override;
};

ipc_component &ipc_component_instance();

class ipc_md final : public uct::md {
public:
    ipc_md();
    ~ipc_md() override;

    const md_attr &attr() const override { return attr_; }
    uct::component &owner() const override { return ipc_component_instance(); }
    const char *name() const override { return IPC_NAME; }

    ucs_status_t query_tl_resources(std::vector<tl_resource> *out) override;
    ucs_status_t iface_open(uct::worker &worker, const iface_params &params,
                            uct::iface **iface_p) override;

    /* UCS_ERR_UNSUPPORTED for memory that is not device memory. */
    ucs_status_t mem_reg(void *address, size_t length, unsigned flags, mem_h *memh_p) override;
    ucs_status_t mem_dereg(mem_h memh) override;
    ucs_status_t mkey_pack(mem_h memh, void *buffer) override;

private:
    struct allocation {
        CUipcMemHandle handle;
        uint64_t base;
        uint64_t length;
    };

    md_attr attr_;
    std::mutex lock_; /* registrations come from any worker's thread */
    /* Handles of allocations registered before, by the driver's buffer id. */
    std::unordered_map<unsigned long long, allocation> handles_;
};

} // namespace uct::cuda

#endif
