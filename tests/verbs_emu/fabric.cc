#include "fabric.h"

#include "config.h"
#include "liveness.h"
#include "robust_mutex.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

constexpr uint64_t kFabricMagic   = 0x5645524253454d55ull; /* "VERBSEMU" */
constexpr uint32_t kFabricVersion = 1;
constexpr uint64_t kInitReady     = 1;
constexpr uint64_t kInitBusyTag   = 2;

/* QP numbers: slot index + 2 (0 and 1 are the special QPs of real HCAs)
 * in the low 17 bits, 7 generation bits above, so a reused slot gets a new
 * number for a while. */
constexpr uint32_t kQpnIndexBits      = 17;
constexpr uint32_t kQpnGenerationMask = 0x7f;
/* Memory keys: 20 bits of index, 12 bits of generation (never 0). */
constexpr uint32_t kMrIndexBits      = 20;
constexpr uint32_t kMrGenerationMask = 0xfff;

struct qp_slot {
    std::atomic<uint32_t> qpn; /* 0: free; stored last when taken */
    std::atomic<int32_t> owner_pid;
    std::atomic<int32_t> ring_fd;
    std::atomic<uint32_t> generation;
    std::atomic<uint32_t> type;
    std::atomic<uint32_t> device_port; /* device << 8 | port */
    std::atomic<uint32_t> state;
    std::atomic<uint32_t> qkey;
    std::atomic<uint32_t> dest_qpn;
    std::atomic<uint32_t> access;
    uint32_t unused[6];
};
static_assert(sizeof(qp_slot) == 64, "one cache line per QP slot");

struct mr_slot {
    std::atomic<uint32_t> key; /* 0: free; stored last when taken */
    std::atomic<int32_t> owner_pid;
    std::atomic<uint32_t> access;
    std::atomic<uint32_t> generation;
    std::atomic<uint64_t> addr;
    std::atomic<uint64_t> iova;
    std::atomic<uint64_t> length;
};
static_assert(sizeof(mr_slot) == 40, "compact memory-key slots");

struct cq_notify_slot {
    std::atomic<uint64_t> word;
    std::atomic<int32_t> owner_pid; /* 0: free */
    uint32_t unused;
};

struct fabric_header {
    std::atomic<uint64_t> init_word; /* 0, busy tag | pid << 8, or ready */
    uint64_t magic;
    uint32_t version;
    uint32_t unused0;
    uint64_t total_size;
    pthread_mutex_t alloc_lock;  /* all allocations and frees */
    pthread_mutex_t atomic_lock; /* the HCA's atomic unit */
    uint32_t qp_next;            /* rotating start of the next search */
    uint32_t qp_high_water;
    uint32_t mr_lowest_free;
    uint32_t mr_high_water;
    uint32_t cq_lowest_free;
    uint32_t cq_high_water;
};

struct fabric_layout {
    union {
        fabric_header header;
        char header_page[4096];
    };
    qp_slot qps[kQpSlots];
    mr_slot mrs[kMrSlots];
    cq_notify_slot cqs[kCqNotifySlots];
};

fabric_layout *g_fabric = nullptr;
std::mutex g_attach_mutex;

/* Liveness answers cached for one sweep over a table. */
class liveness_cache {
public:
    bool alive(pid_t pid)
    {
        auto it = answers_.find(pid);
        if (it != answers_.end()) {
            return it->second;
        }
        bool answer = process_alive(pid);
        answers_.emplace(pid, answer);
        return answer;
    }

private:
    std::unordered_map<pid_t, bool> answers_;
};

/* Frees entries whose owners died; caller holds alloc_lock. */
void reclaim_dead_owners(fabric_layout *f)
{
    liveness_cache cache;
    fabric_header &h = f->header;
    for (uint32_t i = 0; i < h.qp_high_water && i < kQpSlots; ++i) {
        qp_slot &slot = f->qps[i];
        if (slot.qpn.load(std::memory_order_acquire) != 0 &&
            !cache.alive(slot.owner_pid.load(std::memory_order_relaxed))) {
            slot.qpn.store(0, std::memory_order_release);
        }
    }
    for (uint32_t i = 0; i < h.mr_high_water && i < kMrSlots; ++i) {
        mr_slot &slot = f->mrs[i];
        if (slot.key.load(std::memory_order_acquire) != 0 &&
            !cache.alive(slot.owner_pid.load(std::memory_order_relaxed))) {
            slot.key.store(0, std::memory_order_release);
            if (i < h.mr_lowest_free) {
                h.mr_lowest_free = i;
            }
        }
    }
    for (uint32_t i = 0; i < h.cq_high_water && i < kCqNotifySlots; ++i) {
        cq_notify_slot &slot = f->cqs[i];
        pid_t owner          = slot.owner_pid.load(std::memory_order_acquire);
        if (owner != 0 && !cache.alive(owner)) {
            slot.owner_pid.store(0, std::memory_order_release);
            if (i < h.cq_lowest_free) {
                h.cq_lowest_free = i;
            }
        }
    }
}

