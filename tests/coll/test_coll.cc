/*
 * Collectives (libucp_coll) between processes over shared memory and tcp:
 * every collective x datatype x op (and in-place) on 2, 3, 4, 5 and 8
 * processes, counts 0, 1, odd and past the rendezvous threshold, roots
 * other than 0; bit-identical floating-point results on every rank; many
 * collectives outstanding on two teams; sub-teams; an application's
 * wildcard tag receive beside them; bad arguments; a member dying.
 *
 * Inputs are small integers made from (rank, index), so the expected result
 * is exact in every type and is computed here independently of the
 * library, in 64-bit integers, then stored in the element type.
 */
#include "coll_group.h"
#include "config_test_util.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <unistd.h>

using namespace coll_test;

namespace {

const ucp_test::settings small_rndv = {{"RNDV_THRESH", "4096"}};

struct value {
    int64_t re;
    int64_t im;
};

size_t dt_bytes(ucp_coll_dt_t dt)
{
    static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16};
    return sizes[dt];
}

void store(ucp_coll_dt_t dt, void *buf, size_t i, value v)
{
    uint8_t *p       = static_cast<uint8_t *>(buf) + i * dt_bytes(dt);
    const uint64_t u = uint64_t(v.re);
    // clang-format off
    switch (dt) {
    case UCP_COLL_DT_INT8: case UCP_COLL_DT_UINT8: { uint8_t x = uint8_t(u); std::memcpy(p, &x, 1); break; }
    case UCP_COLL_DT_INT16: case UCP_COLL_DT_UINT16: { uint16_t x = uint16_t(u); std::memcpy(p, &x, 2); break; }
    case UCP_COLL_DT_INT32: case UCP_COLL_DT_UINT32: { uint32_t x = uint32_t(u); std::memcpy(p, &x, 4); break; }
    case UCP_COLL_DT_INT64: case UCP_COLL_DT_UINT64: std::memcpy(p, &u, 8); break;
    case UCP_COLL_DT_FLOAT: { float x = float(v.re); std::memcpy(p, &x, 4); break; }
    case UCP_COLL_DT_DOUBLE: { double x = double(v.re); std::memcpy(p, &x, 8); break; }
    case UCP_COLL_DT_FLOAT_COMPLEX: { float x[2] = {float(v.re), float(v.im)}; std::memcpy(p, x, 8); break; }
    case UCP_COLL_DT_DOUBLE_COMPLEX: { double x[2] = {double(v.re), double(v.im)}; std::memcpy(p, x, 16); break; }
    default: break;
    }
    // clang-format on
}

bool is_complex(ucp_coll_dt_t dt)
{
    return (dt == UCP_COLL_DT_FLOAT_COMPLEX) || (dt == UCP_COLL_DT_DOUBLE_COMPLEX);
}

bool is_float(ucp_coll_dt_t dt)
{
    return (dt == UCP_COLL_DT_FLOAT) || (dt == UCP_COLL_DT_DOUBLE) || is_complex(dt);
}

/* Whether the library should do (dt, op): fi_collective's table. */
bool meaningful(ucp_coll_dt_t dt, ucp_coll_op_t op)
{
    const bool bitwise = (op == UCP_COLL_OP_BOR) || (op == UCP_COLL_OP_BAND) ||
                         (op == UCP_COLL_OP_BXOR);
    if (is_complex(dt)) {
        return (op == UCP_COLL_OP_SUM) || (op == UCP_COLL_OP_PROD);
    }
    return !(bitwise && is_float(dt));
}

/* The input element i of a rank; small so that every result is exact. */
value input(unsigned rank, size_t i, ucp_coll_op_t op, ucp_coll_dt_t dt)
{
    const int64_t g = int64_t((rank * 3 + i * 7 + 1) % 11);
    if (op == UCP_COLL_OP_PROD) {
        return is_complex(dt) ? value{g % 2, (g / 2) % 2 == 0 ? 1 : 0} : value{g % 3 + 1, 0};
    }
    return value{g, is_complex(dt) ? int64_t((rank + i) % 5) : 0};
}

value apply(ucp_coll_op_t op, value a, value b)
{
    // clang-format off
    switch (op) {
    case UCP_COLL_OP_MIN:  return {std::min(a.re, b.re), 0};
    case UCP_COLL_OP_MAX:  return {std::max(a.re, b.re), 0};
    case UCP_COLL_OP_SUM:  return {int64_t(uint64_t(a.re) + uint64_t(b.re)), a.im + b.im};
    case UCP_COLL_OP_PROD: return {int64_t(uint64_t(a.re) * uint64_t(b.re)) - a.im * b.im,
                                   a.re * b.im + a.im * b.re};
    case UCP_COLL_OP_LOR:  return {(a.re != 0) || (b.re != 0), 0};
    case UCP_COLL_OP_LAND: return {(a.re != 0) && (b.re != 0), 0};
    case UCP_COLL_OP_LXOR: return {(a.re != 0) != (b.re != 0), 0};
    case UCP_COLL_OP_BOR:  return {a.re | b.re, 0};
    case UCP_COLL_OP_BAND: return {a.re & b.re, 0};
    case UCP_COLL_OP_BXOR: return {a.re ^ b.re, 0};
    default:               return {0, 0};
    }
    // clang-format on
}

value reduced(unsigned size, size_t i, ucp_coll_op_t op, ucp_coll_dt_t dt)
{
    value v = input(0, i, op, dt);
    for (unsigned r = 1; r < size; ++r) {
        v = apply(op, v, input(r, i, op, dt));
    }
    return v;
}

std::vector<uint8_t> buffer(ucp_coll_dt_t dt, size_t count, uint8_t fill = 0xa5)
{
    return std::vector<uint8_t>(std::max<size_t>(1, count * dt_bytes(dt)), fill);
}

/* count elements of rank `rank`'s input, from element `first` on. */
void fill_input(std::vector<uint8_t> &buf, size_t offset, ucp_coll_dt_t dt, size_t count,
                unsigned rank, size_t first, ucp_coll_op_t op = UCP_COLL_OP_SUM)
{
    for (size_t i = 0; i < count; ++i) {
        store(dt, buf.data() + offset, i, input(rank, first + i, op, dt));
    }
}

/* Equal elements: by value for floating point (a zero may come out as -0,
 * x - y being computed as -(y - x)), by bytes for integers. */
template <typename F>
bool same_floats(const void *a, const void *b, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        F x, y;
        std::memcpy(&x, static_cast<const uint8_t *>(a) + i * sizeof(F), sizeof(F));
        std::memcpy(&y, static_cast<const uint8_t *>(b) + i * sizeof(F), sizeof(F));
        if (!(x == y)) {
            return false;
        }
    }
    return true;
}

