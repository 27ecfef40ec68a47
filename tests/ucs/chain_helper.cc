/*
 * An application with its own SIGSEGV handler that loads libucs afterwards
 * (dlopen), then crashes: libucs's report must come first and the
 * application's handler must still run (test_error_signals.cc).
 */
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace {

void application_handler(int)
{
    const char text[] = "application handler ran\n";
    ssize_t written   = write(STDERR_FILENO, text, sizeof(text) - 1);
    (void)written;
    _exit(42);
}

} // namespace

__attribute__((noinline)) void chain_helper_fault_here(volatile int *pointer)
{
    *pointer = 1;
}

int main()
{
    struct sigaction action = {};
    action.sa_handler       = application_handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, nullptr);

    if (dlopen(LIBUCS_PATH, RTLD_NOW) == nullptr) {
        std::fprintf(stderr, "chain_helper: %s\n", dlerror());
        return 2;
    }
    chain_helper_fault_here(reinterpret_cast<volatile int *>(8));
    return 0;
}