int initialise(fabric_layout *f)
{
    fabric_header &h = f->header;
    int rc           = robust_mutex_init(&h.alloc_lock);
    if (rc == 0) {
        rc = robust_mutex_init(&h.atomic_lock);
    }
    if (rc != 0) {
        return rc;
    }
    h.magic          = kFabricMagic;
    h.version        = kFabricVersion;
    h.total_size     = sizeof(fabric_layout);
    h.qp_next        = 0;
    h.qp_high_water  = 0;
    h.mr_lowest_free = 0;
    h.mr_high_water  = 0;
    h.cq_lowest_free = 0;
    h.cq_high_water  = 0;
    return 0;
}

/* Waits for (or performs) the one-time initialisation of a new table. */
int wait_ready(fabric_layout *f)
{
    fabric_header &h      = f->header;
    const uint64_t my_tag = (uint64_t(getpid()) << 8) | kInitBusyTag;
    auto deadline         = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        uint64_t word = h.init_word.load(std::memory_order_acquire);
        if (word == kInitReady) {
            break;
        }
        bool take = false;
        if (word == 0) {
            take = h.init_word.compare_exchange_strong(word, my_tag);
        } else if (!process_alive(pid_t(word >> 8))) {
            /* the initialiser died half-way: start over */
            take = h.init_word.compare_exchange_strong(word, my_tag);
        }
        if (take) {
            int rc = initialise(f);
            if (rc != 0) {
                h.init_word.store(0, std::memory_order_release);
                return rc;
            }
            h.init_word.store(kInitReady, std::memory_order_release);
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            return ETIMEDOUT;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (h.magic != kFabricMagic || h.version != kFabricVersion ||
        h.total_size != sizeof(fabric_layout)) {
        return EPROTO;
    }
    return 0;
}

int map_fabric(fabric_layout **out)
{
    const std::string name = fabric_name();
    int fd                 = shm_open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        return errno;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return err;
    }
    if (st.st_size == 0) {
        /* several creators may race here; they all set the same size */
        if (ftruncate(fd, off_t(sizeof(fabric_layout))) != 0) {
            int err = errno;
            close(fd);
            return err;
        }
    } else if (size_t(st.st_size) != sizeof(fabric_layout)) {
        close(fd);
        std::fprintf(stderr,
                     "verbs_emu: fabric %s has another layout; remove "
                     "/dev/shm%s\n",
                     name.c_str(), name.c_str());
        return EPROTO;
    }
    void *base = mmap(nullptr, sizeof(fabric_layout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err    = errno;
    close(fd);
    if (base == MAP_FAILED) {
        return err;
    }
    auto *f = static_cast<fabric_layout *>(base);
    int rc  = wait_ready(f);
    if (rc != 0) {
        if (rc == EPROTO) {
            std::fprintf(stderr,
                         "verbs_emu: fabric %s is of another version; "
                         "remove /dev/shm%s\n",
                         name.c_str(), name.c_str());
        }
        munmap(base, sizeof(fabric_layout));
        return rc;
    }
    *out = f;
    return 0;
}

fabric_layout *fabric()
{
    return g_fabric;
}

uint32_t qp_index_of(uint32_t qpn)
{
    uint32_t low = qpn & ((1u << kQpnIndexBits) - 1);
    return (low >= 2) ? (low - 2) : kQpSlots;
}

} // namespace

int fabric_attach()
{
    std::lock_guard<std::mutex> guard(g_attach_mutex);
    if (g_fabric != nullptr) {
        return 0;
    }
    fabric_layout *f = nullptr;
    int rc           = map_fabric(&f);
    if (rc != 0) {
        return rc;
    }
    {
        /* tidy up after processes that died since the table was last used */
        robust_guard lock(&f->header.alloc_lock);
        if (lock.locked()) {
            reclaim_dead_owners(f);
        }
    }
    g_fabric = f;
    return 0;
}

int fabric_alloc_qp(const qp_identity &id, uint32_t *qpn)
{
    fabric_layout *f = fabric();
    if (f == nullptr) {
        return ENODEV;
    }
    robust_guard lock(&f->header.alloc_lock);
    if (!lock.locked()) {
        return EIO;
    }
    fabric_header &h = f->header;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t n = 0; n < kQpSlots; ++n) {
            uint32_t index = uint32_t((uint64_t(h.qp_next) + n) % kQpSlots);
            qp_slot &slot  = f->qps[index];
            if (slot.qpn.load(std::memory_order_acquire) != 0) {
                continue;
            }
            uint32_t generation = (slot.generation.load(std::memory_order_relaxed) + 1) &
                                  kQpnGenerationMask;
            slot.generation.store(generation, std::memory_order_relaxed);
            slot.owner_pid.store(id.owner, std::memory_order_relaxed);
            slot.ring_fd.store(id.ring_fd, std::memory_order_relaxed);
            slot.type.store(id.type, std::memory_order_relaxed);
            slot.device_port.store(uint32_t(id.device_index << 8) | uint32_t(id.port_num),
                                   std::memory_order_relaxed);
            slot.state.store(IBV_QPS_RESET, std::memory_order_relaxed);
            slot.qkey.store(0, std::memory_order_relaxed);
            slot.dest_qpn.store(0, std::memory_order_relaxed);
            slot.access.store(0, std::memory_order_relaxed);
            uint32_t number = (generation << kQpnIndexBits) | (index + 2);
            slot.qpn.store(number, std::memory_order_release);
            h.qp_next = (index + 1) % kQpSlots;
            if (index + 1 > h.qp_high_water) {
                h.qp_high_water = index + 1;
            }
            *qpn = number;
            return 0;
        }
        reclaim_dead_owners(f);
    }
    return ENOMEM;
}

