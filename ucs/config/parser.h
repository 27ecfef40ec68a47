/*
 * Value types of configuration fields: how the text of a UCX_* variable
 * becomes a value inside a plain settings struct, and back to text.
 *
 * A parser is a small constant record of functions, so that tables made of
 * them are constant-initialised and safe to use from static initialisers.
 * Values are plain C types (the settings structs may be visible to C code):
 *
 *   type_int          int
 *   type_uint         unsigned
 *   type_ulong        unsigned long       number, "inf" (ulong_inf), "auto" (ulong_auto)
 *   type_size         size_t              "17", "8k", "4mb", "1g", "inf" (size_inf), "auto" (size_auto)
 *   type_double       double
 *   type_bool         int (0/1)           y/n yes/no on/off 1/0 true/false, any case
 *   type_ternary      ucs_ternary_auto_value_t   yes/no/try/auto
 *   type_on_off_auto  ucs_on_off_auto_value_t    on/off/auto
 *   type_enum(names)  unsigned (index)    one of the names, any case
 *   type_bitmap(names) unsigned (bit i = names[i])  "bt,freeze": any of the names
 *   type_string       char* (malloc)      never NULL once filled; "" when empty
 *   type_string_list  ucs_config_names_array_t   "shm,tcp"; "" is an empty list
 *   type_allow_list   ucs_config_allow_list_t    "all", "a,b", "^a,b" (all but a and b)
 *   type_time         double seconds      "10us", "2ms", "1s", "100ns", "3" (s), "inf", "auto"
 *   type_bw           double bytes/s      "12GBs", "100MB/s", "1.5Gbps", "auto" (bw_auto);
 *                                         K/M/G/T are binary (1024) multipliers, as in UCX
 *   type_table(t)     the struct of sub-table t, embedded (see table.h)
 */
#ifndef UCS_CONFIG_PARSER_H
#define UCS_CONFIG_PARSER_H

#include <ucs/config/types.h>
#include <ucs/type/status.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace ucs::config {

struct table;
struct parser;

/* Special values; numerically the same as UCX's UCS_MEMUNITS_* / UCS_ULUNITS_*. */
inline constexpr size_t size_inf          = SIZE_MAX;
inline constexpr size_t size_auto         = SIZE_MAX - 1;
inline constexpr unsigned long ulong_inf  = ULONG_MAX;
inline constexpr unsigned long ulong_auto = ULONG_MAX - 1;
inline constexpr double time_inf          = std::numeric_limits<double>::infinity();
inline constexpr double time_auto         = -2.0;
inline constexpr double bw_auto           = -2.0; /* UCX's UCS_CONFIG_BW_AUTO */

/*
 * One value type. Contract of the functions (the config engine relies on it):
 * - parse:   writes a new value into dest (which owns nothing) and returns
 *            true; on malformed text returns false and leaves dest untouched
 *            with nothing allocated. Must not throw except std::bad_alloc.
 * - print:   text that parse accepts and that gives back the same value.
 * - clone:   deep copy of src into dest (which owns nothing).
 * - release: frees what the value owns and zeroes it.
 * - syntax:  the accepted form, for error messages and documentation.
 * All five are set for every type except type_table.
 */
struct parser {
    bool (*parse)(const char *text, void *dest, const parser &self);
    std::string (*print)(const void *value, const parser &self);
    ucs_status_t (*clone)(const void *src, void *dest, const parser &self);
    void (*release)(void *value, const parser &self);
    std::string (*syntax)(const parser &self);
    const void *arg        = nullptr; /* type-specific data, e.g. enum names */
    size_t arg_count       = 0;
    size_t value_size      = 0;       /* bytes of the value in the struct */
    const table *sub_table = nullptr; /* only for type_table */
};

namespace detail {

bool parse_int(const char *, void *, const parser &);
bool parse_uint(const char *, void *, const parser &);
bool parse_ulong(const char *, void *, const parser &);
bool parse_size(const char *, void *, const parser &);
bool parse_double(const char *, void *, const parser &);
bool parse_bool(const char *, void *, const parser &);
bool parse_ternary(const char *, void *, const parser &);
bool parse_on_off_auto(const char *, void *, const parser &);
bool parse_enum(const char *, void *, const parser &);
bool parse_bitmap(const char *, void *, const parser &);
bool parse_string(const char *, void *, const parser &);
bool parse_string_list(const char *, void *, const parser &);
bool parse_allow_list(const char *, void *, const parser &);
bool parse_time(const char *, void *, const parser &);
bool parse_bw(const char *, void *, const parser &);

std::string print_int(const void *, const parser &);
std::string print_uint(const void *, const parser &);
std::string print_ulong(const void *, const parser &);
std::string print_size(const void *, const parser &);
std::string print_double(const void *, const parser &);
std::string print_bool(const void *, const parser &);
std::string print_ternary(const void *, const parser &);
std::string print_on_off_auto(const void *, const parser &);
std::string print_enum(const void *, const parser &);
std::string print_bitmap(const void *, const parser &);
std::string print_string(const void *, const parser &);
std::string print_string_list(const void *, const parser &);
std::string print_allow_list(const void *, const parser &);
std::string print_time(const void *, const parser &);
std::string print_bw(const void *, const parser &);

ucs_status_t clone_plain(const void *, void *, const parser &);
ucs_status_t clone_string(const void *, void *, const parser &);
ucs_status_t clone_string_list(const void *, void *, const parser &);
ucs_status_t clone_allow_list(const void *, void *, const parser &);

void release_plain(void *, const parser &);
void release_string(void *, const parser &);
void release_string_list(void *, const parser &);
void release_allow_list(void *, const parser &);

std::string syntax_int(const parser &);
std::string syntax_uint(const parser &);
std::string syntax_ulong(const parser &);
std::string syntax_size(const parser &);
std::string syntax_double(const parser &);
std::string syntax_bool(const parser &);
std::string syntax_ternary(const parser &);
std::string syntax_on_off_auto(const parser &);
std::string syntax_enum(const parser &);
std::string syntax_bitmap(const parser &);
std::string syntax_string(const parser &);
std::string syntax_string_list(const parser &);
std::string syntax_allow_list(const parser &);
std::string syntax_time(const parser &);
std::string syntax_bw(const parser &);

/* Number of entries of a NULL-terminated name list. */
constexpr size_t count_names(const char *const *names)
{
    size_t count = 0;
    while (names[count] != nullptr) {
        ++count;
    }
    return count;
}

} // namespace detail

