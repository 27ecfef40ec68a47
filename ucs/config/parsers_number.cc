/*
 * Numeric value types: integers, sizes with units, doubles, time, bandwidth.
 */
#include <ucs/config/parser.h>
#include <ucs/config/parser_util.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <type_traits>

namespace ucs::config::detail {

namespace {

/* A whole-text integer in T's range; no sign for unsigned types. */
template <typename T>
bool parse_integer(const char *text, T &value)
{
    std::string_view view = trim(text);
    if (view.empty() || (view.front() == '+')) {
        return false;
    }
    if (std::is_unsigned_v<T> && (view.front() == '-')) {
        return false; /* from_chars would reject it too; be explicit */
    }
    const char *end = view.data() + view.size();
    auto result     = std::from_chars(view.data(), end, value);
    return (result.ec == std::errc()) && (result.ptr == end);
}

/* Splits "1.5e3ms" into the leading number text and the unit suffix. */
void split_number(std::string_view text, std::string_view &number, std::string_view &unit)
{
    auto is_digit = [&](size_t i) {
        return (i < text.size()) && (text[i] >= '0') && (text[i] <= '9');
    };
    size_t pos = 0;
    if ((pos < text.size()) && (text[pos] == '-')) {
        ++pos;
    }
    while (is_digit(pos) || ((pos < text.size()) && (text[pos] == '.'))) {
        ++pos;
    }
    /* An exponent only when digits follow: "2e3" but not "2ms". */
    if ((pos < text.size()) && ((text[pos] == 'e') || (text[pos] == 'E'))) {
        size_t exp = pos + 1;
        if ((exp < text.size()) && ((text[exp] == '-') || (text[exp] == '+'))) {
            ++exp;
        }
        if (is_digit(exp)) {
            pos = exp;
            while (is_digit(pos)) {
                ++pos;
            }
        }
    }
    number = text.substr(0, pos);
    unit   = text.substr(pos);
}

struct unit_scale {
    const char *suffix;
    double scale;
};

} // namespace

std::string format_double(double value)
{
    char buf[64];
    for (int precision = 15; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
        double back;
        if (parse_double_text(buf, back) && (back == value)) {
            break;
        }
    }
    return buf;
}

bool parse_double_text(std::string_view text, double &value)
{
    text = trim(text);
    if (text.empty() || (text.front() == '+')) {
        return false;
    }
    const char *end = text.data() + text.size();
    auto result     = std::from_chars(text.data(), end, value);
    return (result.ec == std::errc()) && (result.ptr == end) && !std::isnan(value);
}

/* int */

bool parse_int(const char *text, void *dest, const parser &)
{
    int value;
    if (!parse_integer(text, value)) {
        return false;
    }
    store(dest, value);
    return true;
}

std::string print_int(const void *src, const parser &)
{
    return std::to_string(load<int>(src));
}

std::string syntax_int(const parser &)
{
    return "integer";
}

/* unsigned */

bool parse_uint(const char *text, void *dest, const parser &)
{
    unsigned value;
    if (!parse_integer(text, value)) {
        return false;
    }
    store(dest, value);
    return true;
}

std::string print_uint(const void *src, const parser &)
{
    return std::to_string(load<unsigned>(src));
}

std::string syntax_uint(const parser &)
{
    return "unsigned integer";
}

/* unsigned long with "inf" and "auto" */

bool parse_ulong(const char *text, void *dest, const parser &)
{
    std::string_view view = trim(text);
    unsigned long value;
    if (iequals(view, "inf")) {
        value = ulong_inf;
    } else if (iequals(view, "auto")) {
        value = ulong_auto;
    } else if (!parse_integer(text, value) || (value >= ulong_auto)) {
        return false;
    }
    store(dest, value);
    return true;
}

std::string print_ulong(const void *src, const parser &)
{
    unsigned long value = load<unsigned long>(src);
    if (value == ulong_inf) {
        return "inf";
    } else if (value == ulong_auto) {
        return "auto";
    }
    return std::to_string(value);
}

std::string syntax_ulong(const parser &)
{
    return "unsigned long: <number>, \"inf\", or \"auto\"";
}

/* size_t with binary units */

namespace {

const struct {
    char letter;
    size_t scale;
} size_units[] = {
    {'t', size_t(1) << 40},
    {'g', size_t(1) << 30},
    {'m', size_t(1) << 20},
    {'k', size_t(1) << 10},
};

} // namespace

bool parse_size(const char *text, void *dest, const parser &)
{
    std::string_view view = trim(text);
    size_t value;
    if (iequals(view, "inf")) {
        value = size_inf;
    } else if (iequals(view, "auto")) {
        value = size_auto;
    } else {
        std::string_view number, unit;
        split_number(view, number, unit);
        unsigned long long count;
        if (number.empty() || (number.find_first_of(".-+eE") != number.npos) ||
            !parse_integer(std::string(number).c_str(), count)) {
            return false;
        }

        /* Accepted units: "", "b", "k", "kb", ... in any case. */
        size_t scale = 1;
        if (!unit.empty() && !iequals(unit, "b")) {
            scale = 0;
            for (const auto &u : size_units) {
                if ((std::tolower(static_cast<unsigned char>(unit[0])) == u.letter) &&
                    ((unit.size() == 1) ||
                     ((unit.size() == 2) &&
                      (std::tolower(static_cast<unsigned char>(unit[1])) == 'b')))) {
                    scale = u.scale;
                }
            }
            if (scale == 0) {
                return false;
            }
        }
        if (__builtin_mul_overflow(count, scale, &value) || (value >= size_auto)) {
            return false;
        }
    }
    store(dest, value);
    return true;
}

std::string print_size(const void *src, const parser &)
{
    size_t value = load<size_t>(src);
    if (value == size_inf) {
        return "inf";
    } else if (value == size_auto) {
        return "auto";
    }
    if (value != 0) {
        for (const auto &u : size_units) {
            if ((value % u.scale) == 0) {
                return std::to_string(value / u.scale) + static_cast<char>(std::toupper(u.letter));
            }
        }
    }
    return std::to_string(value);
}

std::string syntax_size(const parser &)
{
    return "memory units: <number>[b|kb|mb|gb|tb], \"inf\", or \"auto\"";
}

/* double */

bool parse_double(const char *text, void *dest, const parser &)
{
    double value;
    if (!parse_double_text(text, value)) {
        return false;
    }
    store(dest, value);
    return true;
}

std::string print_double(const void *src, const parser &)
{
    return format_double(load<double>(src));
}

std::string syntax_double(const parser &)
{
    return "floating point number";
}

/* time in seconds */

namespace {

/* Divisors rather than factors: 10/1e6 is the correctly rounded 1e-5. */
const unit_scale time_units[] = {
    {"s", 1.0},
    {"ms", 1e3},
    {"us", 1e6},
    {"ns", 1e9},
};

} // namespace

bool parse_time(const char *text, void *dest, const parser &)
{
    std::string_view view = trim(text);
    double value;
    if (iequals(view, "inf")) {
        value = time_inf;
    } else if (iequals(view, "auto")) {
        value = time_auto;
    } else {
        std::string_view number, unit;
        split_number(view, number, unit);
        double count;
        if (!parse_double_text(number, count) || !std::isfinite(count) || (count < 0)) {
            return false;
        }
        double divisor = unit.empty() ? 1.0 : 0.0;
        for (const auto &u : time_units) {
            if (iequals(unit, u.suffix)) {
                divisor = u.scale;
            }
        }
        if (divisor == 0.0) {
            return false;
        }
        value = count / divisor;
    }
    store(dest, value);
    return true;
}

std::string print_time(const void *src, const parser &)
{
    double value = load<double>(src);
    if (value == time_inf) {
        return "inf";
    } else if (value == time_auto) {
        return "auto";
    }

    /* The largest unit that keeps the number at least 1; 12 digits hide the
     * rounding of the scaling, so "10us" prints back as "10us". */
    const unit_scale *unit = &time_units[0];
    if (value > 0) {
        for (const auto &u : time_units) {
            unit = &u;
            if (value * u.scale >= 1.0) {
                break;
            }
        }
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.12g%s", value * unit->scale, unit->suffix);
    return buf;
}

std::string syntax_time(const parser &)
{
    return "time value: <number>[s|ms|us|ns], \"inf\", or \"auto\"";
}

/* bandwidth in bytes per second */

namespace {

const struct {
    char letter;
    double scale;
} bw_units[] = {
    {'T', 1099511627776.0},
    {'G', 1073741824.0},
    {'M', 1048576.0},
    {'K', 1024.0},
};

} // namespace

bool parse_bw(const char *text, void *dest, const parser &)
{
    std::string_view view = trim(text);
    double value;
    if (iequals(view, "auto")) {
        value = bw_auto;
    } else {
        std::string_view number, unit;
        split_number(view, number, unit);
        double count;
        if (!parse_double_text(number, count) || !std::isfinite(count) || (count < 0)) {
            return false;
        }

        /* [T|G|M|K] then B (bytes) or b (bits), then optional s, ps or /s. */
        double scale = 1.0;
        if (!unit.empty()) {
            for (const auto &u : bw_units) {
                if (std::toupper(static_cast<unsigned char>(unit[0])) == u.letter) {
                    scale = u.scale;
                    unit.remove_prefix(1);
                    break;
                }
            }
            if (unit.empty()) {
                return false; /* "100M": bytes or bits? */
            } else if (unit[0] == 'b') {
                scale /= 8;
            } else if (unit[0] != 'B') {
                return false;
            }
            unit.remove_prefix(1);
            if (!unit.empty() && !iequals(unit, "s") && !iequals(unit, "ps") &&
                !iequals(unit, "/s")) {
                return false;
            }
        }
        value = count * scale;
    }
    store(dest, value);
    return true;
}

std::string print_bw(const void *src, const parser &)
{
    double value = load<double>(src);
    if (value == bw_auto) {
        return "auto";
    }
    /* Dividing by a power of two is exact, so the text reads back the same. */
    for (const auto &u : bw_units) {
        if (value >= u.scale) {
            return format_double(value / u.scale) + u.letter + "Bs";
        }
    }
    return format_double(value) + "Bs";
}

std::string syntax_bw(const parser &)
{
    return "bandwidth value: <number>[T|G|M|K]B|b[[p|/]s] or \"auto\"";
}

} // namespace ucs::config::detail
