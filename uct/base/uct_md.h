/*
 * Components and memory domains. A component (posix, sysv, cma, tcp, self,
 * ib, cuda_copy...) discovers memory domains; a memory domain registers
 * memory, packs remote keys, and opens interfaces on its transport resources.
 * Remote keys are unpacked by the component, from bytes that came off the
 * wire: unpack validates every length and field before use.
 */
#ifndef UCT_BASE_UCT_MD_H
#define UCT_BASE_UCT_MD_H

#include <uct/base/uct_types.h>

#include <string>
#include <vector>

namespace uct {

namespace md_flag {
constexpr uint64_t ALLOC     = 1ull << 0; /* can allocate memory (e.g. shared) */
constexpr uint64_t REG       = 1ull << 1; /* can register existing memory */
constexpr uint64_t NEED_MEMH = 1ull << 2; /* ops need a local memh */
constexpr uint64_t NEED_RKEY = 1ull << 3; /* ops need a remote key */
constexpr uint64_t ADVISE    = 1ull << 4;
constexpr uint64_t FIXED     = 1ull << 5; /* can allocate at a fixed address */
constexpr uint64_t RKEY_PTR  = 1ull << 6; /* remote memory directly addressable */
constexpr uint64_t SOCKADDR  = 1ull << 7;
/* A registration holds the physical pages it found (ibv_reg_mr): after an
 * unmap the cache never sees, a cached region moves stale pages. */
constexpr uint64_t REG_PINS = 1ull << 8;
} // namespace md_flag

// clang-format off
/* Flags of md::mem_reg and md::mem_alloc (values as UCX's UCT_MD_MEM_FLAG_*). */
namespace mem_flag {
constexpr unsigned NONBLOCK = 1u << 0;  /* pages may be mapped lazily */
constexpr unsigned FIXED    = 1u << 1;  /* mem_alloc: exactly at *address_p, never
                                           replacing an existing mapping */
} // namespace mem_flag
// clang-format on

struct md_attr {
    uint64_t flags               = 0; /* md_flag:: */
    size_t max_alloc             = 0;
    size_t max_reg               = 0;
    size_t rkey_packed_size      = 0; /* bytes mkey_pack writes */
    uint64_t reg_mem_types       = 1ull << UCS_MEMORY_TYPE_HOST;
    uint64_t alloc_mem_types     = 1ull << UCS_MEMORY_TYPE_HOST; /* with md_flag::ALLOC */
    uint64_t access_mem_types    = 1ull << UCS_MEMORY_TYPE_HOST;
    uint64_t detect_mem_types    = 0;
    double reg_overhead_s        = 0; /* registration cost model */
    double reg_growth_s_per_byte = 0;
};

/* A remote key after unpacking: `rkey` goes to ep operations. */
struct rkey_bundle {
    rkey_t rkey  = 0;
    void *handle = nullptr; /* component bookkeeping for release */
};

struct md_resource {
    char md_name[32];
};

class md {
public:
    virtual ~md() = default;

    virtual const md_attr &attr() const = 0;
    virtual component &owner() const    = 0;
    virtual const char *name() const    = 0;

    /* Transport resources (tl + device) reachable through this md. */
    virtual ucs_status_t query_tl_resources(std::vector<tl_resource> *out) = 0;

    virtual ucs_status_t iface_open(worker &worker, const iface_params &params,
                                    iface **iface_p) = 0;

    virtual ucs_status_t mem_reg(void *address, size_t length, unsigned flags, mem_h *memh_p);
    virtual ucs_status_t mem_dereg(mem_h memh);

    /*
     * Allocates memory the md can expose to peers (e.g. a shared segment).
     * *length_p may grow (page rounding). With mem_flag::FIXED (mds with
     * md_flag::FIXED), *address_p is the page-aligned address the memory
     * must start at; UCS_ERR_ALREADY_EXISTS if something is mapped there.
     */
    virtual ucs_status_t mem_alloc(size_t *length_p, void **address_p, unsigned flags,
                                   mem_h *memh_p);
    /* mem_alloc of memory of `type` (one of attr().alloc_mem_types); the
     * default serves HOST through mem_alloc. */
    virtual ucs_status_t mem_alloc_of_type(ucs_memory_type_t type, size_t *length_p,
                                           void **address_p, unsigned flags, mem_h *memh_p);
    virtual ucs_status_t mem_free(mem_h memh);

    /* Writes attr().rkey_packed_size bytes describing `memh` for a peer. */
    virtual ucs_status_t mkey_pack(mem_h memh, void *buffer);

    /* Memory type of a buffer, for mds that detect (e.g. cuda). */
    virtual ucs_status_t detect_memory_type(const void *address, size_t length,
                                            ucs_memory_type_t *type_p);
};

class component {
public:
    virtual ~component() = default;

    virtual const char *name() const = 0;

    virtual ucs_status_t query_md_resources(std::vector<md_resource> *out) = 0;
    virtual ucs_status_t md_open(const char *md_name, md **md_p)           = 0;

    /*
     * Unpacks a key a peer packed with mkey_pack. `length` is what the caller
     * actually holds: a short or corrupted buffer is UCS_ERR_INVALID_PARAM.
     */
    virtual ucs_status_t rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p);
    virtual void rkey_release(const rkey_bundle &rkey);

    /* Local pointer for remote_addr under rkey, if the memory is mapped here. */
    virtual ucs_status_t rkey_ptr(const rkey_bundle &rkey, uint64_t remote_addr,
                                  void **local_addr_p);
};

/* Copies a name into a fixed-size resource field: truncated, terminated. */
void copy_resource_name(char (&dest)[32], const char *src);

/* query_md_resources of a component with one md called `md_name`: appends it. */
ucs_status_t single_md_resource(const char *md_name, std::vector<md_resource> *out);

/* query_tl_resources of an md with one transport on one device: appends it. */
ucs_status_t single_tl_resource(const char *tl_name, const char *dev_name, device_type type,
                                std::vector<tl_resource> *out);

/*
 * Every linked-in or loaded component: built-in ones in registration
 * order, then those of the loadable modules, which the first call loads
 * (uct_module.h).
 */
const std::vector<component *> &components();

/*
 * Opens the md that offers transport `tl_name` on `dev_name` (on any device
 * when it is empty): the first in components() order. The caller owns
 * *md_p. UCS_ERR_NO_DEVICE when no md offers it.
 */
ucs_status_t open_md_of(const std::string &tl_name, const std::string &dev_name,
                        component **component_p, md **md_p, tl_resource *resource_p);

/* Adds a component (once). Transports use UCT_REGISTER_TRANSPORT
 * (uct_module.h) rather than calling it themselves. */
void register_component(component *c);

} // namespace uct

#endif
