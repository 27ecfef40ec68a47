/*
 * Maps a pointer to an embedded member back to its enclosing object, using a
 * pointer-to-member so intrusive containers stay type-safe (no macro, no
 * string member names). Internal C++ header.
 */
#ifndef UCS_DATASTRUCT_MEMBER_OFFSET_H
#define UCS_DATASTRUCT_MEMBER_OFFSET_H

#include <cstddef>
#include <cstdint>

namespace ucs {

/*
 * Byte offset of a data member. Computed on a fake, suitably aligned address
 * (never dereferenced) because offsetof() rejects non-standard-layout types;
 * the compiler folds it to a constant.
 */
template <typename Owner, typename Member>
inline std::ptrdiff_t member_offset(Member Owner::*member) noexcept
{
    constexpr std::uintptr_t fake_address = 4096 * alignof(Owner);
    const auto *owner                     = reinterpret_cast<const Owner *>(fake_address);
    return reinterpret_cast<const char *>(&(owner->*member)) -
           reinterpret_cast<const char *>(owner);
}

/* The object that contains *field as its member `member`. */
template <typename Owner, typename Member>
inline Owner *owner_of(Member *field, Member Owner::*member) noexcept
{
    return reinterpret_cast<Owner *>(reinterpret_cast<char *>(field) - member_offset(member));
}

template <typename Owner, typename Member>
inline const Owner *owner_of(const Member *field, Member Owner::*member) noexcept
{
    return reinterpret_cast<const Owner *>(reinterpret_cast<const char *>(field) -
                                           member_offset(member));
}

} // namespace ucs

#endif
