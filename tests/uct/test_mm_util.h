/*
 * Helpers for the mm (posix, sysv) tests: open a transport with an error
 * handler and explicit tunables, count what the transports could leave
 * behind (files in /dev/shm, sysv segments), and declare each test once for
 * both transports.
 */
#ifndef TESTS_UCT_TEST_MM_UTIL_H
#define TESTS_UCT_TEST_MM_UTIL_H

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>
#include <uct/sm/mm/mm_config.h>

#include "uct_test_util.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <sys/types.h>

namespace test {

class mm_entity {
public:
    explicit mm_entity(const std::string &tl_name,
                       const uct::mm::mm_config &config = uct::mm::default_mm_config());
    ~mm_entity();

    bool ok() const { return iface_ != nullptr; }
    const std::string &error() const { return error_; }

    uct::worker &worker() { return *worker_; }
    uct::md &md() { return *md_; }
    uct::component &component() { return *component_; }
    uct::iface &iface() { return *iface_; }
    const uct::iface_attr &attr() const { return iface_->attr(); }

    uct_addresses addresses() const;
    /* nullptr on failure; `status_p` gets the reason. */
    uct::ep *connect(const uct_addresses &peer, ucs_status_t *status_p = nullptr);
    void destroy_ep(uct::ep *ep);
    unsigned progress() { return worker_->progress(); }

    /* What the error handler saw. */
    struct failure {
        uct::ep *ep;
        ucs_status_t status;
    };
    const std::vector<failure> &failures() const { return failures_; }

private:
    static ucs_status_t on_error(void *arg, uct::ep *ep, ucs_status_t status);

    std::string error_;
    std::unique_ptr<uct::worker> worker_;
    uct::component *component_ = nullptr;
    uct::md *md_               = nullptr;
    uct::iface *iface_         = nullptr;
    std::vector<uct::ep *> eps_;
    std::vector<failure> failures_;
};

/*
 * Names in /dev/shm that an mm backend could have created (its fallback
 * names start with "ucx-ng"; memfds have no name at all). Other programs on
 * this machine may use /dev/shm while the tests run, so only ours count.
 */
std::set<std::string> dev_shm_entries();

/* Where this process's open posix segments point (readlink of its fds). */
std::vector<std::string> posix_segment_links();

/* sysv segments (shmid -> mode) created by any of `pids`. */
struct sysv_segment {
    int shmid;
    unsigned mode; /* includes SHM_DEST (01000) once removed */
    pid_t cpid;
};
std::vector<sysv_segment> sysv_segments_of(const std::set<pid_t> &pids);

} // namespace test

/* One test body, run as "posix: ..." tagged [posix] and "sysv: ..." [sysv]. */
#define MM_TEST_CASE(_name, _body_fn) \
    TEST_CASE("posix: " _name, "[posix]") \
    { \
        _body_fn("posix"); \
    } \
    TEST_CASE("sysv: " _name, "[sysv]") \
    { \
        _body_fn("sysv"); \
    }

#endif
