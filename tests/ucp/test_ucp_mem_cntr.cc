/*
 * Target-side counting (ucp_mem_bind_cntr): a process counts the puts, gets
 * and atomics another process does on its regions, over shared memory (where
 * the peer would otherwise store directly or use cma) and tcp: a put's data
 * is in place when the counter shows it, completions and bytes are counted
 * once per operation, refused operations count nothing; binding, unbinding
 * and bad arguments.
 */
#include "ext_test_util.h"
#include "rma_test_util.h"
#include "ucp_peer.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace ucp_test;

namespace {

constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
/* One message, several AM fragments over shared memory and over tcp. */
const size_t put_sizes[]      = {8, 3000, 100000};
constexpr size_t region_size  = 256 * 1024;
constexpr size_t get_size     = 500;
constexpr uint64_t add_value  = 5;
constexpr uint64_t atomic_off = 4096;

/* What the target tells the initiator: two regions' keys and addresses. */
struct target_regions {
    std::vector<uint8_t> written_key, mixed_key;
    uint64_t written = 0, mixed = 0;
};

/* The initiator: puts into `written`; a put, a get and an atomic on
 * `mixed`; then one put past the end of `mixed` (refused, not counted). */
int initiator(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init(tls, features) == UCS_OK);
    TEST_CHILD_CHECK(c.connect_over(fd));
    target_regions t;
    TEST_CHILD_CHECK(test::recv_blob(fd, &t.written_key) && test::recv_blob(fd, &t.mixed_key) &&
                     test::recv_value(fd, &t.written) && test::recv_value(fd, &t.mixed));
    ucp_rkey_h written, mixed;
    TEST_CHILD_CHECK(ucp_ep_rkey_unpack(c.ep, t.written_key.data(), &written) == UCS_OK);
    TEST_CHILD_CHECK(ucp_ep_rkey_unpack(c.ep, t.mixed_key.data(), &mixed) == UCS_OK);
    ucp_request_param_t plain{};
    std::vector<std::vector<uint8_t>> data;
    uint64_t offset = 0;
    for (size_t i = 0; i < std::size(put_sizes); ++i) {
        data.emplace_back(put_sizes[i]);
        fill_pattern(data.back().data(), put_sizes[i], i);
        TEST_CHILD_CHECK(c.wait(ucp_put_nbx(c.ep, data.back().data(), put_sizes[i],
                                            t.written + offset, written, &plain)) == UCS_OK);
        offset += put_sizes[i];
    }
    std::vector<uint8_t> small(1000, 0x11), got(get_size);
    TEST_CHILD_CHECK(c.wait(ucp_put_nbx(c.ep, small.data(), small.size(), t.mixed, mixed,
                                        &plain)) == UCS_OK);
    TEST_CHILD_CHECK(c.wait(ucp_get_nbx(c.ep, got.data(), got.size(), t.mixed, mixed, &plain)) ==
                     UCS_OK);
    TEST_CHILD_CHECK(got == std::vector<uint8_t>(get_size, 0x11));
    ucp_request_param_t amo{};
    amo.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    amo.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    TEST_CHILD_CHECK(c.wait(ucp_atomic_op_nbx(c.ep, UCP_ATOMIC_OP_ADD, &add_value, 1,
                                              t.mixed + atomic_off, mixed, &amo)) == UCS_OK);
    /* Out of the key's bounds: refused here, nothing reaches the target. */
    TEST_CHILD_CHECK(UCS_PTR_IS_ERR(ucp_put_nbx(c.ep, small.data(), small.size(),
                                                t.mixed + region_size - 8, mixed, &plain)));
    TEST_CHILD_CHECK(c.wait(ucp_worker_flush_nbx(c.worker, &plain)) == UCS_OK);
    ucp_rkey_destroy(written);
    ucp_rkey_destroy(mixed);
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    uint8_t done;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    return 0;
}

std::vector<uint8_t> packed_key(ucp_context_h context, ucp_mem_h memh)
{
    void *buffer;
    size_t length;
    if (ucp_rkey_pack(context, memh, &buffer, &length) != UCS_OK) {
        return {};
    }
    std::vector<uint8_t> key(static_cast<uint8_t *>(buffer),
                             static_cast<uint8_t *>(buffer) + length);
    ucp_rkey_buffer_release(buffer);
    return key;
}

} // namespace

