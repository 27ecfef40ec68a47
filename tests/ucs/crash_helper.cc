/*
 * Crashes on purpose, for the error signal tests (test_error_signals.cc):
 *   crash_helper segv      write through a bad pointer
 *   crash_helper fpe       raise(SIGFPE)
 *   crash_helper stack     overflow the stack by recursion
 *   crash_helper handler   print whether SIGSEGV has a handler, and exit 0
 * libucs is loaded (and so its handlers installed) before main runs.
 */
#include <ucs/config/global_opts.h>

#include <csignal>
#include <cstdio>
#include <cstring>

/* Named in the expected backtrace; kept out of line so it has a frame. */
__attribute__((noinline)) void crash_helper_fault_here(volatile int *pointer)
{
    *pointer = 1;
}

/* Never reached: the stack ends first. */
volatile unsigned long recursion_limit = ~0ul;

/* Each call keeps a page on the stack, so the recursion overflows it soon. */
__attribute__((noinline)) int crash_helper_recurse(unsigned long depth)
{
    volatile char page[4096];
    page[depth % sizeof(page)] = static_cast<char>(depth);
    if (depth >= recursion_limit) {
        return page[0];
    }
    return crash_helper_recurse(depth + 1) + page[0];
}

int main(int argc, char **argv)
{
    /* Uses libucs, so the linker keeps it (and its constructor) in the process. */
    if (ucs::global_opts_status() != UCS_OK) {
        std::fprintf(stderr, "crash_helper: invalid configuration\n");
    }
    const char *mode = (argc > 1) ? argv[1] : "";
    if (!std::strcmp(mode, "segv")) {
        crash_helper_fault_here(reinterpret_cast<volatile int *>(8));
    } else if (!std::strcmp(mode, "stack")) {
        return crash_helper_recurse(0);
    } else if (!std::strcmp(mode, "fpe")) {
        std::raise(SIGFPE);
    } else if (!std::strcmp(mode, "handler")) {
        struct sigaction current;
        sigaction(SIGSEGV, nullptr, &current);
        std::printf("SIGSEGV: %s\n", (current.sa_handler == SIG_DFL) ? "default" : "handled");
        return 0;
    }
    std::fprintf(stderr, "usage: crash_helper segv|fpe|stack|handler\n");
    return 2;
}
