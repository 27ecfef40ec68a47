/*
 * The client-server handshake on the bootstrap TCP connection: one frame
 * each way. The client sends CONN_REQUEST with its packed worker address;
 * the server answers ACCEPT with the address of the worker that created
 * the ep, or REJECT. The connection closes after the answer: lanes are
 * then chosen from the addresses as for any other ep.
 *
 * Frame: a fixed header (integers in the sender's byte order: the worker
 * address inside refuses the other order anyway) followed by `length`
 * body bytes. Everything comes from an unauthenticated socket, so the
 * reader checks each header field as soon as it has it, never buffers more
 * than one bounded frame, and validates the whole address before the frame
 * counts as received.
 */
#ifndef UCP_WIREUP_SOCKADDR_FRAME_H
#define UCP_WIREUP_SOCKADDR_FRAME_H

#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ucp::cs {

constexpr uint32_t frame_magic  = 0x53504355; /* "UCPS" little-endian */
constexpr uint8_t frame_version = 1;

enum frame_type : uint8_t {
    FRAME_CONN_REQUEST = 1, /* client -> server: client worker address */
    FRAME_ACCEPT       = 2, /* server -> client: server worker address */
    FRAME_REJECT       = 3  /* server -> client: no body, status says why */
};

namespace frame_flag {
constexpr uint8_t CLIENT_ID = 1u << 0; /* client_id is meaningful */
constexpr uint8_t ALL       = CLIENT_ID;
} // namespace frame_flag

struct frame_header {
    uint32_t magic;
    uint8_t version;
    uint8_t type;
    uint8_t flags;
    uint8_t reserved;
    uint32_t length;    /* body bytes */
    int32_t status;     /* REJECT: the reason (a ucs_status_t); else 0 */
    uint64_t client_id; /* CONN_REQUEST with flag CLIENT_ID; else 0 */
};
/* Frozen: changing it requires bumping frame_version, which peers check. The
 * magic and version never move: a peer of any version must be able to refuse us. */
static_assert((sizeof(frame_header) == 24) && (offsetof(frame_header, version) == 4) &&
                  (offsetof(frame_header, length) == 8) &&
                  (offsetof(frame_header, client_id) == 16),
              "frame header layout");

/* Header + body ready to write. */
std::vector<uint8_t> make_frame(frame_type type, ucs_status_t status, uint8_t flags,
                                uint64_t client_id, const void *body, size_t length);

/*
 * Reads one frame of an expected type from a non-blocking socket, never
 * past its end (bytes after it stay in the socket).
 */
class frame_reader {
public:
    /* `accepted`: bit (1 << frame_type) for each type this side may get. */
    explicit frame_reader(unsigned accepted) : accepted_(accepted) {}

    /*
     * Reads what the socket has. UCS_INPROGRESS: need more; UCS_OK: a valid
     * frame is complete; UCS_ERR_CONNECTION_RESET: the peer closed or the
     * socket failed; UCS_ERR_INVALID_PARAM: the bytes are not a valid frame.
     */
    ucs_status_t read_from(int fd);

    /* Validates bytes already in memory (as read_from does, for tests). */
    ucs_status_t feed(const void *data, size_t length, size_t *consumed);

    const frame_header &header() const { return header_; }
    const std::vector<uint8_t> &body() const { return body_; }

private:
    ucs_status_t header_complete();
    ucs_status_t body_complete() const;
    size_t wanted() const;
    uint8_t *cursor();
    ucs_status_t advance(size_t n);

    unsigned accepted_;
    uint8_t raw_header_[sizeof(frame_header)] = {};
    size_t received_                          = 0; /* header + body bytes so far */
    bool have_header_                         = false;
    bool done_                                = false;
    frame_header header_{};
    std::vector<uint8_t> body_;
};

} // namespace ucp::cs

#endif