bool same_values(ucp_coll_dt_t dt, const void *a, const void *b, size_t count)
{
    switch (dt) {
    case UCP_COLL_DT_FLOAT:
        return same_floats<float>(a, b, count);
    case UCP_COLL_DT_FLOAT_COMPLEX:
        return same_floats<float>(a, b, 2 * count);
    case UCP_COLL_DT_DOUBLE:
        return same_floats<double>(a, b, count);
    case UCP_COLL_DT_DOUBLE_COMPLEX:
        return same_floats<double>(a, b, 2 * count);
    default:
        return std::memcmp(a, b, count * dt_bytes(dt)) == 0;
    }
}

#define MEMBER_CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            std::fprintf(stderr, "rank %u: %s:%d: ", m.rank, __FILE__, __LINE__); \
            std::fprintf(stderr, __VA_ARGS__); \
            std::fprintf(stderr, "\n"); \
            return __LINE__; \
        } \
    } while (0)

ucp_coll_args_t make_args(ucp_coll_type_t coll, const void *sbuf, void *rbuf, size_t count,
                          ucp_coll_dt_t dt, unsigned root = 0, bool in_place = false,
                          ucp_coll_op_t op = UCP_COLL_OP_SUM)
{
    ucp_coll_args_t a{};
    a.field_mask = UCP_COLL_ARGS_FIELD_ROOT | UCP_COLL_ARGS_FIELD_OP | UCP_COLL_ARGS_FIELD_FLAGS;
    a.coll       = coll;
    a.sbuf       = sbuf;
    a.rbuf       = rbuf;
    a.count      = count;
    a.dt         = dt;
    a.op         = op;
    a.root       = root;
    a.flags      = in_place ? UCP_COLL_FLAG_IN_PLACE : 0;
    return a;
}

/* The data-movement collectives of one datatype and count. */
int movement(member &m, ucp_coll_dt_t dt, size_t count, bool in_place)
{
    const unsigned n = m.size, r = m.rank;
    const size_t bb     = count * dt_bytes(dt);
    const unsigned root = unsigned(count % n);

    /* bcast from `root` */
    auto buf = buffer(dt, count);
    if (r == root) {
        fill_input(buf, 0, dt, count, root, 0);
    }
    MEMBER_CHECK(m.run(make_args(UCP_COLL_BCAST, nullptr, buf.data(), count, dt, root)) == UCS_OK,
                 "bcast");
    auto expect = buffer(dt, count);
    fill_input(expect, 0, dt, count, root, 0);
    MEMBER_CHECK(std::memcmp(buf.data(), expect.data(), bb) == 0, "bcast %s count %zu root %u",
                 in_place ? "in place" : "", count, root);

    /* allgather: block i is rank i's input */
    auto mine = buffer(dt, count);
    fill_input(mine, 0, dt, count, r, 0);
    auto all        = buffer(dt, n * count);
    auto all_expect = buffer(dt, n * count);
    for (unsigned i = 0; i < n; ++i) {
        fill_input(all_expect, i * bb, dt, count, i, 0);
    }
    if (in_place) {
        std::memcpy(all.data() + r * bb, mine.data(), bb);
    }
    MEMBER_CHECK(m.run(make_args(UCP_COLL_ALLGATHER, mine.data(), all.data(), count, dt, 0,
                                 in_place)) == UCS_OK,
                 "allgather");
    MEMBER_CHECK(std::memcmp(all.data(), all_expect.data(), n * bb) == 0, "allgather count %zu",
                 count);

    /* alltoall: block j of rank i's input is input(i, j * count + k) */
    auto send = buffer(dt, n * count);
    fill_input(send, 0, dt, n * count, r, 0);
    auto recv = in_place ? send : buffer(dt, n * count);
    MEMBER_CHECK(m.run(make_args(UCP_COLL_ALLTOALL, send.data(), recv.data(), count, dt, 0,
                                 in_place)) == UCS_OK,
                 "alltoall");
    for (unsigned i = 0; i < n; ++i) {
        auto block = buffer(dt, count);
        fill_input(block, 0, dt, count, i, r * count);
        MEMBER_CHECK(std::memcmp(recv.data() + i * bb, block.data(), bb) == 0,
                     "alltoall count %zu block from %u", count, i);
    }

    /* scatter from the last rank: rank i gets block i of input(root) */
    const unsigned sroot = n - 1;
    auto blocks          = buffer(dt, n * count);
    if (r == sroot) {
        fill_input(blocks, 0, dt, n * count, sroot, 0);
    }
    auto part = buffer(dt, count);
    MEMBER_CHECK(m.run(make_args(UCP_COLL_SCATTER, blocks.data(), part.data(), count, dt, sroot,
                                 in_place)) == UCS_OK,
                 "scatter");
    if (!(in_place && (r == sroot))) {
        auto want = buffer(dt, count);
        fill_input(want, 0, dt, count, sroot, r * count);
        MEMBER_CHECK(std::memcmp(part.data(), want.data(), bb) == 0, "scatter count %zu", count);
    }

    /* gather to rank 1 % n */
    const unsigned groot = 1 % n;
    auto gathered        = buffer(dt, n * count);
    if (in_place && (r == groot)) {
        std::memcpy(gathered.data() + r * bb, mine.data(), bb);
    }
    MEMBER_CHECK(m.run(make_args(UCP_COLL_GATHER, mine.data(), gathered.data(), count, dt, groot,
                                 in_place)) == UCS_OK,
                 "gather");
    if (r == groot) {
        MEMBER_CHECK(std::memcmp(gathered.data(), all_expect.data(), n * bb) == 0,
                     "gather count %zu", count);
    }
    return 0;
}

