#include "am_sink.h"

#include <algorithm>
#include <cstring>

namespace test::conform {

namespace {

template <typename T>
void put_raw(std::vector<uint8_t> *out, const T &value)
{
    const auto *p = reinterpret_cast<const uint8_t *>(&value);
    out->insert(out->end(), p, p + sizeof(value));
}

template <typename T>
bool get_raw(const std::vector<uint8_t> &blob, size_t *pos, T *value)
{
    if (blob.size() - *pos < sizeof(T)) {
        return false;
    }
    std::memcpy(value, blob.data() + *pos, sizeof(T));
    *pos += sizeof(T);
    return true;
}

} // namespace

void serialize(const std::vector<am_record> &records, std::vector<uint8_t> *out)
{
    out->clear();
    put_raw(out, uint64_t(records.size()));
    for (const am_record &r : records) {
        put_raw(out, r.flags);
        put_raw(out, r.length);
        put_raw(out, uint64_t(r.bytes.size()));
        out->insert(out->end(), r.bytes.begin(), r.bytes.end());
    }
}

bool deserialize(const std::vector<uint8_t> &blob, std::vector<am_record> *out)
{
    size_t pos = 0;
    uint64_t count;
    if (!get_raw(blob, &pos, &count)) {
        return false;
    }
    out->clear();
    for (uint64_t i = 0; i < count; ++i) {
        am_record r;
        uint64_t n;
        if (!get_raw(blob, &pos, &r.flags) || !get_raw(blob, &pos, &r.length) ||
            !get_raw(blob, &pos, &n) || (blob.size() - pos < n)) {
            return false;
        }
        r.bytes.assign(blob.begin() + long(pos), blob.begin() + long(pos + n));
        pos += n;
        out->push_back(std::move(r));
    }
    return pos == blob.size();
}

am_sink::am_sink(uct::iface &iface) : iface_(iface)
{
    iface_.set_am_handler(AM_ID, on_am, this, 0);
}

am_sink::~am_sink()
{
    release_kept();
    iface_.set_am_handler(AM_ID, nullptr, nullptr, 0);
}

ucs_status_t am_sink::on_am(void *arg, void *data, size_t length, unsigned flags)
{
    auto *self = static_cast<am_sink *>(arg);
    am_record r;
    r.flags  = flags;
    r.length = length;
    if (length != 0) {
        const auto *p = static_cast<const uint8_t *>(data);
        r.bytes.assign(p, p + length);
    }
    if (flags & uct::am_cb_flag::DESC) {
        /* The headroom is ours to write in front of a descriptor. */
        std::memset(static_cast<uint8_t *>(data) - RX_HEADROOM, 0x5c, RX_HEADROOM);
        if ((length != 0) && (std::memcmp(data, r.bytes.data(), length) != 0)) {
            ++self->headroom_violations_;
        }
    }
    const bool keep = self->keep_ && (flags & uct::am_cb_flag::DESC);
    if (keep) {
        self->kept_.push_back({data, r.bytes});
    }
    self->records_.push_back(std::move(r));
    return keep ? UCS_INPROGRESS : UCS_OK;
}

std::vector<am_record> am_sink::take(size_t max_bytes)
{
    std::vector<am_record> out;
    out.swap(records_);
    for (am_record &r : out) {
        if (r.bytes.size() > max_bytes) {
            r.bytes.resize(max_bytes);
        }
    }
    return out;
}

kept_report am_sink::release_kept()
{
    kept_report report;
    report.kept                = kept_.size();
    report.headroom_violations = headroom_violations_;
    for (const kept_desc &k : kept_) {
        if (k.copy.empty() || (std::memcmp(k.data, k.copy.data(), k.copy.size()) == 0)) {
            ++report.intact;
        }
        iface_.release_am_desc(k.data);
    }
    kept_.clear();
    headroom_violations_ = 0;
    return report;
}

} // namespace test::conform
