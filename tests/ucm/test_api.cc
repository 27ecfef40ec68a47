/*
 * API behaviour: argument checks, external events, ucm_test_events,
 * handlers that call back into memory functions, disabling events.
 */
#include "event_recorder.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using ucm_test::event_recorder;
using ucm_test::page_size;
using ucm_test::scratch_mapping;

namespace {

void ignore_event(ucm_event_type_t, ucm_event_t *, void *)
{
}

constexpr int all_native_and_vm = UCM_EVENT_MMAP | UCM_EVENT_MUNMAP | UCM_EVENT_MREMAP |
                                  UCM_EVENT_SHMAT | UCM_EVENT_SHMDT | UCM_EVENT_SBRK |
                                  UCM_EVENT_MADVISE | UCM_EVENT_BRK | UCM_EVENT_VM_MAPPED |
                                  UCM_EVENT_VM_UNMAPPED;

} // namespace

TEST_CASE("ucm_set_event_handler rejects bad arguments", "[ucm]")
{
    CHECK(ucm_set_event_handler(UCM_EVENT_MUNMAP, 0, nullptr, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucm_set_event_handler(1 << 30, 0, ignore_event, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucm_set_event_handler(UCM_EVENT_MUNMAP | (1 << 12), 0, ignore_event, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucm_set_event_handler(0, 0, ignore_event, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucm_set_event_handler(UCM_EVENT_FLAG_NO_INSTALL, 0, ignore_event, nullptr) ==
          UCS_ERR_INVALID_PARAM);

    /* No device-memory hooks exist, unless the events are left to the
     * caller. */
    CHECK(ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 0, ignore_event, nullptr) ==
          UCS_ERR_UNSUPPORTED);
    CHECK(ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_FLAG_NO_INSTALL, 0,
                                ignore_event, nullptr) == UCS_OK);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, ignore_event, nullptr);

    /* Harmless no-ops. */
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, nullptr, nullptr);
    ucm_set_global_opts(nullptr);
    ucm_event_dispatch(UCM_EVENT_VM_UNMAPPED, nullptr);
}

TEST_CASE("external events are marked, tested and unmarked", "[ucm]")
{
    CHECK(ucm_test_external_events(0) == UCS_OK);
    CHECK(ucm_test_external_events(UCM_EVENT_VM_UNMAPPED) == UCS_ERR_UNSUPPORTED);

    ucm_set_external_event(UCM_EVENT_VM_UNMAPPED);
    CHECK(ucm_test_external_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    CHECK(ucm_test_external_events(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MUNMAP) ==
          UCS_ERR_UNSUPPORTED);
    /* External events count as delivered for ucm_test_events too. */
    CHECK(ucm_test_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    ucm_set_external_event(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE);
    CHECK(ucm_test_external_events(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MEM_TYPE_ALLOC) == UCS_OK);

    /* An external provider reports its events through ucm_event_dispatch. */
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MEM_TYPE_ALLOC) == UCS_OK);
    int object;
    ucm_event_t event;
    event.mem_type.address  = &object;
    event.mem_type.size     = sizeof(object);
    event.mem_type.mem_type = UCS_MEMORY_TYPE_CUDA;
    ucm_event_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, &event);
    CHECK(recorder.count(UCM_EVENT_MEM_TYPE_ALLOC, [&](const ucm_event_t &e) {
        return (e.mem_type.address == &object) && (e.mem_type.mem_type == UCS_MEMORY_TYPE_CUDA);
    }) == 1);
    recorder.detach();

    ucm_unset_external_event(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE);
    ucm_unset_external_event(UCM_EVENT_VM_UNMAPPED);
    CHECK(ucm_test_external_events(UCM_EVENT_VM_UNMAPPED) == UCS_ERR_UNSUPPORTED);
}

TEST_CASE("ucm_test_events confirms that the hooks work", "[ucm]")
{
    CHECK(ucm_test_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    CHECK(ucm_test_events(all_native_and_vm) == UCS_OK);
    CHECK(ucm_test_events(0) == UCS_OK);
    CHECK(ucm_test_events(UCM_EVENT_MEM_TYPE_FREE) == UCS_ERR_UNSUPPORTED);

    /* The temporary probe handler is gone afterwards: nothing listens. */
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    CHECK(ucm_test_events(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MUNMAP) == UCS_OK);
    CHECK(recorder.count(UCM_EVENT_VM_UNMAPPED) >= 1); /* saw the probe */
}

namespace {

struct reentrant_state {
    void *outer; /* the range whose munmap we react to */
    void *inner; /* what the handler unmaps itself */
    size_t length;
    int calls;
    int inner_result;
    ucs_status_t set_status;
};

void unmap_from_handler(ucm_event_type_t, ucm_event_t *event, void *arg)
{
    auto *state = static_cast<reentrant_state *>(arg);
    if (event->munmap.address == state->inner) {
        ++state->calls; /* would mean the nested call raised an event */
        return;
    }
    if (event->munmap.address != state->outer) {
        return;
    }
    ++state->calls;
    state->inner_result = munmap(state->inner, state->length);
    state->set_status   = ucm_set_event_handler(UCM_EVENT_MUNMAP, 0, ignore_event, nullptr);
    /* A handler may remove itself. */
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, unmap_from_handler, arg);
}

} // namespace