/* The reductions of one (datatype, op) and count. */
int reductions(member &m, ucp_coll_dt_t dt, ucp_coll_op_t op, size_t count, bool in_place)
{
    const unsigned n = m.size, r = m.rank;
    const size_t bb = count * dt_bytes(dt);
    auto in         = buffer(dt, n * count);
    fill_input(in, 0, dt, n * count, r, 0, op);
    auto want = buffer(dt, n * count);
    for (size_t i = 0; i < n * count; ++i) {
        store(dt, want.data(), i, reduced(n, i, op, dt));
    }

    auto out = in_place ? in : buffer(dt, count);
    MEMBER_CHECK(m.run(make_args(UCP_COLL_ALLREDUCE, in.data(), out.data(), count, dt, 0, in_place,
                                 op)) == UCS_OK,
                 "allreduce");
    MEMBER_CHECK(same_values(dt, out.data(), want.data(), count), "allreduce count %zu", count);

    const unsigned root = n - 1;
    auto rout           = (in_place && (r == root)) ? in : buffer(dt, count);
    MEMBER_CHECK(m.run(make_args(UCP_COLL_REDUCE, in.data(), rout.data(), count, dt, root, in_place,
                                 op)) == UCS_OK,
                 "reduce");
    if (r == root) {
        MEMBER_CHECK(same_values(dt, rout.data(), want.data(), count), "reduce count %zu", count);
    }

    auto rs_in  = in;
    auto rs_out = in_place ? rs_in : buffer(dt, count);
    MEMBER_CHECK(m.run(make_args(UCP_COLL_REDUCE_SCATTER, rs_in.data(), rs_out.data(), count, dt, 0,
                                 in_place, op)) == UCS_OK,
                 "reduce_scatter");
    MEMBER_CHECK(same_values(dt, rs_out.data(), want.data() + r * bb, count),
                 "reduce_scatter count %zu", count);
    return 0;
}

int every_collective(member &m)
{
    ucp_coll_args_t barrier{};
    barrier.coll = UCP_COLL_BARRIER;
    for (int i = 0; i < 3; ++i) {
        MEMBER_CHECK(m.run(barrier) == UCS_OK, "barrier");
    }
    const size_t counts[] = {0, 1, 7, 1500};
    for (unsigned dt = 0; dt < UCP_COLL_DT_LAST; ++dt) {
        for (size_t count : counts) {
            const bool in_place = ((dt + count) % 2) == 1;
            const int code      = movement(m, ucp_coll_dt_t(dt), count, in_place);
            if (code != 0) {
                std::fprintf(stderr, "rank %u: datatype %u count %zu%s\n", m.rank, dt, count,
                             in_place ? " in place" : "");
                return code;
            }
        }
        for (unsigned op = 0; op < UCP_COLL_OP_LAST; ++op) {
            ucp_coll_attr_t attr{};
            attr.coll = UCP_COLL_ALLREDUCE;
            attr.dt   = ucp_coll_dt_t(dt);
            attr.op   = ucp_coll_op_t(op);
            MEMBER_CHECK(ucp_coll_query(m.team, &attr) == UCS_OK, "query");
            const bool expected = meaningful(ucp_coll_dt_t(dt), ucp_coll_op_t(op));
            MEMBER_CHECK(bool(attr.supported) == expected, "query dt %u op %u", dt, op);
            if (!expected) {
                uint8_t a[16] = {}, b[16] = {};
                MEMBER_CHECK(m.run(make_args(UCP_COLL_ALLREDUCE, a, b, 1, ucp_coll_dt_t(dt), 0,
                                             false, ucp_coll_op_t(op))) == UCS_ERR_UNSUPPORTED,
                             "dt %u op %u refused", dt, op);
                continue;
            }
            for (size_t count : {size_t(0), size_t(1), size_t(7)}) {
                const int code = reductions(m, ucp_coll_dt_t(dt), ucp_coll_op_t(op), count,
                                            ((op + count) % 2) == 1);
                if (code != 0) {
                    std::fprintf(stderr, "rank %u: datatype %u op %u count %zu\n", m.rank, dt, op,
                                 count);
                    return code;
                }
            }
        }
    }
    /* Past the rendezvous threshold (4 KiB here) and into the ring
     * algorithms (16 KiB): a few pairs. */
    const struct {
        ucp_coll_dt_t dt;
        ucp_coll_op_t op;
    } big[] = {
        {UCP_COLL_DT_DOUBLE, UCP_COLL_OP_SUM},
        {UCP_COLL_DT_INT32, UCP_COLL_OP_MAX},
        {UCP_COLL_DT_UINT8, UCP_COLL_OP_BXOR},
        {UCP_COLL_DT_FLOAT_COMPLEX, UCP_COLL_OP_PROD},
    };
    for (const auto &b : big) {
        for (size_t count : {size_t(1001), size_t(30001)}) {
            const int code = reductions(m, b.dt, b.op, count, count > 2000);
            if (code != 0) {
                std::fprintf(stderr, "rank %u: large %u/%u count %zu\n", m.rank, b.dt, b.op, count);
                return code;
            }
        }
    }
    for (size_t count : {size_t(3001), size_t(40000)}) {
        const int code = movement(m, UCP_COLL_DT_INT32, count, count > 5000);
        if (code != 0) {
            std::fprintf(stderr, "rank %u: large movement count %zu\n", m.rank, count);
            return code;
        }
    }
    return 0;
}

void require_all_passed(const std::vector<int> &codes)
{
    for (size_t r = 0; r < codes.size(); ++r) {
        INFO("member " << r);
        CHECK(codes[r] == 0);
    }
}

} // namespace

TEST_CASE("collectives: every operation, datatype and op on 2 to 8 processes", "[coll]")
{
    const char *tls     = GENERATE("posix,cma,self", "tcp,self");
    const unsigned size = GENERATE(2u, 3u, 4u, 5u, 8u);
    CAPTURE(tls, size);
    group_options options;
    options.tls   = tls;
    options.extra = small_rndv;
    std::vector<int> codes;
    run_group(size, options, every_collective, &codes);
    require_all_passed(codes);
}

