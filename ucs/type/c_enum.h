/*
 * The value a C caller stored in an enum: read as an integer. C may store
 * any int in an enum object or pass any int as an enum argument, and
 * loading an out-of-range value as the C++ enum type is undefined (UBSan
 * reports it), so public entry points validate the integer instead.
 */
#ifndef UCS_TYPE_C_ENUM_H
#define UCS_TYPE_C_ENUM_H

#include <cstring>

namespace ucs {

template <typename Enum>
int raw_enum(const Enum &field)
{
    static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized here");
    int value;
    std::memcpy(&value, &field, sizeof(value));
    return value;
}

} // namespace ucs

#endif