#define UCS_CONFIG_PLAIN_TYPE_(_kind, _ctype) \
    parser \
    { \
        detail::parse_##_kind, detail::print_##_kind, detail::clone_plain, detail::release_plain, \
            detail::syntax_##_kind, nullptr, 0, sizeof(_ctype), nullptr \
    }

// clang-format off
inline constexpr parser type_int          = UCS_CONFIG_PLAIN_TYPE_(int, int);
inline constexpr parser type_uint         = UCS_CONFIG_PLAIN_TYPE_(uint, unsigned);
inline constexpr parser type_ulong        = UCS_CONFIG_PLAIN_TYPE_(ulong, unsigned long);
inline constexpr parser type_size         = UCS_CONFIG_PLAIN_TYPE_(size, size_t);
inline constexpr parser type_double       = UCS_CONFIG_PLAIN_TYPE_(double, double);
inline constexpr parser type_bool         = UCS_CONFIG_PLAIN_TYPE_(bool, int);
inline constexpr parser type_ternary      = UCS_CONFIG_PLAIN_TYPE_(ternary,
                                                                   ucs_ternary_auto_value_t);
inline constexpr parser type_on_off_auto  = UCS_CONFIG_PLAIN_TYPE_(on_off_auto,
                                                                   ucs_on_off_auto_value_t);
inline constexpr parser type_time         = UCS_CONFIG_PLAIN_TYPE_(time, double);
inline constexpr parser type_bw           = UCS_CONFIG_PLAIN_TYPE_(bw, double);

#undef UCS_CONFIG_PLAIN_TYPE_

inline constexpr parser type_string{
    detail::parse_string, detail::print_string, detail::clone_string,
    detail::release_string, detail::syntax_string, nullptr, 0, sizeof(char*),
    nullptr};

inline constexpr parser type_string_list{
    detail::parse_string_list, detail::print_string_list,
    detail::clone_string_list, detail::release_string_list,
    detail::syntax_string_list, nullptr, 0, sizeof(ucs_config_names_array_t),
    nullptr};

inline constexpr parser type_allow_list{
    detail::parse_allow_list, detail::print_allow_list,
    detail::clone_allow_list, detail::release_allow_list,
    detail::syntax_allow_list, nullptr, 0, sizeof(ucs_config_allow_list_t),
    nullptr};
// clang-format on

/* An enum stored as an unsigned index into names (a fixed-size array). */
template <size_t N>
constexpr parser type_enum(const char *const (&names)[N])
{
    return parser{detail::parse_enum,
                  detail::print_enum,
                  detail::clone_plain,
                  detail::release_plain,
                  detail::syntax_enum,
                  names,
                  N,
                  sizeof(unsigned),
                  nullptr};
}

/* A set of names stored as an unsigned bit mask (at most 32 names). */
template <size_t N>
constexpr parser type_bitmap(const char *const (&names)[N])
{
    static_assert(N <= 32);
    return parser{detail::parse_bitmap,
                  detail::print_bitmap,
                  detail::clone_plain,
                  detail::release_plain,
                  detail::syntax_bitmap,
                  names,
                  N,
                  sizeof(unsigned),
                  nullptr};
}

/* The same for a NULL-terminated name list (UCX style). */
constexpr parser type_enum_list(const char *const *names)
{
    return parser{detail::parse_enum,         detail::print_enum,  detail::clone_plain,
                  detail::release_plain,      detail::syntax_enum, names,
                  detail::count_names(names), sizeof(unsigned),    nullptr};
}

/*
 * A nested table: the field's member is the sub-table's struct, and its
 * variables are named <field name><sub field name>, e.g. a field "RNDV_"
 * embedding a table with "THRESH" reads UCX_RNDV_THRESH. An empty field name
 * embeds the sub-table's fields as they are (a "base class" of settings).
 * The member size is not checked at compile time for sub-tables.
 */
constexpr parser type_table(const table &sub)
{
    /* The engine flattens sub-tables into their leaf fields, so the
     * functions are never called. */
    return parser{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0, &sub};
}

} // namespace ucs::config

#endif