namespace {

/* Allreduce of fractional values: every rank writes a digest of its result;
 * the parent checks they are the same bits, for both algorithms. */
int float_digests(member &m)
{
    size_t slot = 0;
    for (size_t count : {size_t(999), size_t(50001)}) {
        for (ucp_coll_dt_t dt : {UCP_COLL_DT_FLOAT, UCP_COLL_DT_DOUBLE}) {
            const size_t es = dt_bytes(dt);
            std::vector<uint8_t> in(count * es), out(count * es);
            for (size_t i = 0; i < count; ++i) {
                const double x = std::sin(double(m.rank * 1000003 + i)) * 1e3 / (1.0 + i);
                if (dt == UCP_COLL_DT_FLOAT) {
                    const float f = float(x);
                    std::memcpy(&in[i * es], &f, es);
                } else {
                    std::memcpy(&in[i * es], &x, es);
                }
            }
            MEMBER_CHECK(m.run(make_args(UCP_COLL_ALLREDUCE, in.data(), out.data(), count, dt, 0,
                                         false, UCP_COLL_OP_SUM)) == UCS_OK,
                         "allreduce");
            uint64_t digest = 1469598103934665603ull;
            for (uint8_t byte : out) {
                digest = (digest ^ byte) * 1099511628211ull;
            }
            m.shared[slot * 64 + m.rank] = digest;
            ++slot;
        }
    }
    return 0;
}

/* Eight allreduces outstanding at once, alternating between the group's
 * team and a second team of the same members with another key, while an
 * application's wildcard tag receive is posted: it must still be waiting
 * afterwards. */
int concurrent(member &m)
{
    std::vector<ucp_ep_h> eps = m.eps;
    ucp_team_params_t tp{};
    tp.field_mask = UCP_TEAM_PARAM_FIELD_EPS | UCP_TEAM_PARAM_FIELD_KEY;
    tp.eps        = eps.data();
    tp.size       = m.size;
    tp.my_rank    = m.rank;
    tp.key        = 2;
    ucp_team_h second;
    MEMBER_CHECK(m.wait(ucp_team_create_nbx(m.ctx, &tp, &second, nullptr)) == UCS_OK, "team");
    /* The same key again is refused while the first exists. */
    ucp_team_h dup;
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_team_create_nbx(m.ctx, &tp, &dup, nullptr)) ==
                     UCS_ERR_ALREADY_EXISTS,
                 "key in use");

    uint64_t stray = 0;
    ucp_request_param_t rp{};
    void *wildcard = ucp_tag_recv_nbx(m.p.worker, &stray, sizeof(stray), 0, 0, &rp);
    MEMBER_CHECK(!UCS_PTR_IS_ERR(wildcard) && (wildcard != nullptr), "wildcard receive");

    constexpr unsigned ops = 8;
    const size_t count     = 3000;
    std::vector<std::vector<int64_t>> in(ops, std::vector<int64_t>(count));
    std::vector<std::vector<int64_t>> out(ops, std::vector<int64_t>(count, -1));
    std::vector<void *> requests;
    for (unsigned k = 0; k < ops; ++k) {
        for (size_t i = 0; i < count; ++i) {
            in[k][i] = int64_t(m.rank + 1) * int64_t(k * 1000 + i);
        }
        ucp_coll_args_t a    = make_args(UCP_COLL_ALLREDUCE, in[k].data(), out[k].data(), count,
                                         UCP_COLL_DT_INT64, 0, false, UCP_COLL_OP_SUM);
        ucs_status_ptr_t req = ucp_coll_nbx((k % 2) ? second : m.team, &a, nullptr);
        MEMBER_CHECK(!UCS_PTR_IS_ERR(req), "allreduce %u", k);
        requests.push_back(req);
    }
    /* Busy while its collectives run. */
    MEMBER_CHECK((requests.back() == nullptr) || (ucp_team_destroy(second) == UCS_ERR_BUSY),
                 "busy team");
    for (int k = int(ops) - 1; k >= 0; --k) { /* waited for out of order */
        MEMBER_CHECK(m.wait(requests[k]) == UCS_OK, "allreduce %d", k);
    }
    const int64_t ranks_sum = int64_t(m.size) * (m.size + 1) / 2;
    for (unsigned k = 0; k < ops; ++k) {
        for (size_t i = 0; i < count; ++i) {
            MEMBER_CHECK(out[k][i] == ranks_sum * int64_t(k * 1000 + i), "op %u element %zu", k, i);
        }
    }
    ucp_worker_progress(m.p.worker);
    MEMBER_CHECK(ucp_request_check_status(wildcard) == UCS_INPROGRESS,
                 "the wildcard receive matched collective traffic");
    ucp_request_cancel(m.p.worker, wildcard);
    MEMBER_CHECK(m.p.wait(wildcard) == UCS_ERR_CANCELED, "cancel");

    ucp_coll_args_t barrier{};
    barrier.coll = UCP_COLL_BARRIER;
    MEMBER_CHECK(m.wait(ucp_coll_nbx(second, &barrier, nullptr)) == UCS_OK, "barrier");
    MEMBER_CHECK(ucp_team_destroy(second) == UCS_OK, "destroy");
    return 0;
}

/* Sub-teams of a 5-rank team: the even ranks (0, 2, 4) and the odd ones
 * (1, 3), each running allreduce and bcast at once; then the evens make a
 * second sub-team of the same range (another key). */
int subteams(member &m)
{
    ucp_team_params_t tp{};
    tp.field_mask = UCP_TEAM_PARAM_FIELD_PARENT;
    tp.parent     = m.team;
    tp.start      = m.rank % 2;
    tp.stride     = 2;
    tp.count      = (m.rank % 2) ? 2 : 3;
    ucp_team_h sub;
    MEMBER_CHECK(m.wait(ucp_team_create_nbx(m.ctx, &tp, &sub, nullptr)) == UCS_OK, "sub");
    unsigned rank, size;
    MEMBER_CHECK((ucp_team_query(sub, &rank, &size) == UCS_OK) && (rank == m.rank / 2) &&
                     (size == tp.count),
                 "query");
    int32_t value = int32_t(m.rank), sum = -1;
    const ucp_coll_args_t sum_args = make_args(UCP_COLL_ALLREDUCE, &value, &sum, 1,
                                               UCP_COLL_DT_INT32);
    MEMBER_CHECK(m.wait(ucp_coll_nbx(sub, &sum_args, nullptr)) == UCS_OK, "sub allreduce");
    MEMBER_CHECK(sum == ((m.rank % 2) ? 1 + 3 : 0 + 2 + 4), "sum %d", sum);

    if (m.rank % 2 == 0) {
        ucp_team_h again;
        MEMBER_CHECK(m.wait(ucp_team_create_nbx(m.ctx, &tp, &again, nullptr)) == UCS_OK, "2nd");
        int32_t word      = (rank == 2) ? 77 : 0;
        ucp_coll_args_t a = make_args(UCP_COLL_BCAST, nullptr, &word, 1, UCP_COLL_DT_INT32, 2);
        MEMBER_CHECK(m.wait(ucp_coll_nbx(again, &a, nullptr)) == UCS_OK, "bcast");
        MEMBER_CHECK(word == 77, "bcast %d", word);
        MEMBER_CHECK(ucp_team_destroy(again) == UCS_OK, "destroy");
    }
    /* Not a member of this range: refused. */
    ucp_team_params_t other = tp;
    other.start             = 1 - tp.start;
    other.count             = 2;
    ucp_team_h none;
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_team_create_nbx(m.ctx, &other, &none, nullptr)) ==
                     UCS_ERR_INVALID_PARAM,
                 "not in the range");
    MEMBER_CHECK(ucp_team_destroy(sub) == UCS_OK, "destroy");
    return 0;
}

