/*
 * The packed worker address: what ucp_worker_get_address() returns and a
 * peer passes to ucp_ep_create(). It arrives from another process, so
 * unpacking validates every byte of structure and never reads past the
 * buffer.
 *
 * Layout (integers in the packer's byte order; the magic tells a reader of
 * the other byte order that it cannot use the address; no padding):
 *
 *   offset size
 *    0     4   magic            address_magic ("UCPA")
 *    4     1   version          address_version
 *    5     1   flags            address_flag bits; no other bit
 *    6     2   num_entries      <= address_max_entries
 *    8     4   total_length     bytes of the whole address, header included,
 *                               <= address_max_length
 *   12     4   reserved         0
 *   16     8   worker_uuid      unique id of the worker
 *   24     8   node_id          equal for workers on the same host and boot
 *   32     1   name_length      worker name bytes including the final NUL (>= 1)
 *   33     n   name             NUL-terminated, no NUL before the end
 *   then num_entries times:
 *          1   tl_name_length   2..32, including the NUL
 *          n   tl_name          "posix", "tcp", ...
 *          1   md_name_length   2..32, including the NUL
 *          n   md_name          the memory domain (component) name
 *          1   device_type      uct::device_type value
 *          1   flags            address_entry_flag: how an ep connects to it
 *                               (to the iface, to an ep, or both); no other bit
 *          2   dev_addr_length
 *          n   dev_addr         uct::iface::get_device_address() bytes
 *          2   iface_addr_length
 *          n   iface_addr       uct::iface::get_address() bytes
 *   and the entries end exactly at total_length.
 *
 * The encoding is canonical: an address that unpacks, packed again, gives
 * the same bytes. ucp_ep_create gets only a pointer, so the header carries
 * the length (see address_peek()).
 */
#ifndef UCP_CORE_UCP_ADDRESS_H
#define UCP_CORE_UCP_ADDRESS_H

#include <uct/base/uct_types.h>
#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ucp {

constexpr uint32_t address_magic = 0x41504355; /* "UCPA" little-endian */
/* The version two workers must share: an ep is made only to an address of
 * this version. Bumped whenever this format, a transport's address inside
 * it, or a UCP message header or AM id (ucp/proto/wire.h) changes, so peers
 * of another version refuse each other at ep creation instead of failing
 * later (docs/architecture.md, "Wire formats"). 2: the tcp iface address
 * carries its connection key. 3: entries say how eps connect to them
 * (connect-to-ep transports), the wireup is a request/reply/ack handshake
 * and messages expecting an answer name the ep it goes to. 4: the rkey
 * header says a region counts what peers do to it (rma_put_hdr's length).
 * 5: put and get with completion ids (AM_PWC, AM_PWC_CREDIT). 6: AM_EP_CLOSED
 * may name the one ep of the receiver that the closed ep was paired with.
 * 7: stream rendezvous (AM_STREAM_RTS). 8: the header says whether the
 * address lists only network transports, and wireup messages describe the
 * sender by the same kind of address its peer reached it by. 9: an RTS may
 * carry keys of several mds (rts_flag::KEY_LIST). */
constexpr uint8_t address_version    = 9;
constexpr size_t address_header_size = 32; /* up to name_length */
constexpr size_t address_max_length  = 64 * 1024;
constexpr size_t address_max_entries = 256;
constexpr size_t address_max_name    = 255; /* worker name chars */
constexpr size_t address_max_tl_name = 31;  /* as uct::tl_resource */

/* Bits of the header's flags. */
namespace address_flag {
/* Only the worker's network transports (UCP_WORKER_ADDRESS_FLAG_NET_ONLY). */
constexpr uint8_t NET_ONLY = 1u << 0;
constexpr uint8_t all      = NET_ONLY;
} // namespace address_flag

/* Bits of address_entry::flags. */
namespace address_entry_flag {
constexpr uint8_t CONNECT_TO_IFACE = 1u << 0; /* uct::iface::ep_create_connected */
constexpr uint8_t CONNECT_TO_EP    = 1u << 1; /* uct::iface::ep_create + connect_to_ep */
constexpr uint8_t all              = CONNECT_TO_IFACE | CONNECT_TO_EP;
} // namespace address_entry_flag

struct address_entry {
    std::string tl_name;
    std::string md_name;
    uct::device_type dev_type = uct::device_type::NET;
    std::vector<uint8_t> dev_addr;
    std::vector<uint8_t> iface_addr;
    uint8_t flags = address_entry_flag::CONNECT_TO_IFACE;
};

struct unpacked_address {
    uint64_t worker_uuid = 0;
    uint64_t node_id     = 0;
    std::string worker_name;
    bool net_only = false; /* address_flag::NET_ONLY */
    std::vector<address_entry> entries;
};

/* Bytes pack_address() writes for addr, or 0 if addr breaks a limit above. */
size_t address_packed_size(const unpacked_address &addr);

/*
 * Packs addr into a malloc'd buffer (freed with free()). UCS_ERR_INVALID_PARAM
 * when a name or address is too long for the format.
 */
ucs_status_t pack_address(const unpacked_address &addr, void **buffer_p, size_t *length_p);

/*
 * Validates the fixed header of an address and returns its total length.
 * `length` is how many bytes the caller knows to be readable; ucp_ep_create
 * (pointer only) passes address_header_size, then unpacks total_length.
 */
ucs_status_t address_peek(const void *buffer, size_t length, size_t *total_length_p,
                          uint64_t *worker_uuid_p);

/*
 * Unpacks and validates everything: magic, version, reserved bits, every
 * length against the bytes left and its limit, counts, string termination,
 * device types, entry flags, and that the entries end exactly at total_length (which must
 * be <= length). Anything malformed: UCS_ERR_INVALID_PARAM, out untouched.
 */
ucs_status_t unpack_address(const void *buffer, size_t length, unpacked_address *out);

/* 64-bit id of this host's current boot (ucs::sys::machine_id). */
uint64_t local_node_id();

} // namespace ucp

#endif
