/*
 * The data operations of the uct interface, by kind, so a test can run one
 * body over every kind an iface lists: which kinds the attributes list, the
 * largest length of each, and one call that sends or fetches a buffer with
 * it (the bcopy forms through pack/unpack callbacks, the zcopy forms split
 * into iov entries).
 */
#ifndef TESTS_UCT_CONFORM_CONFORM_OPS_H
#define TESTS_UCT_CONFORM_CONFORM_OPS_H

#include "../uct_test_util.h"

#include <uct/base/uct_iface.h>

#include <cstdint>
#include <vector>

namespace test::conform {

/* Lengths the tests use when a limit is larger (SIZE_MAX, 1 GiB...). */
constexpr size_t SIZE_CAP = 64 * 1024;
/* iov entries the tests use at most. */
constexpr size_t IOV_CAP = 1024;

enum class op_kind { SHORT, BCOPY, ZCOPY };
const char *kind_name(op_kind kind);

/* The kinds the attributes list, for active messages, puts and gets. */
std::vector<op_kind> am_kinds(const uct::iface_attr &attr);
std::vector<op_kind> put_kinds(const uct::iface_attr &attr);
std::vector<op_kind> get_kinds(const uct::iface_attr &attr);

/* The largest message an AM of `kind` delivers (short: with its 8-byte
 * header; zcopy: payload only) and the largest put/get of `kind`. */
size_t am_limit(const uct::iface_attr &attr, op_kind kind);
size_t put_limit(const uct::iface_attr &attr, op_kind kind);
size_t get_limit(const uct::iface_attr &attr, op_kind kind);

/* Bytes split into `iovcnt` entries (the last takes the remainder), each
 * registered when a registration scope is open. */
std::vector<uct::iov> split_iov(const uint8_t *buffer, size_t length, size_t iovcnt);

/*
 * While it lives, zcopy entries made by split_iov carry a memory handle of
 * `md` (for mds that need one: NEED_MEMH). Every entry is registered anew,
 * never reused (a freed buffer's address may come back), and all are
 * deregistered when the scope ends.
 */
class registration_scope {
public:
    explicit registration_scope(uct::md &md);
    ~registration_scope();
    registration_scope(const registration_scope &)            = delete;
    registration_scope &operator=(const registration_scope &) = delete;
};

/*
 * Sends `bytes` as one active message on AM id `id` so that the handler
 * receives exactly `bytes`: short takes the first 8 as its header (with
 * `iovcnt` > 1, am_short_iov gathers it from that many entries and an
 * empty one without a buffer), zcopy
 * the first `zcopy_hdr` as its header and the rest in `iovcnt` entries.
 * am_bcopy's length becomes UCS_OK when it is bytes.size(), else
 * UCS_ERR_MESSAGE_TRUNCATED.
 */
ucs_status_t send_am(uct::ep &ep, uct::am_id_t id, op_kind kind, const std::vector<uint8_t> &bytes,
                     counted_comp *comp, size_t zcopy_hdr = 0, size_t iovcnt = 1);

/* Puts `length` bytes of `buffer` at remote_addr (bcopy: as above). */
ucs_status_t put(uct::ep &ep, op_kind kind, const uint8_t *buffer, size_t length,
                 uint64_t remote_addr, uct::rkey_t rkey, counted_comp *comp, size_t iovcnt = 1);

/* Where a get lands; it must live until the get completed. get_bcopy's
 * unpack callback counts its calls and checks it got the whole length. */
struct get_target {
    uint8_t *buffer;
    size_t length;
    int unpacked = 0;
    bool whole   = true;
};

/* Gets target->length bytes from remote_addr into target->buffer. */
ucs_status_t get(uct::ep &ep, op_kind kind, get_target *target, uint64_t remote_addr,
                 uct::rkey_t rkey, counted_comp *comp, size_t iovcnt = 1);

/* True for what a refusal looks like: an error, not "retry" or "later". */
inline bool is_error(ucs_status_t status)
{
    return (status != UCS_OK) && (status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE);
}

} // namespace test::conform

#endif