TEST_CASE("a handler that calls munmap neither recurses nor deadlocks", "[ucm]")
{
    const size_t page = page_size();
    scratch_mapping outer(page), inner(page);
    reentrant_state state{outer.get(), inner.get(), page, 0, -1, UCS_OK};
    REQUIRE(ucm_set_event_handler(UCM_EVENT_MUNMAP, -1, unmap_from_handler, &state) == UCS_OK);

    REQUIRE(munmap(outer.get(), page) == 0);
    outer.forget();
    inner.forget();

    CHECK(state.calls == 1);
    CHECK(state.inner_result == 0);
    CHECK_FALSE(ucm_test::is_mapped(state.inner, page));
    CHECK_FALSE(ucm_test::is_mapped(state.outer, page));
    CHECK(state.set_status == UCS_ERR_BUSY);

    /* It removed itself: a second munmap is not seen. */
    scratch_mapping again(page);
    state.outer = again.get();
    REQUIRE(munmap(again.get(), page) == 0);
    again.forget();
    CHECK(state.calls == 1);
}

TEST_CASE("events are delivered while other threads change handlers", "[ucm]")
{
    const size_t page        = page_size();
    constexpr int threads    = 3;
    constexpr int iterations = 2000;
    std::atomic<bool> failed{false};

    event_recorder main_recorder; /* keeps the hooks busy */
    REQUIRE(main_recorder.attach(UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&]() {
            event_recorder recorder; /* per-thread: records its own */
            if (recorder.attach(UCM_EVENT_MUNMAP) != UCS_OK) {
                failed = true;
                return;
            }
            for (int i = 0; i < iterations; ++i) {
                void *address = mmap(nullptr, page, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if ((address == MAP_FAILED) || (munmap(address, page) != 0)) {
                    failed = true;
                    return;
                }
                if (recorder.count_munmap(address, page) != 1) {
                    failed = true;
                    return;
                }
                recorder.clear();
            }
        });
    }
    for (int i = 0; i < iterations; ++i) {
        REQUIRE(ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, i % 7 - 3, ignore_event, &workers) ==
                UCS_OK);
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, ignore_event, &workers);
    }
    for (std::thread &worker : workers) {
        worker.join();
    }
    CHECK_FALSE(failed.load());
}

TEST_CASE("UCX_MEM_EVENTS=no disables memory events", "[ucm]")
{
    fflush(nullptr); /* the child must not repeat buffered output */
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        /* Only async-signal-safe-ish calls here: no Catch2 in the child. */
        int code = 0;
        setenv("UCX_MEM_EVENTS", "no", 1);
        if (ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, ignore_event, nullptr) !=
            UCS_ERR_UNSUPPORTED) {
            code |= 1;
        }
        if (ucm_test_events(UCM_EVENT_VM_UNMAPPED) != UCS_ERR_UNSUPPORTED) {
            code |= 2;
        }
        /* Memory calls still work, they just raise nothing. */
        void *address = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if ((address == MAP_FAILED) || (munmap(address, 4096) != 0)) {
            code |= 4;
        }
        setenv("UCX_MEM_EVENTS", "yes", 1);
        if (ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, ignore_event, nullptr) != UCS_OK) {
            code |= 8;
        }
        _exit(code);
    }

    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("ucm_global_opts can disable events and hooks", "[ucm]")
{
    const ucm_global_config_t saved = ucm_global_opts;

    ucm_global_config_t opts = saved;
    opts.enable_events       = 0;
    ucm_set_global_opts(&opts);
    CHECK(ucm_global_opts.enable_events == 0);
    CHECK(ucm_set_event_handler(UCM_EVENT_MUNMAP, 0, ignore_event, nullptr) == UCS_ERR_UNSUPPORTED);
    CHECK(ucm_test_events(UCM_EVENT_MUNMAP) == UCS_ERR_UNSUPPORTED);

    opts                = saved;
    opts.mmap_hook_mode = UCM_MMAP_HOOK_NONE;
    ucm_set_global_opts(&opts);
    CHECK(ucm_set_event_handler(UCM_EVENT_MUNMAP, 0, ignore_event, nullptr) == UCS_ERR_UNSUPPORTED);
    /* NO_INSTALL needs no hooks. */
    CHECK(ucm_set_event_handler(UCM_EVENT_MUNMAP | UCM_EVENT_FLAG_NO_INSTALL, 0, ignore_event,
                                nullptr) == UCS_OK);
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, ignore_event, nullptr);

    ucm_set_global_opts(&saved);
    CHECK(ucm_set_event_handler(UCM_EVENT_MUNMAP, 0, ignore_event, nullptr) == UCS_OK);
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, ignore_event, nullptr);
}

namespace {

/* Wait for a child with a deadline; kill it if it hangs. */
int wait_child(pid_t child, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; ++waited) {
        int status = 0;
        pid_t ret  = waitpid(child, &status, WNOHANG);
        if (ret == child) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        }
        usleep(1000);
    }
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return -1; /* hung */
}

} // namespace

TEST_CASE("fork while other threads dispatch leaves the child working", "[ucm]")
{
    const size_t page = page_size();
    std::atomic<bool> stop{false};
    REQUIRE(ucm_set_event_handler(UCM_EVENT_MUNMAP, 0, ignore_event, nullptr) == UCS_OK);

    std::thread busy([&]() {
        while (!stop.load()) {
            void *address = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (address != MAP_FAILED) {
                munmap(address, page);
            }
        }
    });

    int hung = 0, failed = 0;
    for (int i = 0; i < 20; ++i) {
        fflush(nullptr);
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            /* Needs both the handler list (write) and the install lock. */
            int code      = (ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, ignore_event, &stop) ==
                        UCS_OK) ?
                                0 :
                                1;
            void *address = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if ((address == MAP_FAILED) || (munmap(address, page) != 0)) {
                code |= 2;
            }
            _exit(code);
        }
        int code = wait_child(child, 2000);
        hung += (code == -1);
        failed += (code > 0);
    }

    stop = true;
    busy.join();
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, ignore_event, nullptr);
    CHECK(hung == 0);
    CHECK(failed == 0);
}
