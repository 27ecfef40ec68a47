/*
 * Transport-layer vocabulary: capability flags, callbacks, completions and the
 * pending-request record. uct is C++ inside the framework (no runtime imports
 * uct symbols), so the interface is a set of small abstract classes; flag
 * values follow UCX's uct.h so that diagnostics read the same.
 */
#ifndef UCT_BASE_UCT_TYPES_H
#define UCT_BASE_UCT_TYPES_H

#include <ucs/debug/assert.h>
#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace uct {

class component;
class md;
class iface;
class ep;
class worker;

using am_id_t                = uint8_t;
constexpr unsigned AM_ID_MAX = 32; /* ids 0..31 */

using mem_h                     = void *;    /* local registration handle */
using rkey_t                    = uintptr_t; /* unpacked remote key */
constexpr mem_h MEM_HANDLE_NULL = nullptr;

/* Interface capability flags (iface_attr::flags). */
namespace iface_flag {
constexpr uint64_t AM_SHORT               = 1ull << 0;
constexpr uint64_t AM_BCOPY               = 1ull << 1;
constexpr uint64_t AM_ZCOPY               = 1ull << 2;
constexpr uint64_t PENDING                = 1ull << 3;
constexpr uint64_t PUT_SHORT              = 1ull << 4;
constexpr uint64_t PUT_BCOPY              = 1ull << 5;
constexpr uint64_t PUT_ZCOPY              = 1ull << 6;
constexpr uint64_t GET_SHORT              = 1ull << 8;
constexpr uint64_t GET_BCOPY              = 1ull << 9;
constexpr uint64_t GET_ZCOPY              = 1ull << 10;
constexpr uint64_t ATOMIC_CPU             = 1ull << 30; /* coherent with CPU atomics */
constexpr uint64_t ATOMIC_DEVICE          = 1ull << 31; /* coherent only among transport atomics */
constexpr uint64_t ERRHANDLE_PEER_FAILURE = 1ull << 38;
constexpr uint64_t EP_CHECK               = 1ull << 39;
/* How an ep reaches its peer (every transport declares one or both):
 * ep_create_connected() to a peer iface's address, or ep_create() and then
 * ep::connect_to_ep() to a peer ep's address (uct_iface.h). */
constexpr uint64_t CONNECT_TO_IFACE    = 1ull << 40;
constexpr uint64_t CONNECT_TO_EP       = 1ull << 41;
constexpr uint64_t CONNECT_TO_SOCKADDR = 1ull << 42;
constexpr uint64_t AM_DUP              = 1ull << 43;
constexpr uint64_t CB_SYNC             = 1ull << 44;
constexpr uint64_t CB_ASYNC            = 1ull << 45;
} // namespace iface_flag

/* Event capabilities (iface_attr::event_flags) and event kinds for arm(). */
namespace event_flag {
constexpr uint64_t SEND_COMP = 1ull << 0;
constexpr uint64_t RECV      = 1ull << 1;
constexpr uint64_t RECV_SIG  = 1ull << 2;
constexpr uint64_t FD        = 1ull << 3; /* iface has a pollable fd */
} // namespace event_flag

enum class atomic_op : uint8_t { ADD, AND, OR, XOR, SWAP, CSWAP, LAST };

constexpr uint64_t atomic_op_bit(atomic_op op)
{
    return 1ull << static_cast<unsigned>(op);
}

/* Flags the receiver's AM handler gets. */
namespace am_cb_flag {
/* The data lives in a transport descriptor the handler may keep: returning
 * UCS_INPROGRESS keeps it until iface::release_am_desc(data). Without this
 * flag the data is valid only during the call. */
constexpr unsigned DESC = 1u << 0;
} // namespace am_cb_flag

/* Flags for flush(). */
namespace flush_flag {
constexpr unsigned LOCAL  = 0;       /* local buffers reusable, remote done */
constexpr unsigned CANCEL = 1u << 0; /* drop outstanding work, best effort */
} // namespace flush_flag

/*
 * Receiver-side AM handler. `data` points at the payload (the rx headroom the
 * upper layer asked for sits right before it when the DESC flag is set).
 * Returns UCS_OK when done with the data, or UCS_INPROGRESS to keep a DESC
 * buffer.
 */
