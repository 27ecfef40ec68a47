/*
 * Addresses and remote keys come from other processes: every malformed one
 * must be refused with a status, without mapping anything unexpected.
 */
#include <catch2/catch.hpp>

#include "test_mm_util.h"

#include <uct/sm/mm/mm_fifo.h>
#include <uct/sm/mm/mm_iface.h>
#include <ucs/sys/process.h>

#include "two_process.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <dirent.h>
#include <fcntl.h>
#include <sys/shm.h>
#include <unistd.h>

namespace {

using uct::mm::iface_address;

iface_address decode(const test::uct_addresses &addr)
{
    iface_address a;
    REQUIRE(addr.iface.size() == sizeof(a));
    std::memcpy(&a, addr.iface.data(), sizeof(a));
    return a;
}

test::uct_addresses with_iface(const test::uct_addresses &base, const iface_address &a)
{
    test::uct_addresses addr = base;
    std::memcpy(addr.iface.data(), &a, sizeof(a));
    return addr;
}

ucs_status_t try_connect(test::mm_entity &e, const test::uct_addresses &addr)
{
    ucs_status_t status = UCS_OK;
    uct::ep *ep         = e.connect(addr, &status);
    if (ep != nullptr) {
        e.destroy_ep(ep);
    }
    return status;
}

/* A segment of ours that is not a FIFO: the md's zero-filled allocation. */
uint64_t find_other_segment(const char *tl, uint64_t fifo_id)
{
    if (std::string(tl) == "posix") {
        DIR *dir       = opendir("/proc/self/fd");
        uint64_t found = UINT64_MAX;
        while (dirent *d = readdir(dir)) {
            char link[300], target[256];
            std::snprintf(link, sizeof(link), "/proc/self/fd/%s", d->d_name);
            ssize_t n = readlink(link, target, sizeof(target) - 1);
            if (n <= 0) {
                continue;
            }
            target[n]   = '\0';
            uint64_t fd = std::strtoull(d->d_name, nullptr, 10);
            if ((std::strstr(target, "ucx-ng-mm") != nullptr) && (fd != fifo_id) &&
                (found == UINT64_MAX || fd > found)) {
                found = fd;
            }
        }
        closedir(dir);
        return found;
    }
    for (const auto &seg : test::sysv_segments_of({getpid()})) {
        if (uint64_t(seg.shmid) != fifo_id) {
            return uint64_t(seg.shmid);
        }
    }
    return UINT64_MAX;
}

void malformed_addresses(const char *tl)
{
    test::mm_entity e(tl);
    REQUIRE(e.ok());
    const test::uct_addresses good = e.addresses();
    const iface_address a          = decode(good);

    /* The real thing works (an iface may reach itself). */
    CHECK(e.iface().is_reachable(good.device.data(), good.device.size(), good.iface.data(),
                                 good.iface.size()));
    CHECK(try_connect(e, good) == UCS_OK);

    /* Wrong lengths. */
    test::uct_addresses bad = good;
    bad.device.pop_back();
    CHECK_FALSE(e.iface().is_reachable(bad.device.data(), bad.device.size(), bad.iface.data(),
                                       bad.iface.size()));
    CHECK(try_connect(e, bad) == UCS_ERR_INVALID_ADDR);
    bad = good;
    bad.iface.resize(bad.iface.size() - 1);
    CHECK_FALSE(e.iface().is_reachable(bad.device.data(), bad.device.size(), bad.iface.data(),
                                       bad.iface.size()));
    CHECK(try_connect(e, bad) == UCS_ERR_INVALID_ADDR);
    bad = good;
    bad.iface.push_back(0);
    CHECK(try_connect(e, bad) == UCS_ERR_INVALID_ADDR);

    /* Another node. */
    bad = good;
    bad.device[0] ^= 0xff;
    CHECK_FALSE(e.iface().is_reachable(bad.device.data(), bad.device.size(), bad.iface.data(),
                                       bad.iface.size()));
    CHECK(try_connect(e, bad) == UCS_ERR_UNREACHABLE);

    /* No such process, pid 0, absurd pids. */
    iface_address x = a;
    x.owner_pid     = 0;
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_INVALID_ADDR);
    x.owner_pid = 0xffffffffu;
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_INVALID_ADDR);
    {
        test::child_process gone([](int) { return 0; });
        pid_t dead = gone.pid();
        REQUIRE(gone.wait() == 0);
        x           = a;
        x.owner_pid = uint32_t(dead);
        CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_UNREACHABLE);
    }

    /* Segment ids that name nothing, or something that is not a segment. */
    x            = a;
    x.segment_id = 1u << 30;
    CHECK(try_connect(e, with_iface(good, x)) != UCS_OK);
    x.segment_id = UINT64_MAX;
    CHECK(try_connect(e, with_iface(good, x)) != UCS_OK);
    char path[] = "/tmp/ucx-ng-mm-test-XXXXXX";
    int file_fd = mkstemp(path);
    REQUIRE(file_fd >= 0);
    REQUIRE(ftruncate(file_fd, off_t(a.segment_size)) == 0);
    unlink(path);
    x            = a;
    x.segment_id = uint64_t(file_fd); /* a regular file named like ours */
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_UNREACHABLE);
    x.segment_id = 0; /* stdin: never opened */
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_UNREACHABLE);
    close(file_fd);

    /* Sizes: larger than the segment, or too small for the FIFO it holds. */
    x              = a;
    x.segment_size = a.segment_size * 4;
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_UNREACHABLE);
    x.segment_size = uct::mm::FIFO_ELEMS_OFFSET - 1;
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_INVALID_ADDR);
    x.segment_size = uct::mm::FIFO_ELEMS_OFFSET + 64;
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_INVALID_ADDR);
    x.segment_size = UINT64_MAX;
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_INVALID_ADDR);

    /* One of our segments that holds no FIFO header. */
    size_t length   = a.segment_size;
    void *address   = nullptr;
    uct::mem_h memh = nullptr;
    REQUIRE(e.md().mem_alloc(&length, &address, 0, &memh) == UCS_OK);
    x              = a;
    x.segment_id   = find_other_segment(tl, a.segment_id);
    x.segment_size = length;
    REQUIRE(x.segment_id != UINT64_MAX);
    CHECK(try_connect(e, with_iface(good, x)) == UCS_ERR_INVALID_ADDR);
    /* With a FIFO header written in, it connects; with any field of the
     * header lying about the geometry or owner, it does not. */
    const uct::mm::mm_config cfg = uct::mm::default_mm_config();
    uct::mm::fifo_header hdr{};
    hdr.magic        = uct::mm::FIFO_MAGIC;
    hdr.version      = uct::mm::FIFO_VERSION;
    hdr.owner_pid    = uint32_t(getpid());
    hdr.fifo_size    = uint32_t(cfg.fifo_size);
    hdr.elem_size    = uint32_t(cfg.fifo_elem_size);
    hdr.seg_size     = uint32_t(cfg.seg_size);
    hdr.elems_offset = uct::mm::FIFO_ELEMS_OFFSET;
    hdr.bufs_offset  = uct::mm::fifo_bufs_offset(cfg.fifo_size, cfg.fifo_elem_size);
    hdr.total_size   = uct::mm::fifo_total_size(cfg.fifo_size, cfg.fifo_elem_size, cfg.seg_size);
    hdr.owner_start_time = ucs::sys::self_start_time();
    REQUIRE(hdr.total_size <= length);
    auto with_header = [&](auto &&edit) {
        uct::mm::fifo_header h = hdr;
        edit(h);
        std::memcpy(address, &h, sizeof(h));
        return try_connect(e, with_iface(good, x));
    };
    CHECK(with_header([](auto &) {}) == UCS_OK);
    CHECK(with_header([](auto &h) { h.magic ^= 1; }) == UCS_ERR_INVALID_ADDR);
    CHECK(with_header([](auto &h) { h.version += 1; }) == UCS_ERR_INVALID_ADDR);
    CHECK(with_header([](auto &h) { h.owner_pid += 1; }) == UCS_ERR_INVALID_ADDR);
    /* Our pid, but the segment's owner started at another time: the pid
     * was reused, the owner is gone. */
    CHECK(with_header([](auto &h) { h.owner_start_time += 1; }) == UCS_ERR_UNREACHABLE);
    CHECK(with_header([](auto &h) { h.fifo_size = 3; }) == UCS_ERR_INVALID_ADDR);
    CHECK(with_header([](auto &h) { h.fifo_size = 1u << 16; }) == UCS_ERR_INVALID_ADDR);
    CHECK(with_header([](auto &h) { h.elem_size = 32; }) == UCS_ERR_INVALID_ADDR);
    CHECK(with_header([](auto &h) { h.seg_size = 100; }) == UCS_ERR_INVALID_ADDR);
    CHECK(with_header([](auto &h) { h.bufs_offset = 0; }) == UCS_ERR_INVALID_ADDR);
    CHECK(with_header([&](auto &h) { h.total_size = length + 1; }) == UCS_ERR_INVALID_ADDR);
    CHECK(e.md().mem_free(memh) == UCS_OK);

    /* The other backend's address. */
    const char *other = (std::string(tl) == "posix") ? "sysv" : "posix";
    test::mm_entity o(other);
    REQUIRE(o.ok());
    CHECK(try_connect(e, o.addresses()) != UCS_OK);
    CHECK(try_connect(o, good) != UCS_OK);
}

MM_TEST_CASE("malformed iface addresses are refused with a status", malformed_addresses)

} // namespace