int bad_arguments(member &m)
{
    int32_t x = 0, y = 0;
    ucp_coll_args_t a = make_args(UCP_COLL_BCAST, nullptr, &x, 1, UCP_COLL_DT_INT32, m.size);
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_coll_nbx(m.team, &a, nullptr)) == UCS_ERR_INVALID_PARAM,
                 "root");
    a                   = make_args(UCP_COLL_ALLREDUCE, &x, &y, 1, UCP_COLL_DT_INT32);
    const int bad_value = 99; /* what a C caller may store */
    std::memcpy(&a.dt, &bad_value, sizeof(bad_value));
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_coll_nbx(m.team, &a, nullptr)) == UCS_ERR_INVALID_PARAM,
                 "datatype");
    a = make_args(UCP_COLL_ALLREDUCE, &x, &y, 1, UCP_COLL_DT_INT32);
    a.field_mask &= ~uint64_t(UCP_COLL_ARGS_FIELD_OP);
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_coll_nbx(m.team, &a, nullptr)) == UCS_ERR_INVALID_PARAM,
                 "no op");
    a = make_args(UCP_COLL_ALLREDUCE, nullptr, &y, 1, UCP_COLL_DT_INT32);
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_coll_nbx(m.team, &a, nullptr)) == UCS_ERR_INVALID_PARAM,
                 "no buffer");
    std::memcpy(&a.coll, &bad_value, sizeof(bad_value));
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_coll_nbx(m.team, &a, nullptr)) == UCS_ERR_INVALID_PARAM,
                 "collective");
    ucp_coll_attr_t attr{};
    std::memcpy(&attr.op, &bad_value, sizeof(bad_value));
    attr.coll = UCP_COLL_ALLREDUCE;
    MEMBER_CHECK(ucp_coll_query(m.team, &attr) == UCS_ERR_INVALID_PARAM, "query op");
    MEMBER_CHECK(ucp_coll_request_check_status(&x) == UCS_ERR_INVALID_PARAM, "stray request");
    ucp_coll_context_h again;
    MEMBER_CHECK(ucp_coll_context_create(m.p.worker, &again) == UCS_ERR_ALREADY_EXISTS,
                 "second context");
    MEMBER_CHECK(ucp_coll_context_destroy(m.ctx) == UCS_ERR_BUSY, "context with a team");
    ucp_team_params_t tp{};
    tp.field_mask = UCP_TEAM_PARAM_FIELD_EPS | UCP_TEAM_PARAM_FIELD_KEY;
    tp.eps        = m.eps.data();
    tp.size       = m.size;
    tp.my_rank    = m.rank;
    tp.key        = 1ull << 63;
    ucp_team_h team;
    MEMBER_CHECK(UCS_PTR_STATUS(ucp_team_create_nbx(m.ctx, &tp, &team, nullptr)) ==
                     UCS_ERR_INVALID_PARAM,
                 "reserved key");

    /* The callback and NO_IMM_CMPL: a barrier's callback runs from progress. */
    struct done {
        unsigned calls      = 0;
        ucs_status_t status = UCS_INPROGRESS;
    } d;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.send = [](void *, ucs_status_t status, void *arg) {
        auto *dd = static_cast<done *>(arg);
        ++dd->calls;
        dd->status = status;
    };
    param.user_data = &d;
    ucp_coll_args_t barrier{};
    barrier.coll         = UCP_COLL_BARRIER;
    ucs_status_ptr_t req = ucp_coll_nbx(m.team, &barrier, &param);
    MEMBER_CHECK((req != nullptr) && !UCS_PTR_IS_ERR(req), "a request");
    while (d.calls == 0) {
        ucp_worker_progress(m.p.worker);
    }
    MEMBER_CHECK((d.calls == 1) && (d.status == UCS_OK), "callback");
    MEMBER_CHECK(ucp_coll_request_check_status(req) == UCS_OK, "status");
    ucp_coll_request_free(req);
    return 0;
}

} // namespace

TEST_CASE("collectives: floating-point results are the same bits on every rank", "[coll]")
{
    /* A radix: the small allreduces by knomial with it (5 ranks, radix 3:
     * a fold of two; 8: groups of 3, then of 2, and a fold). */
    const auto [size, radix] = GENERATE(table<unsigned, const char *>(
        {{3u, nullptr}, {4u, nullptr}, {5u, nullptr}, {5u, "3"}, {8u, "3"}}));
    CAPTURE(size, radix);
    group_options options;
    if (radix != nullptr) {
        options.env = {{"UCX_COLL_TUNE", "allreduce:0-16k:@knomial"},
                       {"UCX_COLL_KNOMIAL_RADIX", radix}};
    }
    std::vector<int> codes;
    std::vector<uint64_t> shared;
    run_group(size, options, float_digests, &codes, &shared);
    require_all_passed(codes);
    for (size_t slot = 0; slot < 4; ++slot) {
        for (unsigned r = 1; r < size; ++r) {
            INFO("result " << slot << " rank " << r);
            CHECK(shared[slot * 64 + r] == shared[slot * 64]);
        }
    }
}

TEST_CASE("collectives: outstanding on two teams beside a wildcard tag receive", "[coll]")
{
    const char *tls     = GENERATE("posix,cma,self", "tcp,self");
    const unsigned size = GENERATE(3u, 4u);
    CAPTURE(tls, size);
    group_options options;
    options.tls   = tls;
    options.extra = small_rndv;
    std::vector<int> codes;
    run_group(size, options, concurrent, &codes);
    require_all_passed(codes);
}

TEST_CASE("collectives: sub-teams of strided ranges", "[coll]")
{
    group_options options;
    std::vector<int> codes;
    run_group(5, options, subteams, &codes);
    require_all_passed(codes);
}

TEST_CASE("collectives: bad arguments, callbacks and NO_IMM_CMPL", "[coll]")
{
    group_options options;
    std::vector<int> codes;
    run_group(3, options, bad_arguments, &codes);
    require_all_passed(codes);
}