TEST_CASE("target-side counting: peers' puts, gets and atomics on a region count there, "
          "after the data",
          "[ucp_cntr]")
{
    const char *tls = GENERATE("posix,cma,self", "posix,self", "tcp,self");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init(tls, features) == UCS_OK);
    test::child_process child([tls](int fd) { return initiator(fd, tls); });
    REQUIRE(p.connect_over(child.fd()));

    rma_test::region written, mixed;
    REQUIRE(written.map(p.context, rma_test::memory::registered, region_size) == UCS_OK);
    REQUIRE(mixed.map(p.context, rma_test::memory::registered, region_size) == UCS_OK);
    ucp_cntr_h writes = new_cntr(p.worker);
    ucp_cntr_h bytes  = new_cntr(p.worker, UCP_CNTR_FLAG_EVENTS_BYTES);
    REQUIRE(writes != nullptr);
    REQUIRE(bytes != nullptr);
    REQUIRE(ucp_mem_bind_cntr(written.memh(), writes, UCP_MEM_CNTR_REMOTE_WRITE) == UCS_OK);
    REQUIRE(ucp_mem_bind_cntr(mixed.memh(), bytes,
                              UCP_MEM_CNTR_REMOTE_WRITE | UCP_MEM_CNTR_REMOTE_READ |
                                  UCP_MEM_CNTR_REMOTE_ATOMIC) == UCS_OK);
    /* Keys packed after the binding. */
    REQUIRE(test::send_blob(child.fd(), packed_key(p.context, written.memh())));
    REQUIRE(test::send_blob(child.fd(), packed_key(p.context, mixed.memh())));
    REQUIRE(test::send_value(child.fd(), written.address()));
    REQUIRE(test::send_value(child.fd(), mixed.address()));

    /* Only the counter is waited for: the data must be there when it moves. */
    uint64_t offset = 0;
    for (size_t i = 0; i < std::size(put_sizes); ++i) {
        REQUIRE(ucp_cntr_wait(writes, i + 1, 60000) == UCS_OK);
        CHECK(check_pattern(written.data() + offset, put_sizes[i], i));
        offset += put_sizes[i];
    }
    CHECK(ucp_cntr_wait(bytes, 1000 + get_size + sizeof(uint64_t), 60000) == UCS_OK);
    uint64_t word;
    std::memcpy(&word, mixed.data() + atomic_off, sizeof(word));
    CHECK(word == add_value);
    CHECK(ucp_cntr_destroy(writes) == UCS_ERR_BUSY); /* bound */
    uint8_t done;
    REQUIRE(p.recv_value_progress(child.fd(), &done));
    /* Each operation once; the refused put not at all. */
    CHECK(ucp_cntr_read(writes) == std::size(put_sizes));
    CHECK(ucp_cntr_read(bytes) == 1000 + get_size + sizeof(uint64_t));
    CHECK(ucp_cntr_read_err(writes) + ucp_cntr_read_err(bytes) == 0);
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    CHECK(child.wait() == 0);

    /* Unbinding lets the counter go; unmapping does too. */
    CHECK(ucp_mem_bind_cntr(written.memh(), nullptr, 0) == UCS_OK);
    CHECK(ucp_cntr_destroy(writes) == UCS_OK);
    mixed.unmap();
    CHECK(ucp_cntr_destroy(bytes) == UCS_OK);
}

TEST_CASE("target-side counting: bad arguments, and a counter gone with its worker", "[ucp_cntr]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    rma_test::region region;
    REQUIRE(region.map(p.context, rma_test::memory::registered, 4096) == UCS_OK);
    ucp_cntr_h cntr = new_cntr(p.worker);
    REQUIRE(cntr != nullptr);
    CHECK(ucp_mem_bind_cntr(nullptr, cntr, UCP_MEM_CNTR_REMOTE_WRITE) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_mem_bind_cntr(region.memh(), cntr, UCS_BIT(20)) == UCS_ERR_INVALID_PARAM);
    peer other;
    REQUIRE(other.init("self", features) == UCS_OK);
    ucp_cntr_h foreign = new_cntr(other.worker);
    REQUIRE(foreign != nullptr);
    CHECK(ucp_mem_bind_cntr(region.memh(), foreign, UCP_MEM_CNTR_REMOTE_WRITE) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_destroy(foreign) == UCS_OK);
    CHECK(ucp_mem_bind_cntr(region.memh(), foreign, UCP_MEM_CNTR_REMOTE_WRITE) ==
          UCS_ERR_INVALID_PARAM); /* destroyed */
    /* The key says whether the region counts (header byte 5, rkey_flag::COUNTED). */
    CHECK(packed_key(p.context, region.memh()).at(5) == 0);
    CHECK(ucp_mem_bind_cntr(region.memh(), cntr, UCP_MEM_CNTR_REMOTE_WRITE) == UCS_OK);
    CHECK(packed_key(p.context, region.memh()).at(5) == 1);
    CHECK(ucp_mem_bind_cntr(region.memh(), cntr, 0) == UCS_OK);
    CHECK(packed_key(p.context, region.memh()).at(5) == 0);
    /* Rebinding replaces; the first counter is free again. */
    ucp_cntr_h second = new_cntr(p.worker);
    REQUIRE(second != nullptr);
    CHECK(ucp_mem_bind_cntr(region.memh(), cntr, UCP_MEM_CNTR_REMOTE_WRITE) == UCS_OK);
    CHECK(ucp_mem_bind_cntr(region.memh(), second, UCP_MEM_CNTR_REMOTE_READ) == UCS_OK);
    CHECK(ucp_cntr_destroy(cntr) == UCS_OK);
    CHECK(ucp_cntr_destroy(second) == UCS_ERR_BUSY);
    /* The worker goes first with the counter bound: the region counts no
     * more, and unmapping it afterwards touches nothing gone (sanitizer). */
    ucp_worker_destroy(p.worker);
    p.worker = nullptr;
    region.unmap();
}