void fabric_update_qp(uint32_t qpn, int port_num, uint32_t state, uint32_t qkey, uint32_t dest_qpn,
                      uint32_t access)
{
    fabric_layout *f = fabric();
    uint32_t index   = qp_index_of(qpn);
    if (f == nullptr || index >= kQpSlots) {
        return;
    }
    qp_slot &slot = f->qps[index];
    if (slot.qpn.load(std::memory_order_relaxed) != qpn) {
        return;
    }
    uint32_t device_port = slot.device_port.load(std::memory_order_relaxed);
    slot.device_port.store((device_port & ~0xffu) | uint32_t(port_num & 0xff),
                           std::memory_order_relaxed);
    slot.qkey.store(qkey, std::memory_order_relaxed);
    slot.dest_qpn.store(dest_qpn, std::memory_order_relaxed);
    slot.access.store(access, std::memory_order_relaxed);
    slot.state.store(state, std::memory_order_release);
}

void fabric_free_qp(uint32_t qpn)
{
    fabric_layout *f = fabric();
    uint32_t index   = qp_index_of(qpn);
    if (f == nullptr || index >= kQpSlots) {
        return;
    }
    robust_guard lock(&f->header.alloc_lock);
    qp_slot &slot = f->qps[index];
    if (slot.qpn.load(std::memory_order_relaxed) == qpn) {
        slot.state.store(IBV_QPS_RESET, std::memory_order_relaxed);
        slot.qpn.store(0, std::memory_order_release);
    }
}

bool fabric_lookup_qp(uint32_t qpn, qp_view *view)
{
    fabric_layout *f = fabric();
    uint32_t index   = qp_index_of(qpn);
    if (f == nullptr || index >= kQpSlots || qpn == 0) {
        return false;
    }
    qp_slot &slot = f->qps[index];
    if (slot.qpn.load(std::memory_order_acquire) != qpn) {
        return false;
    }
    uint32_t device_port  = slot.device_port.load(std::memory_order_relaxed);
    view->id.owner        = slot.owner_pid.load(std::memory_order_relaxed);
    view->id.ring_fd      = slot.ring_fd.load(std::memory_order_relaxed);
    view->id.type         = slot.type.load(std::memory_order_relaxed);
    view->id.device_index = int(device_port >> 8);
    view->id.port_num     = int(device_port & 0xff);
    view->state           = slot.state.load(std::memory_order_acquire);
    view->qkey            = slot.qkey.load(std::memory_order_relaxed);
    view->dest_qpn        = slot.dest_qpn.load(std::memory_order_relaxed);
    view->access          = slot.access.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    /* freed or reused while we read: the copy may mix two QPs */
    return slot.qpn.load(std::memory_order_relaxed) == qpn;
}

int fabric_alloc_mr(const mr_view &mr, uint32_t *key)
{
    fabric_layout *f = fabric();
    if (f == nullptr) {
        return ENODEV;
    }
    robust_guard lock(&f->header.alloc_lock);
    if (!lock.locked()) {
        return EIO;
    }
    fabric_header &h = f->header;
    for (int pass = 0; pass < 2; ++pass) {
        /* lowest free first keeps the touched part of the table small */
        /* hints live in shared memory: bound them before indexing */
        uint32_t high_water = std::min(h.mr_high_water, kMrSlots);
        uint32_t index      = std::min(h.mr_lowest_free, high_water);
        while (index < high_water && f->mrs[index].key.load(std::memory_order_relaxed) != 0) {
            ++index;
        }
        if (index >= kMrSlots) {
            reclaim_dead_owners(f);
            continue;
        }
        mr_slot &slot       = f->mrs[index];
        uint32_t generation = (slot.generation.load(std::memory_order_relaxed) + 1) &
                              kMrGenerationMask;
        if (generation == 0) {
            generation = 1;
        }
        slot.generation.store(generation, std::memory_order_relaxed);
        slot.owner_pid.store(mr.owner, std::memory_order_relaxed);
        slot.access.store(mr.access, std::memory_order_relaxed);
        slot.addr.store(mr.addr, std::memory_order_relaxed);
        slot.iova.store(mr.iova, std::memory_order_relaxed);
        slot.length.store(mr.length, std::memory_order_relaxed);
        uint32_t value = (generation << kMrIndexBits) | index;
        slot.key.store(value, std::memory_order_release);
        h.mr_lowest_free = index + 1;
        if (index + 1 > h.mr_high_water) {
            h.mr_high_water = index + 1;
        }
        *key = value;
        return 0;
    }
    return ENOMEM;
}

