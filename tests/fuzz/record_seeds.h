/*
 * record_corpus's output: what was recorded, put in each fuzz target's
 * input format (the targets' own comments describe those) and written to
 * OUTDIR/<target>/<name>-<n>.
 */
#ifndef TESTS_FUZZ_RECORD_SEEDS_H
#define TESTS_FUZZ_RECORD_SEEDS_H

#include "record_sockets.h"

#include <ucp/api/ucp.h>
#include <uct/sm/mm/mm_fifo.h>

#include <map>
#include <memory>
#include <string>

namespace record {

/* Where emit() writes; set once before the first. */
extern std::string outdir;

/* Values that differ between processes (tcp region ids, UCP region
 * secrets): every copy of `value` in the inputs emit() writes becomes
 * `token`, which the targets replace with their own value. */
void replace_in_inputs(uint64_t value, uint64_t token);

/* Writes one input of `target`, cut to the target's largest input. */
void emit(const std::string &target, const std::string &name, bytes input);

/* Inputs written per target. */
const std::map<std::string, unsigned> &written();

template <typename T>
void put(bytes &out, const T &value)
{
    const auto *p = reinterpret_cast<const uint8_t *>(&value);
    out.insert(out.end(), p, p + sizeof(value));
}

inline void put(bytes &out, const uint8_t *data, size_t length)
{
    out.insert(out.end(), data, data + length);
}

/*
 * The socket streams recorded so far, cut into frames: tcp streams (an
 * acceptor's from the handshake on, an initiator's from the CONN_ACCEPT on)
 * for fuzz_tcp_rx, their active messages for fuzz_ucp_am, wireup addresses
 * for fuzz_address, client-server frames for fuzz_cs_frame and
 * fuzz_address. A handshake's acceptor key becomes fuzz::iface_key_token.
 */
void emit_streams();

/*
 * A peer's view of a worker's posix receive FIFO: look() copies every
 * element published since the last look (call it before the owner
 * progresses); emit_all() writes them for fuzz_mm_fifo and fuzz_ucp_am,
 * with the FIFO header as a sender reads it.
 */
class fifo_tap {
public:
    /* The posix FIFO of `worker` (null if it has no posix iface). */
    static std::unique_ptr<fifo_tap> of(ucp_worker_h worker, const std::string &owner);
    ~fifo_tap();

    void look();
    void emit_all();

private:
    std::string owner_; /* names the inputs */
    uint8_t *base_ = nullptr;
    size_t size_   = 0;
    uct::mm::fifo_header hdr_{};
    uint64_t next_ = 0;                                /* next index to look at */
    std::map<std::string, bytes> mm_seeds_, am_seeds_; /* per scenario */
};

} // namespace record

#endif
