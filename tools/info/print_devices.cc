#include "print_devices.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace info {

namespace {

std::string size_text(size_t size)
{
    if (size == SIZE_MAX) {
        return "unlimited";
    }
    const char *units[] = {"", "K", "M", "G", "T"};
    unsigned u          = 0;
    while ((u < 4) && (size >= 1024) && (size % 1024 == 0)) {
        size /= 1024;
        ++u;
    }
    return std::to_string(size) + units[u];
}

const char *type_text(uct::device_type type)
{
    switch (type) {
    case uct::device_type::NET:
        return "network";
    case uct::device_type::SHM:
        return "intra-node";
    case uct::device_type::ACC:
        return "accelerator";
    case uct::device_type::SELF:
        return "loopback";
    }
    return "unknown";
}

void print_limit(FILE *out, const char *name, uint64_t flags, uint64_t flag, size_t limit,
                 size_t max_iov = 0)
{
    if (!(flags & flag)) {
        return;
    }
    std::fprintf(out, "#         %12s: <= %s", name, size_text(limit).c_str());
    if (max_iov != 0) {
        std::fprintf(out, ", up to %zu iov", max_iov);
    }
    std::fprintf(out, "\n");
}

void print_atomics(FILE *out, const uct::iface_attr &attr)
{
    static const char *names[] = {"add", "and", "or", "xor", "swap", "cswap"};
    for (unsigned op = 0; op < unsigned(uct::atomic_op::LAST); ++op) {
        uint64_t bit = 1ull << op;
        bool post32 = attr.atomic32_post & bit, post64 = attr.atomic64_post & bit;
        bool fetch32 = attr.atomic32_fetch & bit, fetch64 = attr.atomic64_fetch & bit;
        if (post32 || post64) {
            std::fprintf(out, "#         %12s: %s%s%s bit\n",
                         (std::string("atomic_") + names[op]).c_str(), post32 ? "32" : "",
                         (post32 && post64) ? ", " : "", post64 ? "64" : "");
        }
        if (fetch32 || fetch64) {
            std::fprintf(out, "#         %12s: %s%s%s bit\n",
                         (std::string("atomic_f") + names[op]).c_str(), fetch32 ? "32" : "",
                         (fetch32 && fetch64) ? ", " : "", fetch64 ? "64" : "");
        }
    }
}

void print_iface(FILE *out, const uct::tl_resource &tl, const uct::iface_attr &attr)
{
    using namespace uct::iface_flag;
    std::fprintf(out, "#\n#      Transport: %s\n", tl.tl_name);
    std::fprintf(out, "#         Device: %s\n", tl.dev_name);
    std::fprintf(out, "#           Type: %s\n#\n", type_text(tl.type));
    std::fprintf(out, "#      capabilities:\n");
    std::fprintf(out, "#            bandwidth: %.2f MB/sec\n", attr.perf.bandwidth_Bps / 1e6);
    std::fprintf(out, "#              latency: %.0f nsec\n", attr.perf.latency_s * 1e9);
    std::fprintf(out, "#             overhead: %.0f nsec\n", attr.perf.send_overhead_s * 1e9);
    print_limit(out, "put_short", attr.flags, PUT_SHORT, attr.put.max_short);
    print_limit(out, "put_bcopy", attr.flags, PUT_BCOPY, attr.put.max_bcopy);
    print_limit(out, "put_zcopy", attr.flags, PUT_ZCOPY, attr.put.max_zcopy, attr.put.max_iov);
    print_limit(out, "get_short", attr.flags, GET_SHORT, attr.get.max_short);
    print_limit(out, "get_bcopy", attr.flags, GET_BCOPY, attr.get.max_bcopy);
    print_limit(out, "get_zcopy", attr.flags, GET_ZCOPY, attr.get.max_zcopy, attr.get.max_iov);
    print_limit(out, "am_short", attr.flags, AM_SHORT, attr.am.max_short);
    print_limit(out, "am_bcopy", attr.flags, AM_BCOPY, attr.am.max_bcopy);
    print_limit(out, "am_zcopy", attr.flags, AM_ZCOPY, attr.am.max_zcopy, attr.am.max_iov);
    if (attr.flags & AM_ZCOPY) {
        std::fprintf(out, "#            am header: <= %zu\n", attr.am.max_hdr);
    }
    if (attr.flags & (ATOMIC_CPU | ATOMIC_DEVICE)) {
        std::fprintf(out, "#               domain: %s\n",
                     (attr.flags & ATOMIC_CPU) ? "cpu" : "device");
    }
    print_atomics(out, attr);
    std::fprintf(out, "#           connection: %s%s%s\n",
                 (attr.flags & CONNECT_TO_IFACE) ? "to iface" : "",
                 ((attr.flags & CONNECT_TO_IFACE) && (attr.flags & CONNECT_TO_EP)) ? ", " : "",
                 (attr.flags & CONNECT_TO_EP) ? "to ep" : "");
    if (attr.max_num_eps == SIZE_MAX) {
        std::fprintf(out, "#              max eps: inf\n");
    } else {
        std::fprintf(out, "#              max eps: %zu\n", attr.max_num_eps);
    }
    std::fprintf(out, "#       device address: %zu bytes\n", attr.device_addr_len);
    std::fprintf(out, "#        iface address: %zu bytes\n", attr.iface_addr_len);
    if (attr.flags & CONNECT_TO_EP) {
        std::fprintf(out, "#           ep address: %zu bytes\n", attr.ep_addr_len);
    }
    std::fprintf(out, "#       error handling: %s\n",
                 (attr.flags & ERRHANDLE_PEER_FAILURE) ? "peer failure" : "none");
    std::fprintf(out, "#       wakeup events: %s\n",
                 (attr.event_flags & uct::event_flag::FD) ? "fd" : "none");
}

void print_md(FILE *out, const char *md_name, const char *component, const uct::md_attr &mattr)
{
    std::fprintf(out, "#\n# Memory domain: %s\n", md_name);
    std::fprintf(out, "#     Component: %s\n", component);
    if (mattr.flags & uct::md_flag::ALLOC) {
        std::fprintf(out, "#             allocate: %s\n", size_text(mattr.max_alloc).c_str());
    }
    if (mattr.flags & uct::md_flag::REG) {
        std::fprintf(out, "#             register: %s, cost: %.0f nsec\n",
                     size_text(mattr.max_reg).c_str(), mattr.reg_overhead_s * 1e9);
    }
    std::fprintf(out, "#           remote key: %zu bytes\n", mattr.rkey_packed_size);
    if (mattr.flags & uct::md_flag::RKEY_PTR) {
        std::fprintf(out, "#           rkey_ptr is supported\n");
    }
}

} // namespace

