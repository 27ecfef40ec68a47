#include "record_seeds.h"

#include "fuzz_common.h"
#include "tcp_requests.h"

#include <ucp/core/ucp_worker.h>
#include <ucp/proto/wire.h>
#include <ucp/wireup/sockaddr_frame.h>
#include <uct/sm/mm/mm_iface.h>
#include <uct/sm/mm/mm_segment.h>
#include <uct/tcp/tcp_wire.h>

#include <sys/stat.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

namespace record {

std::string outdir;

namespace {

std::map<std::string, unsigned> g_counts; /* files per target + name */
std::map<std::string, unsigned> g_files;  /* files per target */
std::map<uint64_t, uint64_t> g_tokens;    /* value -> token */

/* Largest input of each target (as tests/fuzz/meson.build gives them). */
size_t max_len(const std::string &target)
{
    return (target == "fuzz_tcp_rx" || target == "fuzz_ucp_am") ? 16384 :
           (target == "fuzz_rkey")                              ? 1024 :
                                                                  4096;
}

/* One UCP message as fuzz_ucp_am takes it. */
void put_am(bytes &out, uint8_t am_id, uint8_t how, const uint8_t *data, size_t length)
{
    put(out, am_id);
    put(out, how);
    put(out, uint16_t(length));
    put(out, data, length);
}

void emit_address(const std::string &name, const uint8_t *data, size_t length)
{
    emit("fuzz_address", name, bytes(data, data + length));
}

/* A UCP message off a tcp stream: one more for fuzz_ucp_am's input; the
 * worker address in a wireup for fuzz_address. */
void am_frame(bytes &am_seed, uint8_t id, const uint8_t *payload, size_t length,
              const std::string &scenario_name)
{
    if (am_seed.size() + 4 + length <= max_len("fuzz_ucp_am")) {
        put_am(am_seed, id, 0, payload, length);
    }
    ucs::wire_reader in(payload, length);
    ucp::wire::wireup_hdr hdr;
    const uint8_t *address;
    if ((id == ucp::wire::AM_WIREUP) && in.get(&hdr) && in.bytes(hdr.address_length, &address)) {
        emit_address("wireup-" + scenario_name, address, hdr.address_length);
    }
}

/* A tcp stream: per scenario, the opening (handshake or CONN_ACCEPT) and
 * that scenario's frames, as fuzz_tcp_rx input; its AMs for fuzz_ucp_am. */
void tcp_stream(const stream &s, uint8_t mode, size_t opening)
{
    using uct::tcp::frame_hdr;
    const bytes &d = s.data;
    std::map<std::string, bytes> tcp_seeds, am_seeds;
    size_t offset = opening;
    while (offset + sizeof(frame_hdr) <= d.size()) {
        frame_hdr hdr;
        std::memcpy(&hdr, &d[offset], sizeof(hdr));
        const size_t total = sizeof(hdr) + hdr.length;
        if (offset + total > d.size()) {
            break;
        }
        const std::string &scenario_name = scenario_at(s, offset);
        bytes &seed                      = tcp_seeds[scenario_name];
        if (seed.empty()) {
            seed.push_back(mode);
            put(seed, d.data(), opening);
            if (mode == 0) {
                /* The key is the recorder's iface's: the target puts its own. */
                std::memcpy(&seed[1 + offsetof(uct::tcp::handshake, acceptor_key)],
                            fuzz::iface_key_token, sizeof(fuzz::iface_key_token));
            }
        }
        put(seed, &d[offset], total);
        /* The uct pair's AMs are no UCP messages (their ids mean nothing
         * to UCP): they seed the tcp target only. */
        if ((hdr.flags == 0) && (scenario_name.rfind("uct_", 0) != 0)) {
            am_frame(am_seeds[scenario_name], hdr.id, &d[offset + sizeof(hdr)], hdr.length,
                     scenario_name);
        }
        offset += total;
    }
    for (auto &[scenario_name, seed] : tcp_seeds) {
        emit("fuzz_tcp_rx", std::string(mode ? "initiator-" : "acceptor-") + scenario_name, seed);
    }
    for (auto &[scenario_name, seed] : am_seeds) {
        emit("fuzz_ucp_am", "tcp-" + scenario_name, seed);
    }
}

/* A client-server bootstrap stream: one frame. */
void cs_stream(const stream &s)
{
    ucp::cs::frame_header hdr;
    std::memcpy(&hdr, s.data.data(), sizeof(hdr));
    const bool request     = (hdr.type == ucp::cs::FRAME_CONN_REQUEST);
    const std::string name = request ? "request" : "answer";
    for (uint8_t mode : {uint8_t(request ? 0 : 1), uint8_t(request ? 2 : 3)}) {
        bytes seed{mode};
        if (mode < 2) {
            seed.push_back(uint8_t(sizeof(hdr) - 1)); /* chunks: the header, then the rest */
        }
        put(seed, s.data.data(), s.data.size());
        emit("fuzz_cs_frame", name, seed);
    }
    if (s.data.size() > sizeof(hdr)) {
        emit_address("cs-" + name, s.data.data() + sizeof(hdr), s.data.size() - sizeof(hdr));
    }
}

} // namespace

void replace_in_inputs(uint64_t value, uint64_t token)
{
    g_tokens[value] = token;
}

void emit(const std::string &target, const std::string &name, bytes input)
{
    if (input.empty()) {
        return;
    }
    for (const auto &[value, token] : g_tokens) {
        fuzz::replace_all(input, &value, &token, sizeof(value));
    }
    input.resize(std::min(input.size(), max_len(target)));
    const std::string dir = outdir + "/" + target;
    mkdir(outdir.c_str(), 0755);
    mkdir(dir.c_str(), 0755);
    const std::string path = dir + "/" + name + "-" +
                             std::to_string(g_counts[target + "/" + name]++);
    FILE *f = std::fopen(path.c_str(), "wb");
    check(f != nullptr, "cannot write an output file");
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
    ++g_files[target];
}

const std::map<std::string, unsigned> &written()
{
    return g_files;
}

void emit_streams()
{
    for (const stream &s : take_streams()) {
        if (s.data.size() < sizeof(uint32_t)) {
            continue;
        }
        uint32_t magic;
        std::memcpy(&magic, s.data.data(), sizeof(magic));
        uct::tcp::frame_hdr first{};
        if (s.data.size() >= sizeof(first)) {
            std::memcpy(&first, s.data.data(), sizeof(first));
        }
        if ((magic == uct::tcp::HANDSHAKE_MAGIC) &&
            (s.data.size() >= sizeof(uct::tcp::handshake))) {
            tcp_stream(s, 0, sizeof(uct::tcp::handshake));
        } else if ((first.flags == uct::tcp::frame_flag::INTERNAL) &&
                   (first.id == uint8_t(uct::tcp::internal_op::CONN_ACCEPT)) &&
                   (first.length == sizeof(uct::tcp::conn_reply))) {
            tcp_stream(s, 1, sizeof(first) + sizeof(uct::tcp::conn_reply));
        } else if ((magic == ucp::cs::frame_magic) &&
                   (s.data.size() >= sizeof(ucp::cs::frame_header))) {
            cs_stream(s);
        }
    }
}

std::unique_ptr<fifo_tap> fifo_tap::of(ucp_worker_h worker, const std::string &owner)
{
    for (const ucp::worker_iface &wi : worker->ifaces) {
        if (std::strcmp(worker->context.tls[wi.tl_index].resource.tl_name, "posix") != 0) {
            continue;
        }
        uct::mm::iface_address addr;
        check(wi.iface->get_address(&addr) == UCS_OK, "posix iface address");
        void *mapped;
        check(uct::mm::posix_backend().attach({addr.owner_pid, addr.segment_id, addr.segment_size},
                                              &mapped) == UCS_OK,
              "map a worker's FIFO");
        auto tap    = std::make_unique<fifo_tap>();
        tap->owner_ = owner;
        tap->base_  = static_cast<uint8_t *>(mapped);
        tap->size_  = addr.segment_size;
        std::memcpy(&tap->hdr_, mapped, sizeof(tap->hdr_));
        return tap;
    }
    return nullptr;
}

fifo_tap::~fifo_tap()
{
    uct::mm::posix_backend().detach(base_, size_);
}

void fifo_tap::look()
{
    using namespace uct::mm;
    uint8_t *elems = base_ + hdr_.elems_offset;
    for (;;) {
        uint8_t *elem = elems + (next_ % hdr_.fifo_size) * hdr_.elem_size;
        uint64_t word = elem_word(elem).load(std::memory_order_acquire);
        if (((word ^ (next_ / hdr_.fifo_size)) & elem_flag::OWNER) != 0) {
            return;
        }
        const uint32_t length  = elem_length(word);
        const uint8_t *payload = (word & elem_flag::BCOPY) ?
                                     base_ + hdr_.bufs_offset +
                                         (next_ % hdr_.fifo_size) * hdr_.seg_size :
                                     elem + ELEM_HEADER_SIZE;
        /* fuzz_mm_fifo mode 0: publish this element, then progress. */
        bytes &mm = mm_seeds_[scenario];
        if (mm.empty()) {
            mm.push_back(0);
        }
        if (mm.size() + 12 + length <= max_len("fuzz_mm_fifo")) {
            mm.push_back(0);
            put(mm, uint64_t(word & ~elem_flag::OWNER));
            put(mm, uint16_t(length));
            put(mm, payload, length);
            mm.push_back(2);
        }
        if (!(word & elem_flag::NOP)) {
            bytes &am = am_seeds_[scenario];
            if (am.size() + 4 + length <= max_len("fuzz_ucp_am")) {
                put_am(am, uint8_t(elem_am_id(word)), 2, payload, length);
            }
        }
        ++next_;
    }
}

void fifo_tap::emit_all()
{
    for (auto &[scenario_name, seed] : mm_seeds_) {
        emit("fuzz_mm_fifo", "to-" + owner_ + "-" + scenario_name, seed);
    }
    for (auto &[scenario_name, seed] : am_seeds_) {
        emit("fuzz_ucp_am", "posix-to-" + owner_ + "-" + scenario_name, seed);
    }
    /* fuzz_mm_fifo mode 1: the FIFO header as a sender reads it. */
    bytes seed{1};
    put(seed, uint64_t(size_));
    bytes lines(base_, base_ + uct::mm::FIFO_ELEMS_OFFSET);
    uct::mm::fifo_header h;
    std::memcpy(&h, lines.data(), sizeof(h));
    h.owner_pid = fuzz::pid_token;
    std::memcpy(lines.data(), &h, sizeof(h));
    put(seed, lines.data(), lines.size());
    emit("fuzz_mm_fifo", "header-" + owner_, seed);
}

} // namespace record
