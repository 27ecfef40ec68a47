/*
 * Helpers shared by the parser implementations (not installed, not public).
 */
#ifndef UCS_CONFIG_PARSER_UTIL_H
#define UCS_CONFIG_PARSER_UTIL_H

#include <cstring>
#include <string>
#include <string_view>
#include <vector>
#include <strings.h>

namespace ucs::config::detail {

/* Members are written through memcpy: the struct's member type may be an
 * enum or an int of the same size as the parser's value type. */
template <typename T>
inline void store(void *dest, const T &value)
{
    std::memcpy(dest, &value, sizeof(value));
}

template <typename T>
inline T load(const void *src)
{
    T value;
    std::memcpy(&value, src, sizeof(value));
    return value;
}

inline bool is_space(char c)
{
    return (c == ' ') || (c == '\t') || (c == '\n') || (c == '\r') || (c == '\f') || (c == '\v');
}

inline std::string_view trim(std::string_view text)
{
    while (!text.empty() && is_space(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && is_space(text.back())) {
        text.remove_suffix(1);
    }
    return text;
}

inline bool iequals(std::string_view a, std::string_view b)
{
    return (a.size() == b.size()) &&
           (a.empty() || (strncasecmp(a.data(), b.data(), a.size()) == 0));
}

/* "a,b,c" -> items (each trimmed); "" -> none; false for an empty item
 * ("a,,b", "a,"). The items point into text. */
bool split_list(std::string_view text, std::vector<std::string_view> &items);

/* Shortest "%g" text that reads back as the same double. */
std::string format_double(double value);

/* Parses a decimal floating-point number covering all of text. */
bool parse_double_text(std::string_view text, double &value);

} // namespace ucs::config::detail

#endif