unsigned print_devices(FILE *out, const std::string &tl_filter)
{
    unsigned count = 0;
    std::string names; /* every transport seen, for the -t error */
    uct::worker worker(nullptr, UCS_THREAD_MODE_SINGLE);

    for (uct::component *comp : uct::components()) {
        std::vector<uct::md_resource> mds;
        if (comp->query_md_resources(&mds) != UCS_OK) {
            continue;
        }
        for (const auto &mdr : mds) {
            uct::md *raw_md = nullptr;
            if (comp->md_open(mdr.md_name, &raw_md) != UCS_OK) {
                if (tl_filter.empty()) {
                    std::fprintf(out, "# < failed to open memory domain %s >\n", mdr.md_name);
                }
                continue;
            }
            std::unique_ptr<uct::md> md(raw_md);
            std::vector<uct::tl_resource> tls;
            if (md->query_tl_resources(&tls) != UCS_OK) {
                tls.clear();
            }
            for (const auto &tl : tls) {
                if (names.find(std::string(" ") + tl.tl_name + ",") == std::string::npos) {
                    names += std::string(" ") + tl.tl_name + ",";
                }
            }
            /* -t: only the memory domains that carry that transport. */
            std::erase_if(tls, [&](const uct::tl_resource &tl) {
                return !tl_filter.empty() && (tl_filter != tl.tl_name);
            });
            if (!tl_filter.empty() && tls.empty()) {
                continue;
            }
            print_md(out, mdr.md_name, comp->name(), md->attr());
            if (tls.empty()) {
                std::fprintf(out, "#   < no supported devices found >\n");
                continue;
            }
            for (const auto &tl : tls) {
                uct::iface_params params;
                params.tl_name        = tl.tl_name;
                params.dev_name       = tl.dev_name;
                uct::iface *raw_iface = nullptr;
                ucs_status_t status   = md->iface_open(worker, params, &raw_iface);
                if (status != UCS_OK) {
                    std::fprintf(out,
                                 "#\n#      Transport: %s\n#         Device: %s\n"
                                 "#   < failed to open interface: %s >\n",
                                 tl.tl_name, tl.dev_name, ucs_status_string(status));
                    continue;
                }
                std::unique_ptr<uct::iface> iface(raw_iface);
                print_iface(out, tl, iface->attr());
                ++count;
            }
        }
    }
    if ((count == 0) && !tl_filter.empty()) {
        if (!names.empty()) {
            names.pop_back();
        }
        std::fprintf(stderr, "ucx_info: no transport '%s' here (transports:%s)\n",
                     tl_filter.c_str(), names.c_str());
    } else if (count == 0) {
        std::fprintf(out, "#\n# No transports found\n#\n");
    }
    return count;
}

} // namespace info