namespace {

/* Rank 2 of 3 dies after a barrier; the others run allreduces: each fails
 * (at the member that finds the dead peer, and at the other through its
 * abort message), within the test's time, not a hang. */
int member_dies(member &m)
{
    ucp_coll_args_t barrier{};
    barrier.coll = UCP_COLL_BARRIER;
    MEMBER_CHECK(m.run(barrier) == UCS_OK, "barrier");
    if (m.rank == 2) {
        _exit(0);
    }
    int64_t x = 1, y = 0;
    const ucp_coll_args_t a = make_args(UCP_COLL_ALLREDUCE, &x, &y, 1, UCP_COLL_DT_INT64);
    ucs_status_t status     = UCS_OK;
    for (int i = 0; (i < 1000) && (status == UCS_OK); ++i) {
        status = m.run(a);
    }
    MEMBER_CHECK(status != UCS_OK, "allreduce went on without rank 2");
    return 0;
}

/* The same with pipelined bcasts from rank 0: rank 1, in the middle of
 * the chain, waits for nothing from rank 2, only for its sends to it. */
int member_dies_in_pipeline(member &m)
{
    ucp_coll_args_t barrier{};
    barrier.coll = UCP_COLL_BARRIER;
    MEMBER_CHECK(m.run(barrier) == UCS_OK, "barrier");
    if (m.rank == 2) {
        _exit(0);
    }
    std::vector<uint8_t> buf(16 * 4096);
    const ucp_coll_args_t a = make_args(UCP_COLL_BCAST, nullptr, buf.data(), buf.size(),
                                        UCP_COLL_DT_UINT8);
    ucs_status_t status     = UCS_OK;
    for (int i = 0; (i < 1000) && (status == UCS_OK); ++i) {
        status = m.run(a);
    }
    MEMBER_CHECK(status != UCS_OK, "bcast went on without rank 2");
    return 0;
}

} // namespace

TEST_CASE("collectives: a member dies: the others get an error, not a hang", "[coll]")
{
    const char *tls     = GENERATE("posix,cma,self", "tcp,self");
    const bool pipeline = GENERATE(false, true);
    CAPTURE(tls, pipeline);
    group_options options;
    options.tls      = tls;
    options.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    options.teardown = false;
    if (pipeline) {
        options.extra = small_rndv;
        options.env   = {{"UCX_COLL_TUNE", "bcast:@pipeline"}, {"UCX_COLL_PIPELINE_SEGMENT", "4k"}};
    }
    std::vector<int> codes;
    run_group(3, options, pipeline ? member_dies_in_pipeline : member_dies, &codes);
    require_all_passed(codes);
}

namespace {

/* A pipelined bcast that fails at its receiver (a count that does not
 * match: its first segment is too long) while the root's segments are on
 * their way: the receiver drops those it will not take, so the root's
 * sends complete and it gets the error too instead of waiting for ever;
 * the team still works after that. */
int failed_pipeline(member &m)
{
    std::vector<uint8_t> buf(16 * 4096, 7);
    const size_t count        = (m.rank == 0) ? buf.size() : 4000;
    const ucp_coll_args_t bad = make_args(UCP_COLL_BCAST, nullptr, buf.data(), count,
                                          UCP_COLL_DT_UINT8);
    MEMBER_CHECK(m.run(bad) != UCS_OK, "a bcast of mismatched counts succeeded");
    if (m.rank != 0) {
        std::fill(buf.begin(), buf.end(), 0);
    }
    const ucp_coll_args_t good = make_args(UCP_COLL_BCAST, nullptr, buf.data(), buf.size(),
                                           UCP_COLL_DT_UINT8);
    MEMBER_CHECK(m.run(good) == UCS_OK, "bcast after the failure");
    MEMBER_CHECK(std::all_of(buf.begin(), buf.end(), [](uint8_t x) { return x == 7; }),
                 "bcast after the failure: wrong data");
    return 0;
}

} // namespace

TEST_CASE("collectives: a pipeline that fails at a member fails at the root, not a hang", "[coll]")
{
    const char *tls = GENERATE("posix,cma,self", "tcp,self");
    CAPTURE(tls);
    group_options options;
    options.tls   = tls;
    options.extra = small_rndv;
    options.env   = {{"UCX_COLL_TUNE", "bcast:@pipeline"}, {"UCX_COLL_PIPELINE_SEGMENT", "4k"}};
    std::vector<int> codes;
    run_group(2, options, failed_pipeline, &codes);
    require_all_passed(codes);
}

namespace {

/* Barriers: no member leaves one before every member entered it (each
 * marks its entry in the shared words). */
int barriers(member &m)
{
    ucp_coll_args_t barrier{};
    barrier.coll = UCP_COLL_BARRIER;
    for (uint64_t i = 1; i <= 3; ++i) {
        __atomic_store_n(&m.shared[m.rank], i, __ATOMIC_SEQ_CST);
        MEMBER_CHECK(m.run(barrier) == UCS_OK, "barrier");
        for (unsigned r = 0; r < m.size; ++r) {
            MEMBER_CHECK(__atomic_load_n(&m.shared[r], __ATOMIC_SEQ_CST) >= i,
                         "barrier %lu left before rank %u entered it", (unsigned long)i, r);
        }
    }
    return 0;
}

/* The reductions and data movement of a few types at sizes that reach
 * every round of the forced algorithm. */
int forced_algorithm(member &m)
{
    const int barriers_code = barriers(m);
    if (barriers_code != 0) {
        return barriers_code;
    }
    for (size_t count : {size_t(1), size_t(5), size_t(33), size_t(4099)}) {
        for (const auto &pair : {std::make_pair(UCP_COLL_DT_DOUBLE, UCP_COLL_OP_SUM),
                                 std::make_pair(UCP_COLL_DT_INT16, UCP_COLL_OP_MIN),
                                 std::make_pair(UCP_COLL_DT_FLOAT_COMPLEX, UCP_COLL_OP_PROD)}) {
            const int code = reductions(m, pair.first, pair.second, count, (count % 2) == 1);
            if (code != 0) {
                std::fprintf(stderr, "rank %u: dt %u op %u count %zu\n", m.rank, pair.first,
                             pair.second, count);
                return code;
            }
        }
        const int code = movement(m, UCP_COLL_DT_UINT8, count, (count % 2) == 0);
        if (code != 0) {
            return code;
        }
    }
    return 0;
}

} // namespace

TEST_CASE("collectives: each algorithm forced by UCX_COLL_TUNE", "[coll]")
{
    const char *tune =
        GENERATE("allreduce:@recursive_doubling#bcast:@binomial#allgather:@bruck#gather:@binomial"
                 "#alltoall:@bruck",
                 "allreduce:@rabenseifner#bcast:@scatter_allgather#allgather:@ring#gather:@linear"
                 "#alltoall:@pairwise",
                 "allreduce:@ring#bcast:0-100:@binomial#bcast:100-inf:@scatter_allgather"
                 "#reduce:@binomial",
                 "barrier:@knomial#bcast:@knomial#reduce:@knomial#allreduce:@knomial",
                 "bcast:[1-5]:@binomial#bcast:[6-inf]:@knomial#reduce:0-64:[3-8]:@binomial");
    /* 17: a knomial tree (radix 4) with a full level and a partial one, and
     * the knomial allreduce's fold of one rank. */
    const unsigned size = GENERATE(2u, 3u, 5u, 6u, 8u, 17u);
    CAPTURE(tune, size);
    group_options options;
    options.extra = small_rndv;
    options.env   = {{"UCX_COLL_TUNE", tune}};
    std::vector<int> codes;
    run_group(size, options, forced_algorithm, &codes);
    require_all_passed(codes);
}

