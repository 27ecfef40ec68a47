/*
 * Fuzz target: the shared-memory FIFO of the mm transports (uct/sm/mm), as
 * written by a hostile process on the same node. Any peer maps the whole
 * receive FIFO read-write, so the element words (flags, AM id, length),
 * the inline and bcopy payloads and the tail and head words are all
 * peer-controlled; so is the FIFO header a sender trusts when it connects.
 *
 * Input: one mode byte, then:
 *   mode 0 (receiver): operations on a fresh posix iface's FIFO, through a
 *     mapping of its segment made like a peer's (the backend's attach):
 *       op 0: u64 word, u16 n, n bytes: the payload goes inline or to the
 *             slot's bcopy buffer (as the word's BCOPY flag says, cut to
 *             the room there), then the word is published at the next
 *             index. The OWNER bit of the input word says "wrong lap":
 *             0 publishes with the right parity.
 *       op 1: u64 value written to the tail word, then event_arm()
 *       op 2: the receiver's progress()
 *       op 3: u64 value written to the head word
 *     then progress() until the FIFO is drained. Every handler call must
 *     point inside the element's inline room or the slot's bcopy buffer,
 *     for its whole length (the segment is shared memory: ASan would not
 *     see a read past a slot).
 *   mode 1 (sender): u64 segment_size, then the bytes of the first lines of
 *     a segment (FIFO header, tail, head; fuzz::pid_token as the owner pid
 *     becomes ours): a posix iface connects an ep to that segment and sends
 *     an am_short and an am_bcopy.
 */
#include "fuzz_common.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>
#include <uct/sm/mm/mm_fifo.h>
#include <uct/sm/mm/mm_iface.h>
#include <uct/sm/mm/mm_segment.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using namespace uct::mm;

/* FIFO geometry of the fuzzed iface (UCX_MM_* below). */
constexpr size_t fifo_size      = 8;
constexpr size_t elem_size      = 128;
constexpr size_t seg_size       = 256;
constexpr uct::am_id_t probe_id = 31;

struct world {
    std::unique_ptr<uct::worker> worker;
    uct::md *md        = nullptr;
    uct::iface *sender = nullptr; /* mode 1 */
    std::vector<uint8_t> node;    /* device address */
};

world g;

/* What the receiver is delivering from (its own mapping of the segment). */
struct rx_state {
    uint8_t *base = nullptr; /* learned from the probe element */
    bool probing  = true;
};

rx_state g_rx;

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_mm_fifo: %s\n", what);
        std::abort();
    }
}

ucs_status_t rx_handler(void *, void *data, size_t length, unsigned)
{
    auto *p = static_cast<uint8_t *>(data);
    if (g_rx.probing) {
        /* The probe is element 0, inline: its data is right after the word. */
        g_rx.base    = p - ELEM_HEADER_SIZE - FIFO_ELEMS_OFFSET;
        g_rx.probing = false;
        return UCS_OK;
    }
    const size_t offset    = size_t(p - g_rx.base);
    const size_t elems_end = fifo_bufs_offset(fifo_size, elem_size);
    check((p >= g_rx.base + FIFO_ELEMS_OFFSET) &&
              (offset < fifo_total_size(fifo_size, elem_size, seg_size)),
          "a handler got data outside the FIFO");
    size_t room_end;
    if (offset < elems_end) {
        const size_t slot = (offset - FIFO_ELEMS_OFFSET) / elem_size;
        check(offset >= FIFO_ELEMS_OFFSET + slot * elem_size + ELEM_HEADER_SIZE,
              "inline data overlapping an element word");
        room_end = FIFO_ELEMS_OFFSET + (slot + 1) * elem_size;
    } else {
        const size_t slot = (offset - elems_end) / seg_size;
        room_end          = elems_end + (slot + 1) * seg_size;
    }
    check(length <= room_end - offset, "a handler got a length past its slot");
    fuzz::touch(data, length);
    return UCS_OK;
}

uct::iface *open_iface()
{
    uct::iface_params params;
    params.tl_name    = "posix";
    params.dev_name   = "memory";
    uct::iface *iface = nullptr;
    check(g.md->iface_open(*g.worker, params, &iface) == UCS_OK, "posix iface");
    for (unsigned id = 0; id < uct::AM_ID_MAX; ++id) {
        iface->set_am_handler(uct::am_id_t(id), rx_handler, nullptr, 0);
    }
    return iface;
}

void publish(uint8_t *elem, uint64_t index, uint64_t word)
{
    const uint64_t parity = (index / fifo_size) & 1;
    elem_word(elem).store((word & ~elem_flag::OWNER) | ((word & elem_flag::OWNER) ^ parity),
                          std::memory_order_release);
}

