/*
 * Memory for the conformance suite: a region exposed through an md (memory
 * it registers, or memory it allocates when it cannot register: posix and
 * sysv), a remote key unpacked and released by a component, and the byte
 * patterns the tests write and compare.
 */
#ifndef TESTS_UCT_CONFORM_CONFORM_MEMORY_H
#define TESTS_UCT_CONFORM_CONFORM_MEMORY_H

#include <uct/base/uct_md.h>

#include <cstdint>
#include <string>
#include <vector>

namespace test::conform {

/* Byte `index` of the pattern named by `seed`: not periodic, differs per seed. */
uint8_t pattern_byte(uint64_t seed, size_t index);
std::vector<uint8_t> pattern(size_t length, uint64_t seed);

/* "" when `got` equals `want`, else where they first differ: compare with
 * CHECK(differ(a, b) == "") so a failure prints a line, not the bytes. */
std::string differ(const std::vector<uint8_t> &got, const std::vector<uint8_t> &want);

class exposed_memory {
public:
    exposed_memory() = default;
    ~exposed_memory();
    exposed_memory(const exposed_memory &)            = delete;
    exposed_memory &operator=(const exposed_memory &) = delete;

    /* At least `length` bytes, registered or allocated (length() may be
     * larger: page rounding); false with why() when the md can do neither. */
    bool open(uct::md &md, size_t length);
    const std::string &why() const { return why_; }

    uint8_t *data() const { return static_cast<uint8_t *>(address_); }
    size_t length() const { return length_; }
    uint64_t address() const { return reinterpret_cast<uintptr_t>(address_); }
    uct::mem_h memh() const { return memh_; }

    /* The md's packed key for the region (rkey_packed_size bytes). */
    bool pack(std::vector<uint8_t> *key) const;

private:
    uct::md *md_     = nullptr;
    uct::mem_h memh_ = uct::MEM_HANDLE_NULL;
    void *address_   = nullptr;
    size_t length_   = 0;
    bool allocated_  = false; /* md.mem_alloc, else our buffer + mem_reg */
    std::string why_;
};

/* A remote key unpacked by `component`, released when it goes. */
class unpacked_key {
public:
    explicit unpacked_key(uct::component &component) : component_(component) {}
    ~unpacked_key();
    unpacked_key(const unpacked_key &)            = delete;
    unpacked_key &operator=(const unpacked_key &) = delete;

    ucs_status_t unpack(const std::vector<uint8_t> &packed);
    void release();
    uct::rkey_t rkey() const { return bundle_.rkey; }
    const uct::rkey_bundle &bundle() const { return bundle_; }

private:
    uct::component &component_;
    uct::rkey_bundle bundle_;
    bool held_ = false;
};

} // namespace test::conform

#endif
