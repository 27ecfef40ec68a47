#include "conform_memory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace test::conform {

uint8_t pattern_byte(uint64_t seed, size_t index)
{
    uint64_t x = (index + 1) * 0x9e3779b97f4a7c15ull ^ (seed * 0xff51afd7ed558ccdull + 1);
    return uint8_t((x >> 56) ^ (x >> 29) ^ (x >> 11));
}

std::vector<uint8_t> pattern(size_t length, uint64_t seed)
{
    std::vector<uint8_t> out(length);
    for (size_t i = 0; i < length; ++i) {
        out[i] = pattern_byte(seed, i);
    }
    return out;
}

std::string differ(const std::vector<uint8_t> &got, const std::vector<uint8_t> &want)
{
    if (got.size() != want.size()) {
        return std::to_string(got.size()) + " bytes instead of " + std::to_string(want.size());
    }
    auto at = std::mismatch(got.begin(), got.end(), want.begin());
    if (at.first == got.end()) {
        return "";
    }
    char line[96];
    std::snprintf(line, sizeof(line), "byte %ld of %zu is 0x%02x instead of 0x%02x",
                  long(at.first - got.begin()), got.size(), unsigned(*at.first),
                  unsigned(*at.second));
    return line;
}

exposed_memory::~exposed_memory()
{
    if (md_ == nullptr) {
        return;
    }
    if (allocated_) {
        md_->mem_free(memh_);
    } else {
        md_->mem_dereg(memh_);
        std::free(address_);
    }
}

bool exposed_memory::open(uct::md &md, size_t length)
{
    const uct::md_attr &attr = md.attr();
    if (attr.flags & uct::md_flag::REG) {
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        size_t rounded    = (length + page - 1) / page * page;
        void *buffer      = std::aligned_alloc(page, rounded);
        if (buffer == nullptr) {
            why_ = "out of memory";
            return false;
        }
        ucs_status_t status = md.mem_reg(buffer, length, 0, &memh_);
        if (status != UCS_OK) {
            std::free(buffer);
            why_ = std::string("mem_reg: ") + ucs_status_string(status);
            return false;
        }
        address_ = buffer;
        length_  = length;
    } else if (attr.flags & uct::md_flag::ALLOC) {
        size_t got          = length;
        void *address       = nullptr;
        ucs_status_t status = md.mem_alloc(&got, &address, 0, &memh_);
        if (status != UCS_OK) {
            why_ = std::string("mem_alloc: ") + ucs_status_string(status);
            return false;
        }
        if ((got < length) || (address == nullptr)) {
            md.mem_free(memh_);
            why_ = "mem_alloc returned less than asked for";
            return false;
        }
        address_   = address;
        length_    = got;
        allocated_ = true;
    } else {
        why_ = "the md can neither register (md_flag::REG) nor allocate (md_flag::ALLOC)";
        return false;
    }
    md_ = &md;
    return true;
}

bool exposed_memory::pack(std::vector<uint8_t> *key) const
{
    key->assign(md_->attr().rkey_packed_size, 0);
    return md_->mkey_pack(memh_, key->data()) == UCS_OK;
}

unpacked_key::~unpacked_key()
{
    release();
}

ucs_status_t unpacked_key::unpack(const std::vector<uint8_t> &packed)
{
    release();
    ucs_status_t status = component_.rkey_unpack(packed.data(), packed.size(), &bundle_);
    held_               = (status == UCS_OK);
    return status;
}

void unpacked_key::release()
{
    if (held_) {
        component_.rkey_release(bundle_);
        held_   = false;
        bundle_ = uct::rkey_bundle{};
    }
}

} // namespace test::conform
