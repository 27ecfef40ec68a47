/*
 * The requests the tcp target's initiator side has outstanding when its
 * peer starts answering (fuzz_tcp_rx.cc, mode 1). record_corpus issues the
 * same ones against a real tcp target, so the answers it records carry the
 * sequence numbers, kinds and lengths these requests expect.
 */
#ifndef TESTS_FUZZ_TCP_REQUESTS_H
#define TESTS_FUZZ_TCP_REQUESTS_H

#include "fuzz_common.h"

#include <uct/base/uct_iface.h>

#include <cstdio>
#include <cstdlib>

namespace fuzz {

/* Stands for the target's region id in recorded inputs: the id is random
 * per md, so the tcp target writes its own id over every copy of this
 * token before it sends an input, and the recorder writes the token over
 * the recorded id. */
constexpr uint64_t region_id_token = 0x64692d6e6f696765ull; /* "egion-id" */

struct tcp_requests {
    static constexpr size_t bcopy_length = 64;
    static constexpr size_t zcopy_piece  = 48;

    struct comp : uct::completion {
        int fired = 0;
        comp()
        {
            func  = [](uct::completion *self) { ++static_cast<tcp_requests::comp *>(self)->fired; };
            count = 1;
            status = UCS_OK;
        }
    };

    uint8_t bcopy_dest[bcopy_length]   = {};
    uint8_t zcopy_dest[2][zcopy_piece] = {};
    uint64_t fetched                   = 0;
    uint8_t put_data[16]               = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    comp get_bcopy_comp, get_zcopy_comp, atomic_comp, flush_comp;

    static void unpack(void *arg, const void *data, size_t length)
    {
        if (length != bcopy_length) {
            /* The transport must deliver exactly what was asked for. */
            std::fprintf(stderr, "tcp: get_bcopy reply of %zu bytes delivered, %zu asked\n", length,
                         bcopy_length);
            std::abort();
        }
        std::memcpy(static_cast<tcp_requests *>(arg)->bcopy_dest, data, length);
    }

    /* Issues: get_bcopy, get_zcopy of two pieces, a fetching atomic add, a
     * put and a flush, all inside the region. False if one was refused. */
    bool issue(uct::ep &ep, uct::rkey_t rkey)
    {
        const uint64_t base = region_address;
        uct::iov iov[2]     = {{zcopy_dest[0], zcopy_piece, nullptr},
                               {zcopy_dest[1], zcopy_piece, nullptr}};
        return (ep.get_bcopy(unpack, this, bcopy_length, base, rkey, &get_bcopy_comp) ==
                UCS_INPROGRESS) &&
               (ep.get_zcopy(iov, 2, base + 128, rkey, &get_zcopy_comp) == UCS_INPROGRESS) &&
               (ep.atomic_fetch(uct::atomic_op::ADD, 8, 1, 0, &fetched, base + 256, rkey,
                                &atomic_comp) == UCS_INPROGRESS) &&
               (ep.put_short(put_data, sizeof(put_data), base + 512, rkey) == UCS_OK) &&
               (ep.flush(0, &flush_comp) == UCS_INPROGRESS);
    }

    bool all_completed() const
    {
        return get_bcopy_comp.fired && get_zcopy_comp.fired && atomic_comp.fired &&
               flush_comp.fired;
    }
};

} // namespace fuzz

#endif