void run_receiver(fuzz::cursor &in)
{
    uct::iface *rx = open_iface();
    iface_address addr;
    check(rx->get_address(&addr) == UCS_OK, "iface address");
    void *mapped = nullptr;
    check(posix_backend().attach({addr.owner_pid, addr.segment_id, addr.segment_size}, &mapped) ==
              UCS_OK,
          "attach like a peer");
    auto *base  = static_cast<uint8_t *>(mapped);
    auto *ctl   = static_cast<fifo_ctl *>(mapped);
    auto *elems = base + FIFO_ELEMS_OFFSET;
    auto *bufs  = base + fifo_bufs_offset(fifo_size, elem_size);
    check((ctl->header.fifo_size == fifo_size) && (ctl->header.elem_size == elem_size) &&
              (ctl->header.seg_size == seg_size),
          "the FIFO geometry is not the one configured");

    g_rx = rx_state{};
    publish(elems, 0, make_elem_word(0, 0, probe_id, 0));
    rx->progress();
    check(!g_rx.probing, "the probe element was not delivered");

    uint64_t index = 1;
    uint8_t op;
    while (in.get(&op)) {
        switch (op & 3) {
        case 0: {
            uint64_t word;
            uint16_t n;
            if (!in.get(&word) || !in.get(&n)) {
                break;
            }
            const uint8_t *payload;
            size_t got    = in.take(n, &payload);
            uint8_t *elem = elems + (index % fifo_size) * elem_size;
            if (word & elem_flag::BCOPY) {
                std::memcpy(bufs + (index % fifo_size) * seg_size, payload,
                            std::min(got, seg_size));
            } else {
                std::memcpy(elem + ELEM_HEADER_SIZE, payload,
                            std::min(got, elem_size - ELEM_HEADER_SIZE));
            }
            publish(elem, index++, word);
            break;
        }
        case 1: {
            uint64_t value;
            if (in.get(&value)) {
                shared_word(ctl->tail).store(value, std::memory_order_release);
                (void)rx->event_arm(uct::event_flag::RECV);
            }
            break;
        }
        case 2:
            rx->progress();
            break;
        default: {
            uint64_t value;
            if (in.get(&value)) {
                shared_word(ctl->head).store(value, std::memory_order_release);
            }
            break;
        }
        }
    }
    for (size_t i = 0; i < 4 * fifo_size; ++i) {
        rx->progress();
    }
    posix_backend().detach(mapped, addr.segment_size);
    delete rx;
}

size_t pack_bytes(void *dest, void *)
{
    std::memset(dest, 0x5a, 100);
    return 100;
}

void run_sender(fuzz::cursor &in)
{
    uint64_t segment_size;
    if (!in.get(&segment_size)) {
        return;
    }
    constexpr size_t real_size = 64 * 1024;
    local_segment seg;
    check(posix_backend().create(real_size, nullptr, &seg) == UCS_OK, "segment");
    const uint8_t *lines;
    size_t got = in.take(FIFO_ELEMS_OFFSET, &lines);
    std::memcpy(seg.address, lines, got);
    auto *hdr = static_cast<fifo_header *>(seg.address);
    if (hdr->owner_pid == fuzz::pid_token) {
        hdr->owner_pid = uint32_t(getpid());
    }

    iface_address addr{};
    addr.owner_pid    = uint32_t(getpid());
    addr.wakeup_id    = 0;
    addr.segment_id   = seg.id;
    addr.segment_size = segment_size;
    uct::ep *ep       = nullptr;
    if (g.sender->ep_create_connected(g.node.data(), g.node.size(), &addr, sizeof(addr), &ep) ==
        UCS_OK) {
        const uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        (void)ep->am_short(1, 0x1122334455667788ull, payload, sizeof(payload));
        (void)ep->am_bcopy(2, pack_bytes, nullptr, 0);
        delete ep;
    }
    g.worker->progress(); /* the sender iface reports nothing of this ep */
    posix_backend().destroy(&seg);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    static const char *const extra[] = {
        "UCX_MM_FIFO_SIZE=8",
        "UCX_MM_FIFO_ELEM_SIZE=128",
        "UCX_MM_SEG_SIZE=256",
        "UCX_MM_FIFO_RELEASE_INTERVAL=2",
        nullptr,
    };
    fuzz::init_env("posix", extra);
    uct::component *posix = nullptr;
    for (uct::component *c : uct::components()) {
        if (std::strcmp(c->name(), "posix") == 0) {
            posix = c;
        }
    }
    check((posix != nullptr) && (posix->md_open("posix", &g.md) == UCS_OK), "posix md");
    g.worker = std::make_unique<uct::worker>(nullptr, UCS_THREAD_MODE_SINGLE);
    g.sender = open_iface();
    g.node.resize(g.sender->attr().device_addr_len);
    check(g.sender->get_device_address(g.node.data()) == UCS_OK, "device address");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    fuzz::cursor in(data + 1, size - 1);
    if (data[0] & 1) {
        run_sender(in);
    } else {
        run_receiver(in);
    }
    return 0;
}
