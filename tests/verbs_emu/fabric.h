/*
 * The fabric table: one POSIX shared-memory object per emulated machine,
 * shared by every process that uses the emulator. It plays the part of the
 * HCA's on-chip tables: queue pair numbers and where each QP's inbound ring
 * lives, memory keys, the completion-queue arm words that remote senders
 * clear to raise events, and the lock that makes atomics atomic.
 *
 * Entries belong to a process (owner pid); entries of dead owners are
 * reclaimed. Lookups of another process's entries copy and re-check them
 * (an entry may be freed or reused while we read it).
 */
#ifndef VERBS_EMU_FABRIC_H
#define VERBS_EMU_FABRIC_H

#include <atomic>
#include <cstdint>

#include <sys/types.h>

namespace verbs_emu {

constexpr uint32_t kQpSlots       = 65536;
constexpr uint32_t kMrSlots       = 1u << 20;
constexpr uint32_t kCqNotifySlots = 65536;
constexpr uint32_t kNoSlot        = 0xffffffffu;

/* Attaches this process (idempotent). 0, or an errno value. */
int fabric_attach();

struct qp_identity {
    pid_t owner;
    int ring_fd;
    uint32_t type; /* enum ibv_qp_type */
    int device_index;
    int port_num;
};

struct qp_view {
    qp_identity id;
    uint32_t state; /* enum ibv_qp_state */
    uint32_t qkey;
    uint32_t dest_qpn;
    uint32_t access; /* the QP's qp_access_flags */
};

/* Allocates a QP number; 0 or ENOMEM. */
int fabric_alloc_qp(const qp_identity &id, uint32_t *qpn);
/* Publishes what peers check before they send to the QP. */
void fabric_update_qp(uint32_t qpn, int port_num, uint32_t state, uint32_t qkey, uint32_t dest_qpn,
                      uint32_t access);
void fabric_free_qp(uint32_t qpn);
/* False if no QP has this number now. */
bool fabric_lookup_qp(uint32_t qpn, qp_view *view);

struct mr_view {
    pid_t owner;
    uint64_t addr; /* in the owner's address space */
    uint64_t iova; /* the address peers use */
    uint64_t length;
    uint32_t access;
};

/* Allocates a memory key (lkey == rkey); 0 or ENOMEM. */
int fabric_alloc_mr(const mr_view &mr, uint32_t *key);
void fabric_free_mr(uint32_t key);
bool fabric_lookup_mr(uint32_t key, mr_view *view);

/* A CQ's arm word: (arm sequence << 1) | armed. Whoever clears the armed
 * bit with a compare-and-swap sends the one event of that arming. */
int fabric_alloc_cq_notify(uint32_t *slot);
void fabric_free_cq_notify(uint32_t slot);
std::atomic<uint64_t> *fabric_cq_notify_word(uint32_t slot);

/* Serialises the emulated HCA's atomic operations machine-wide. */
class fabric_atomic_guard {
public:
    fabric_atomic_guard();
    ~fabric_atomic_guard();
    bool locked() const { return locked_; }
    fabric_atomic_guard(const fabric_atomic_guard &)            = delete;
    fabric_atomic_guard &operator=(const fabric_atomic_guard &) = delete;

private:
    bool locked_;
};

} // namespace verbs_emu

#endif
