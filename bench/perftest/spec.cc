#include "spec.h"

#include <algorithm>
#include <cstring>

namespace perftest {

namespace {

constexpr uint32_t SPEC_MAGIC = 0x50465431; /* "PFT1" */

bool terminated(const char *text, size_t size)
{
    return std::memchr(text, '\0', size) != nullptr;
}

} // namespace

size_t test_spec::message_size() const
{
    size_t total = 0;
    for (uint32_t i = 0; i < iov_count; ++i) {
        total += sizes[i];
    }
    return total;
}

size_t test_spec::buffer_size() const
{
    if (iov_stride == 0) {
        return message_size();
    }
    return size_t(iov_stride) * (iov_count - 1) + sizes[iov_count - 1];
}

test_spec make_spec(const test_info *test)
{
    test_spec spec;
    spec.magic     = SPEC_MAGIC;
    spec.spec_size = sizeof(test_spec);
    spec.test      = test_index(test);
    spec.window    = test->window;
    return spec;
}

std::vector<uint8_t> pack_spec(const test_spec &spec)
{
    auto *p = reinterpret_cast<const uint8_t *>(&spec);
    return std::vector<uint8_t>(p, p + sizeof(spec));
}

bool unpack_spec(const std::vector<uint8_t> &blob, test_spec *spec)
{
    if (blob.size() != sizeof(test_spec)) {
        return false;
    }
    std::memcpy(static_cast<void *>(spec), blob.data(), sizeof(test_spec));
    return (spec->magic == SPEC_MAGIC) && (spec->spec_size == sizeof(test_spec)) &&
           (test_by_index(spec->test) != nullptr) && (spec->iov_count >= 1) &&
           (spec->iov_count <= MAX_IOV) && (spec->iters >= 1) && (spec->window >= 1) &&
           (unsigned(spec->send_layout) <= 1) && (unsigned(spec->recv_layout) <= 1) &&
           (spec->threads >= 1) && (spec->threads <= MAX_THREADS) &&
           terminated(spec->tls, sizeof(spec->tls)) &&
           terminated(spec->uct_tl, sizeof(spec->uct_tl)) &&
           terminated(spec->uct_dev, sizeof(spec->uct_dev)) &&
           (spec->iov_stride == 0 ||
            spec->iov_stride >= *std::max_element(spec->sizes, spec->sizes + spec->iov_count));
}

} // namespace perftest