namespace {

/* Radix 4 (the default) is in the test above; the knomial algorithms of
 * the other radixes with fewer collectives each, to keep the test short. */
int knomial_algorithms(member &m)
{
    const int barriers_code = barriers(m);
    if (barriers_code != 0) {
        return barriers_code;
    }
    for (size_t count : {size_t(1), size_t(33), size_t(4099)}) {
        const int code = reductions(m, UCP_COLL_DT_DOUBLE, UCP_COLL_OP_SUM, count,
                                    (count % 2) == 1);
        if (code != 0) {
            std::fprintf(stderr, "rank %u: count %zu\n", m.rank, count);
            return code;
        }
    }
    return movement(m, UCP_COLL_DT_UINT8, 33, false);
}

} // namespace

TEST_CASE("collectives: the knomial algorithms with radix 2 and 3", "[coll]")
{
    /* Radix 2: recursive doubling's schedule (a power of two, and folds of
     * 1 and 3 ranks); 3: groups of 3 (3, 9 of 17), of 3 then of 2 (6 of 6 and
     * of 8), folds of 2 ranks (5, 8) and 8 (17). */
    const auto [radix, size] = GENERATE(table<const char *, unsigned>({{"2", 2u},
                                                                       {"2", 5u},
                                                                       {"2", 8u},
                                                                       {"2", 11u},
                                                                       {"3", 2u},
                                                                       {"3", 3u},
                                                                       {"3", 5u},
                                                                       {"3", 6u},
                                                                       {"3", 8u},
                                                                       {"3", 17u}}));
    CAPTURE(radix, size);
    group_options options;
    options.extra = small_rndv;
    options.env   = {{"UCX_COLL_TUNE", "barrier:@knomial#bcast:@knomial#reduce:@knomial"
                                         "#allreduce:@knomial"},
                     {"UCX_COLL_KNOMIAL_RADIX", radix}};
    std::vector<int> codes;
    run_group(size, options, knomial_algorithms, &codes);
    require_all_passed(codes);
}

TEST_CASE("collectives: the knomial radix by collective, message size and team size", "[coll]")
{
    /* knomial_algorithms' allreduces are of 8 B, 264 B and 32 KiB: each by
     * another radix; the barrier by 3, the small reduce by 5, the bcast by 2
     * from 6 ranks on, the rest by UCX_COLL_KNOMIAL_RADIX's 4. */
    const unsigned size = GENERATE(5u, 8u);
    CAPTURE(size);
    group_options options;
    options.extra = small_rndv;
    options.env   = {{"UCX_COLL_TUNE", "barrier:@knomial#bcast:@knomial#reduce:@knomial"
                                         "#allreduce:@knomial#barrier:radix=3"
                                         "#allreduce:0-100:radix=2#allreduce:100-10k:radix=3"
                                         "#allreduce:10k-inf:radix=5#reduce:0-100:radix=5"
                                         "#bcast:[6-inf]:radix=2"}};
    std::vector<int> codes;
    run_group(size, options, knomial_algorithms, &codes);
    require_all_passed(codes);
}

namespace {

/* The pipelined bcast and reduce with 4 KiB segments: sizes of one
 * segment, three whole ones and three with a short last one (and none),
 * roots other than 0, reduce in place at the root and not. */
int pipelined(member &m)
{
    const unsigned n = m.size, r = m.rank;
    const size_t segment       = 4096;
    const size_t bcast_bytes[] = {0, 100, 3 * segment, 2 * segment + 100};
    for (size_t i = 0; i < std::size(bcast_bytes); ++i) {
        const size_t count  = bcast_bytes[i];
        const unsigned root = unsigned(i + 1) % n;
        auto buf            = buffer(UCP_COLL_DT_UINT8, count);
        if (r == root) {
            fill_input(buf, 0, UCP_COLL_DT_UINT8, count, root, 0);
        }
        MEMBER_CHECK(m.run(make_args(UCP_COLL_BCAST, nullptr, buf.data(), count, UCP_COLL_DT_UINT8,
                                     root)) == UCS_OK,
                     "bcast");
        auto expect = buffer(UCP_COLL_DT_UINT8, count);
        fill_input(expect, 0, UCP_COLL_DT_UINT8, count, root, 0);
        MEMBER_CHECK(std::memcmp(buf.data(), expect.data(), count) == 0, "bcast %zu bytes root %u",
                     count, root);
    }
    for (const auto &pair : {std::make_pair(UCP_COLL_DT_DOUBLE, UCP_COLL_OP_SUM),
                             std::make_pair(UCP_COLL_DT_INT16, UCP_COLL_OP_MIN)}) {
        const ucp_coll_dt_t dt = pair.first;
        const ucp_coll_op_t op = pair.second;
        const size_t per       = segment / dt_bytes(dt);
        const size_t counts[]  = {0, 100, 3 * per, 2 * per + 37};
        for (size_t i = 0; i < std::size(counts); ++i) {
            const size_t count  = counts[i];
            const unsigned root = unsigned(n - 1 - i % n);
            const bool in_place = (i % 2) == 1;
            auto in             = buffer(dt, count);
            fill_input(in, 0, dt, count, r, 0, op);
            auto out = (in_place && (r == root)) ? in : buffer(dt, count);
            MEMBER_CHECK(m.run(make_args(UCP_COLL_REDUCE, in.data(), out.data(), count, dt, root,
                                         in_place, op)) == UCS_OK,
                         "reduce");
            if (r == root) {
                auto want = buffer(dt, count);
                for (size_t e = 0; e < count; ++e) {
                    store(dt, want.data(), e, reduced(n, e, op, dt));
                }
                MEMBER_CHECK(same_values(dt, out.data(), want.data(), count),
                             "reduce dt %u count %zu root %u%s", dt, count, root,
                             in_place ? " in place" : "");
            }
        }
    }
    return 0;
}

} // namespace