using am_callback_t = ucs_status_t (*)(void *arg, void *data, size_t length, unsigned flags);

/* Packs a bcopy payload into `dest`; returns the packed length. */
using pack_callback_t = size_t (*)(void *dest, void *arg);

/* Unpacks a get_bcopy result. */
using unpack_callback_t = void (*)(void *arg, const void *data, size_t length);

/* Called with the failing endpoint when a peer is lost. */
using error_handler_t = ucs_status_t (*)(void *arg, ep *failed_ep, ucs_status_t status);

/*
 * Counted completion for zero-copy and fetching operations. The operation
 * decrements `count` when done; the callback runs when it reaches zero. The
 * first error is kept in `status`.
 */
struct completion {
    void (*func)(completion *self);
    int count;
    ucs_status_t status;
};

inline void completion_update_status(completion *comp, ucs_status_t status)
{
    if (ucs_unlikely(status != UCS_OK) && (comp->status == UCS_OK)) {
        comp->status = status;
    }
}

inline void invoke_completion(completion *comp, ucs_status_t status)
{
    ucs_assert(comp->count > 0); /* one call per operation counted */
    completion_update_status(comp, status);
    if (--comp->count == 0) {
        comp->func(comp);
    }
}

/* One scatter/gather entry of a zero-copy operation. */
struct iov {
    const void *buffer;
    size_t length;
    mem_h memh; /* registration of buffer, MEM_HANDLE_NULL if none needed */
};

/*
 * An operation waiting for resources. `func` is retried, in order, when the
 * endpoint has room again: UCS_OK means it went out (the request is dropped
 * from the queue), UCS_INPROGRESS means it progressed partly and stays first,
 * UCS_ERR_NO_RESOURCE means it stays and dispatching stops.
 * `priv` is the transport's queue bookkeeping.
 */
struct pending_req {
    ucs_status_t (*func)(pending_req *self);
    alignas(8) unsigned char priv[48];
};

/* Called for each request still queued when an endpoint purges its queue. */
using pending_purge_callback_t = void (*)(pending_req *req, void *arg);

/* Performance model an upper layer uses to choose lanes and thresholds. */
struct perf_model {
    double latency_s       = 0; /* one-way latency of a minimal message */
    double send_overhead_s = 0; /* sender CPU time per message */
    double recv_overhead_s = 0; /* receiver CPU time per message */
    double bandwidth_Bps   = 0; /* peak bandwidth per direction */
};

/* Size limits of one operation family (AM, put, get). */
struct op_limits {
    size_t max_short = 0; /* inline limit (AM: the 8-byte header included), 0 if unsupported */
    size_t max_bcopy = 0; /* buffered-copy limit */
    size_t min_zcopy = 0;
    size_t max_zcopy = 0;
    size_t opt_zcopy_align = 1;
    size_t max_iov         = 0;
    size_t max_hdr         = 0; /* AM only: zcopy header limit */
};

struct iface_attr {
    uint64_t flags       = 0; /* iface_flag:: */
    uint64_t event_flags = 0; /* event_flag:: */
    op_limits am, put, get;
    uint64_t atomic32_post = 0, atomic32_fetch = 0; /* atomic_op_bit() sets */
    uint64_t atomic64_post = 0, atomic64_fetch = 0;
    size_t device_addr_len = 0;
    size_t iface_addr_len  = 0;
    size_t ep_addr_len     = 0; /* CONNECT_TO_EP: ep::get_address() bytes */
    size_t max_num_eps     = SIZE_MAX;
    perf_model perf;
    double priority = 0; /* tie-breaker between equal models */
};

/* What kind of device a resource is. */
enum class device_type : uint8_t { NET, SHM, ACC, SELF };

struct tl_resource {
    char tl_name[32];
    char dev_name[32];
    device_type type;
};

struct iface_params {
    const char *tl_name         = nullptr;
    const char *dev_name        = nullptr;
    size_t rx_headroom          = 0;  /* bytes the handler may use before DESC data */
    const char *env_prefix      = ""; /* "MPI_" reads UCX_MPI_* first */
    error_handler_t err_handler = nullptr;
    void *err_handler_arg       = nullptr;
};

} // namespace uct

#endif
