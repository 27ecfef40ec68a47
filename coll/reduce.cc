/*
 * The reduction kernels: one template instance per (type, op), plain loops
 * over contiguous arrays that the compiler vectorises (-O2 -ftree-vectorize
 * for this file, see meson.build); no operand order is swapped, so results
 * do not depend on who reduces.
 */
#include "reduce.h"

#include <cstdint>

namespace coll {

namespace {

template <typename T>
struct complex_of {
    T re;
    T im;
};

using cfloat  = complex_of<float>;
using cdouble = complex_of<double>;

// clang-format off
struct op_min  { template <typename T> static T f(T a, T b) { return (b < a) ? b : a; } };
struct op_max  { template <typename T> static T f(T a, T b) { return (a < b) ? b : a; } };
struct op_sum  { template <typename T> static T f(T a, T b) { return a + b; } };
struct op_prod { template <typename T> static T f(T a, T b) { return a * b; } };
struct op_lor  { template <typename T> static T f(T a, T b) { return T((a != T(0)) || (b != T(0))); } };
struct op_land { template <typename T> static T f(T a, T b) { return T((a != T(0)) && (b != T(0))); } };
struct op_lxor { template <typename T> static T f(T a, T b) { return T((a != T(0)) != (b != T(0))); } };
struct op_bor  { template <typename T> static T f(T a, T b) { return T(a | b); } };
struct op_band { template <typename T> static T f(T a, T b) { return T(a & b); } };
struct op_bxor { template <typename T> static T f(T a, T b) { return T(a ^ b); } };
// clang-format on

struct op_csum {
    template <typename C>
    static C f(C a, C b)
    {
        return C{a.re + b.re, a.im + b.im};
    }
};
struct op_cprod {
    template <typename C>
    static C f(C a, C b)
    {
        return C{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    }
};

template <typename T, typename Op>
void kernel(void *dst, const void *lo, const void *hi, size_t count)
{
    T *d       = static_cast<T *>(dst);
    const T *a = static_cast<const T *>(lo);
    const T *b = static_cast<const T *>(hi);
    for (size_t i = 0; i < count; ++i) {
        d[i] = Op::f(a[i], b[i]);
    }
}

/* The row of an integer type: every op. */
template <typename T>
constexpr reduce_fn integer_row[UCP_COLL_OP_LAST] = {
    kernel<T, op_min>,  kernel<T, op_max>,  kernel<T, op_sum>, kernel<T, op_prod>,
    kernel<T, op_lor>,  kernel<T, op_land>, kernel<T, op_bor>, kernel<T, op_band>,
    kernel<T, op_lxor>, kernel<T, op_bxor>,
};

/* Floating point: no bitwise ops. */
template <typename T>
constexpr reduce_fn float_row[UCP_COLL_OP_LAST] = {
    kernel<T, op_min>,  kernel<T, op_max>, kernel<T, op_sum>, kernel<T, op_prod>, kernel<T, op_lor>,
    kernel<T, op_land>, nullptr,           nullptr,           kernel<T, op_lxor>, nullptr,
};

/* Complex: sums and products only (no order, no truth value). */
template <typename C>
constexpr reduce_fn complex_row[UCP_COLL_OP_LAST] = {
    nullptr, nullptr, kernel<C, op_csum>, kernel<C, op_cprod>, nullptr, nullptr, nullptr, nullptr,
    nullptr, nullptr,
};

constexpr const reduce_fn *rows[UCP_COLL_DT_LAST] = {
    integer_row<int8_t>,  integer_row<uint8_t>,  integer_row<int16_t>, integer_row<uint16_t>,
    integer_row<int32_t>, integer_row<uint32_t>, integer_row<int64_t>, integer_row<uint64_t>,
    float_row<float>,     float_row<double>,     complex_row<cfloat>,  complex_row<cdouble>,
};

constexpr size_t sizes[UCP_COLL_DT_LAST] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16};

constexpr const char *dt_names[UCP_COLL_DT_LAST] = {
    "int8",  "uint8",  "int16", "uint16", "int32",         "uint32",
    "int64", "uint64", "float", "double", "float_complex", "double_complex",
};

constexpr const char *op_names[UCP_COLL_OP_LAST] = {
    "min", "max", "sum", "prod", "lor", "land", "bor", "band", "lxor", "bxor",
};

} // namespace

size_t dt_size(ucp_coll_dt_t dt)
{
    return (unsigned(dt) < UCP_COLL_DT_LAST) ? sizes[dt] : 0;
}

reduce_fn reduce_function(ucp_coll_dt_t dt, ucp_coll_op_t op)
{
    if ((unsigned(dt) >= UCP_COLL_DT_LAST) || (unsigned(op) >= UCP_COLL_OP_LAST)) {
        return nullptr;
    }
    return rows[dt][op];
}

const char *dt_name(ucp_coll_dt_t dt)
{
    return (unsigned(dt) < UCP_COLL_DT_LAST) ? dt_names[dt] : "?";
}

const char *op_name(ucp_coll_op_t op)
{
    return (unsigned(op) < UCP_COLL_OP_LAST) ? op_names[op] : "?";
}

} // namespace coll