TEST_CASE("collectives: the pipelined bcast and reduce", "[coll]")
{
    /* 17: a chain of 16 links, more than the segments of any message here;
     * tcp: its sends complete at other times than shm's. */
    const auto [tls, size] = GENERATE(table<const char *, unsigned>({{"posix,cma,self", 2u},
                                                                     {"posix,cma,self", 3u},
                                                                     {"posix,cma,self", 5u},
                                                                     {"posix,cma,self", 8u},
                                                                     {"posix,cma,self", 17u},
                                                                     {"tcp,self", 3u},
                                                                     {"tcp,self", 5u}}));
    CAPTURE(tls, size);
    group_options options;
    options.tls   = tls;
    options.extra = small_rndv;
    options.env   = {{"UCX_COLL_TUNE", "bcast:@pipeline#reduce:@pipeline"},
                     {"UCX_COLL_PIPELINE_SEGMENT", "4k"}};
    std::vector<int> codes;
    run_group(size, options, pipelined, &codes);
    require_all_passed(codes);
}

namespace {

/* Each bad value of `setting` fails the context with UCS_ERR_INVALID_PARAM
 * and an error naming the setting; `good` (nullptr: unset) then works. */
void check_bad_setting(const char *setting, std::initializer_list<const char *> bad_values,
                       const char *good)
{
    for (const char *bad : bad_values) {
        CAPTURE(setting, bad);
        ucp_test::peer p;
        REQUIRE(p.init("self", UCP_FEATURE_AM) == UCS_OK);
        setenv(setting, bad, 1);
        ucp_coll_context_h ctx = nullptr;
        {
            config_test::log_capture log(UCS_LOG_LEVEL_ERROR);
            CHECK(ucp_coll_context_create(p.worker, &ctx) == UCS_ERR_INVALID_PARAM);
            CHECK(log.text().find(setting + std::strlen("UCX_")) != std::string::npos);
        }
        if (good != nullptr) {
            setenv(setting, good, 1);
        } else {
            unsetenv(setting);
        }
        CHECK(ucp_coll_context_create(p.worker, &ctx) == UCS_OK);
        CHECK(ucp_coll_context_destroy(ctx) == UCS_OK);
        unsetenv(setting);
    }
}

} // namespace

TEST_CASE("collectives: a bad UCX_COLL_PIPELINE_SEGMENT fails the context with a message", "[coll]")
{
    check_bad_setting("UCX_COLL_PIPELINE_SEGMENT", {"0", "1000", "2g", "inf", "auto", "four", "4x"},
                      "1k");
}

TEST_CASE("collectives: a bad UCX_COLL_KNOMIAL_RADIX fails the context with a message", "[coll]")
{
    check_bad_setting("UCX_COLL_KNOMIAL_RADIX", {"0", "1", "17", "-1", "four", "4x"}, "16");
}

TEST_CASE("collectives: a bad UCX_COLL_TUNE fails the context with a message", "[coll]")
{
    check_bad_setting("UCX_COLL_TUNE",
                      {"allreduce:@nosuch",
                       "nosuch:@ring",
                       "allreduce:8k-1k:@ring",
                       "allreduce:1k:@ring",
                       "allreduce",
                       "bcast:[4-2]:@binomial",
                       "bcast:[x-4]:@binomial",
                       "bcast:[2-4:@binomial",
                       "bcast:[2-4]:[5-6]:@binomial",
                       "bcast:1k-2k:3k-4k:@binomial",
                       "bcast::@binomial",
                       "bcast:[inf-inf]:@binomial",
                       "allreduce:radix=1",
                       "allreduce:radix=17",
                       "allreduce:radix=",
                       "allreduce:radix=4x",
                       "allreduce:0-4k:radix=-3",
                       "gather:radix=4",
                       "alltoall:0-1k:radix=2",
                       "allreduce:radix=3:@ring"},
                      nullptr);
}

namespace {

/* What a context made with these settings prints at info level. */
std::string resolved_table(std::initializer_list<std::pair<const char *, const char *>> settings)
{
    ucp_test::peer p;
    REQUIRE(p.init("self", UCP_FEATURE_AM) == UCS_OK);
    for (const auto &[name, value] : settings) {
        setenv(name, value, 1);
    }
    config_test::log_capture log(UCS_LOG_LEVEL_INFO);
    ucp_coll_context_h ctx    = nullptr;
    const ucs_status_t status = ucp_coll_context_create(p.worker, &ctx);
    for (const auto &setting : settings) {
        unsetenv(setting.first);
    }
    REQUIRE(status == UCS_OK);
    CHECK(ucp_coll_context_destroy(ctx) == UCS_OK);
    return log.text();
}

} // namespace

TEST_CASE("collectives: UCX_COLL_TUNE by team size; the resolved table at info level", "[coll]")
{
    const std::string table = resolved_table(
        {{"UCX_COLL_TUNE", "bcast:[2-4]:@binomial#bcast:64k-inf:[5-inf]:@scatter_allgather"}});
    CAPTURE(table);
    /* One rank: the default; 2 to 4: the rule; from 5: the default below
     * 64 KiB, the rule from there. */
    CHECK(table.find("bcast: [1-1 ranks] 0-:knomial [2-2 ranks] 0-:binomial "
                     "[3-4 ranks] 0-:binomial [5-inf ranks] 0-:knomial 64k-:scatter_allgather") !=
          std::string::npos);
    CHECK(table.find("knomial radix 4") != std::string::npos);
    CHECK(table.find("pipeline segment 64k") != std::string::npos);
    CHECK(table.find("knomial radix:") == std::string::npos); /* no radix rule */
}

TEST_CASE("collectives: radix rules of UCX_COLL_TUNE in the resolved table", "[coll]")
{
    const std::string table = resolved_table(
        {{"UCX_COLL_TUNE", "allreduce:0-4k:radix=8#allreduce:[5-inf]:radix=3#bcast:@binomial"},
         {"UCX_COLL_KNOMIAL_RADIX", "6"}});
    CAPTURE(table);
    /* Later rules win: from 5 ranks the second; below, the first up to 4k
     * and UCX_COLL_KNOMIAL_RADIX from there. */
    CHECK(table.find("allreduce knomial radix: [1-1 ranks] 0-:8 4k-:6 [2-2 ranks] 0-:8 4k-:6 "
                     "[3-4 ranks] 0-:8 4k-:6 [5-inf ranks] 0-:3") != std::string::npos);
    CHECK(table.find("knomial radix 6") != std::string::npos);
    /* Radix rules leave the choice of algorithm alone. */
    CHECK(table.find("allreduce: [1-1 ranks] 0-:recursive_doubling 16k-:rabenseifner") !=
          std::string::npos);
    CHECK(table.find("bcast: [1-1 ranks] 0-:binomial [2-2 ranks] 0-:binomial "
                     "[3-inf ranks] 0-:binomial") != std::string::npos);
    CHECK(table.find("bcast knomial radix:") == std::string::npos);
}