void fabric_free_mr(uint32_t key)
{
    fabric_layout *f = fabric();
    uint32_t index   = key & ((1u << kMrIndexBits) - 1);
    if (f == nullptr || index >= kMrSlots) {
        return;
    }
    robust_guard lock(&f->header.alloc_lock);
    mr_slot &slot = f->mrs[index];
    if (slot.key.load(std::memory_order_relaxed) == key) {
        slot.key.store(0, std::memory_order_release);
        if (index < f->header.mr_lowest_free) {
            f->header.mr_lowest_free = index;
        }
    }
}

bool fabric_lookup_mr(uint32_t key, mr_view *view)
{
    fabric_layout *f = fabric();
    uint32_t index   = key & ((1u << kMrIndexBits) - 1);
    if (f == nullptr || key == 0 || index >= kMrSlots) {
        return false;
    }
    mr_slot &slot = f->mrs[index];
    if (slot.key.load(std::memory_order_acquire) != key) {
        return false;
    }
    view->owner  = slot.owner_pid.load(std::memory_order_relaxed);
    view->access = slot.access.load(std::memory_order_relaxed);
    view->addr   = slot.addr.load(std::memory_order_relaxed);
    view->iova   = slot.iova.load(std::memory_order_relaxed);
    view->length = slot.length.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    return slot.key.load(std::memory_order_relaxed) == key;
}

int fabric_alloc_cq_notify(uint32_t *slot_index)
{
    fabric_layout *f = fabric();
    if (f == nullptr) {
        return ENODEV;
    }
    robust_guard lock(&f->header.alloc_lock);
    if (!lock.locked()) {
        return EIO;
    }
    fabric_header &h = f->header;
    for (int pass = 0; pass < 2; ++pass) {
        uint32_t high_water = std::min(h.cq_high_water, kCqNotifySlots);
        uint32_t index      = std::min(h.cq_lowest_free, high_water);
        while (index < high_water && f->cqs[index].owner_pid.load(std::memory_order_relaxed) != 0) {
            ++index;
        }
        if (index >= kCqNotifySlots) {
            reclaim_dead_owners(f);
            continue;
        }
        cq_notify_slot &slot = f->cqs[index];
        /* keep counting arm sequences across owners: a stale sender's
         * compare-and-swap of an old word can never match a new arming */
        uint64_t word = slot.word.load(std::memory_order_relaxed);
        slot.word.store(word & ~uint64_t(1), std::memory_order_relaxed);
        slot.owner_pid.store(getpid(), std::memory_order_release);
        h.cq_lowest_free = index + 1;
        if (index + 1 > h.cq_high_water) {
            h.cq_high_water = index + 1;
        }
        *slot_index = index;
        return 0;
    }
    return ENOMEM;
}

void fabric_free_cq_notify(uint32_t slot_index)
{
    fabric_layout *f = fabric();
    if (f == nullptr || slot_index >= kCqNotifySlots) {
        return;
    }
    robust_guard lock(&f->header.alloc_lock);
    cq_notify_slot &slot = f->cqs[slot_index];
    slot.word.fetch_and(~uint64_t(1));
    slot.owner_pid.store(0, std::memory_order_release);
    if (slot_index < f->header.cq_lowest_free) {
        f->header.cq_lowest_free = slot_index;
    }
}

std::atomic<uint64_t> *fabric_cq_notify_word(uint32_t slot_index)
{
    fabric_layout *f = fabric();
    if (f == nullptr || slot_index >= kCqNotifySlots) {
        return nullptr;
    }
    return &f->cqs[slot_index].word;
}

fabric_atomic_guard::fabric_atomic_guard() :
    locked_(fabric() != nullptr && robust_mutex_lock(&fabric()->header.atomic_lock) == 0)
{
}

fabric_atomic_guard::~fabric_atomic_guard()
{
    if (locked_) {
        robust_mutex_unlock(&fabric()->header.atomic_lock);
    }
}

} // namespace verbs_emu
