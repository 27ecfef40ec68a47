/*
 * The error signal handler (see error_signals.h). Everything up to the
 * backtrace is async-signal-safe; symbolising is not (it allocates, as in
 * UCX), so a watchdog alarm ends a report that deadlocks.
 */
#include <ucs/debug/error_signals.h>
#include <ucs/debug/backtrace.h>
#include <ucs/debug/log.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

namespace ucs::debug {

namespace {

constexpr size_t max_frames         = 64;
constexpr unsigned watchdog_seconds = 30;
/* libdw's line-table reader alone keeps ~300 KiB of arrays on the stack. */
constexpr size_t alt_stack_size = 1024 * 1024;

struct saved_action {
    int signo;
    struct sigaction action;
};

/* Written once by install() before any handler can run, then only read. */
saved_action saved[NSIG];
size_t saved_count   = 0;
unsigned handle_mask = 0;
std::once_flag install_once;

std::atomic<long> reporting_tid{0};
volatile sig_atomic_t reported_signo = 0;

bool has(unsigned mask, ucs_handle_error_t bit)
{
    return mask & (1u << bit);
}

/* Fixed-buffer text building without stdio, for the handler. */
class line_buffer {
public:
    line_buffer &add(const char *text)
    {
        while ((text != nullptr) && (*text != '\0') && (m_length < sizeof(m_text))) {
            m_text[m_length++] = *text++;
        }
        return *this;
    }

    /* left_width: pad with spaces after the digits to that width (printf's %-5d). */
    line_buffer &add_number(unsigned long value, unsigned base = 10, int left_width = 0)
    {
        char digits[24];
        int count = 0;
        do {
            digits[count++] = "0123456789abcdef"[value % base];
            value /= base;
        } while ((value != 0) && (count < static_cast<int>(sizeof(digits))));
        for (int i = count; i > 0; --i) {
            char digit[2] = {digits[i - 1], '\0'};
            add(digit);
        }
        for (int pad = left_width - count; pad > 0; --pad) {
            add(" ");
        }
        return *this;
    }

    void write_to(int fd) const
    {
        const char *p = m_text;
        size_t left   = m_length;
        while (left > 0) {
            ssize_t written = ::write(fd, p, left);
            if (written <= 0) {
                return;
            }
            p += written;
            left -= static_cast<size_t>(written);
        }
    }

private:
    char m_text[512];
    size_t m_length = 0;
};

const char *cause_common(int code)
{
    // clang-format off
    switch (code) {
    case SI_USER:    return "kill(2) or raise(3)";
    case SI_KERNEL:  return "Sent by the kernel";
    case SI_QUEUE:   return "sigqueue(2)";
    case SI_TIMER:   return "POSIX timer expired";
    case SI_MESGQ:   return "POSIX message queue state changed";
    case SI_ASYNCIO: return "AIO completed";
    case SI_SIGIO:   return "queued SIGIO";
    case SI_TKILL:   return "tkill(2) or tgkill(2)";
    default:         return "<unknown si_code>";
    }
    // clang-format on
}

/* UCX 1.13's wording of si_code, signal by signal. */
const char *signal_cause(int signo, int code)
{
    switch (signo) {
    case SIGSEGV:
        switch (code) {
        case SEGV_MAPERR:
            return "address not mapped to object";
        case SEGV_ACCERR:
            return "invalid permissions for mapped object";
        }
        break;
    case SIGBUS:
        switch (code) {
        case BUS_ADRALN:
            return "invalid address alignment";
        case BUS_ADRERR:
            return "nonexistent physical address";
        case BUS_OBJERR:
            return "object-specific hardware error";
        }
        break;
    case SIGILL:
        switch (code) {
        case ILL_ILLOPC:
            return "illegal opcode";
        case ILL_ILLOPN:
            return "illegal operand";
        case ILL_ILLADR:
            return "illegal addressing mode";
        case ILL_ILLTRP:
            return "illegal trap";
        case ILL_PRVOPC:
            return "privileged opcode";
        case ILL_PRVREG:
            return "privileged register";
        case ILL_COPROC:
            return "coprocessor error";
        case ILL_BADSTK:
            return "internal stack error";
        }
        break;
    case SIGFPE:
        switch (code) {
        case FPE_INTDIV:
            return "integer divide by zero";
        case FPE_INTOVF:
            return "integer overflow";
        case FPE_FLTDIV:
            return "floating-point divide by zero";
        case FPE_FLTOVF:
            return "floating-point overflow";
        case FPE_FLTUND:
            return "floating-point underflow";
        case FPE_FLTRES:
            return "floating-point inexact result";
        case FPE_FLTINV:
            return "floating-point invalid operation";
        case FPE_FLTSUB:
            return "subscript out of range";
        }
        break;
    case SIGTRAP:
        switch (code) {
        case TRAP_BRKPT:
            return "process breakpoint";
        case TRAP_TRACE:
            return "process trace trap";
        }
        break;
    }
    return cause_common(code);
}

void restore_saved_actions()
{
    for (size_t i = 0; i < saved_count; ++i) {
        sigaction(saved[i].signo, &saved[i].action, nullptr);
    }
}

/* The instruction that faulted, so the report starts there, not in the handler. */
void *faulting_pc(void *context)
{
    auto *uc = static_cast<ucontext_t *>(context);
#if defined(__x86_64__)
    return reinterpret_cast<void *>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    return reinterpret_cast<void *>(uc->uc_mcontext.pc);
#else
    (void)uc;
    return nullptr;
#endif
}

/* A report that hangs (a lock held by the faulting code) ends with the signal. */
void watchdog_handler(int)
{
    line_buffer().add("(backtrace timed out)\n").write_to(STDERR_FILENO);
    const int signo = reported_signo;
    signal(signo, SIG_DFL);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, signo);
    sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
    raise(signo);
    _exit(128 + signo);
}

void write_backtrace(void *context)
{
    void *frames[max_frames];
    size_t count = backtrace_capture(frames, max_frames);
    size_t first = 0;
    void *pc     = faulting_pc(context);
    for (size_t i = 0; (pc != nullptr) && (i < count); ++i) {
        if (frames[i] == pc) {
            first = i;
            break;
        }
    }

    signal(SIGALRM, watchdog_handler);
    alarm(watchdog_seconds);
    backtrace_write(STDERR_FILENO, frames + first, count - first);
    alarm(0);
}

void error_handler(int signo, siginfo_t *info, void *context)
{
    const long tid = syscall(SYS_gettid);
    long expected  = 0;
    if (!reporting_tid.compare_exchange_strong(expected, tid)) {
        for (;;) {
            pause(); /* another thread reports and ends the process */
        }
    }
    reported_signo = signo;
    restore_saved_actions();

    line_buffer caught;
    /* UCX's "[%s:%-5d:%s:%d] " prefix: host, pid, thread number, tid. */
    caught.add("[")
        .add(log_host_name())
        .add(":")
        .add_number(static_cast<unsigned long>(getpid()), 10, 5)
        .add(":")
        .add_number(log_thread_number())
        .add(":")
        .add_number(static_cast<unsigned long>(tid))
        .add("] Caught signal ")
        .add_number(static_cast<unsigned long>(signo))
        .add(" (")
        .add(sigdescr_np(signo))
        .add(": ")
        .add(signal_cause(signo, info->si_code));
    if (signo == SIGSEGV) {
        caught.add(" at address 0x").add_number(reinterpret_cast<uintptr_t>(info->si_addr), 16);
    }
    caught.add(")\n").write_to(STDERR_FILENO);

    if (has(handle_mask, UCS_HANDLE_ERROR_DEBUG)) {
        line_buffer()
            .add("UCX_HANDLE_ERRORS=debug: this build starts no debugger, "
                 "printing the backtrace instead\n")
            .write_to(STDERR_FILENO);
    }
    if (has(handle_mask, UCS_HANDLE_ERROR_BACKTRACE) || has(handle_mask, UCS_HANDLE_ERROR_DEBUG)) {
        write_backtrace(context);
    }
    if (has(handle_mask, UCS_HANDLE_ERROR_FREEZE)) {
        signal(SIGINT, SIG_DFL); /* as UCX: Ctrl+C still ends a frozen process */
        line_buffer()
            .add("[")
            .add(log_process_id())
            .add("] Process frozen...\n")
            .write_to(STDERR_FILENO);
        for (;;) {
            pause();
        }
    }
    raise(signo); /* delivered to the previous action once we return */
}

/*
 * An alternate stack for the initialising thread, so that a stack overflow
 * is reported too. One that is there already but too small for the report
 * (a sanitizer's) is replaced.
 */
void set_alt_stack()
{
    stack_t current;
    if ((sigaltstack(nullptr, &current) != 0) || (current.ss_flags & SS_ONSTACK) ||
        (!(current.ss_flags & SS_DISABLE) && (current.ss_size >= alt_stack_size))) {
        return;
    }
    void *memory = mmap(nullptr, alt_stack_size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        return;
    }
    stack_t stack = {};
    stack.ss_sp   = memory;
    stack.ss_size = alt_stack_size;
    if (sigaltstack(&stack, nullptr) != 0) {
        munmap(memory, alt_stack_size);
    }
}

} // namespace

int signal_from_name(const std::string &name)
{
    if (name.empty()) {
        return -1;
    }
    if (std::isdigit(static_cast<unsigned char>(name[0]))) {
        char *end   = nullptr;
        long number = std::strtol(name.c_str(), &end, 10);
        return ((*end == '\0') && (number > 0) && (number < NSIG)) ? static_cast<int>(number) : -1;
    }
    std::string abbrev = name;
    for (char &c : abbrev) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (abbrev.rfind("SIG", 0) == 0) {
        abbrev.erase(0, 3);
    }
    for (int signo = 1; signo < NSIG; ++signo) {
        const char *known = sigabbrev_np(signo);
        if ((known != nullptr) && (abbrev == known)) {
            return signo;
        }
    }
    return -1;
}

void error_signals_install(unsigned handle_errors, const std::vector<std::string> &signal_names)
{
    std::call_once(install_once, [&] {
        constexpr unsigned actions = (1u << UCS_HANDLE_ERROR_BACKTRACE) |
                                     (1u << UCS_HANDLE_ERROR_FREEZE) |
                                     (1u << UCS_HANDLE_ERROR_DEBUG);
        handle_mask = handle_errors & actions;
        if (handle_mask == 0) {
            return; /* "none": no handler at all */
        }

        backtrace_prepare();
        set_alt_stack();
        log_host_name(); /* computed now, so the handler does not allocate it */

        struct sigaction action = {};
        action.sa_sigaction     = error_handler;
        action.sa_flags         = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        for (const std::string &name : signal_names) {
            int signo = signal_from_name(name);
            if ((signo < 0) || (signo == SIGKILL) || (signo == SIGSTOP)) {
                ucs_error("UCX_ERROR_SIGNALS: '%s' is not a signal that can be "
                          "handled (e.g. SEGV, SIGBUS, 8)",
                          name.c_str());
                continue;
            }
            bool duplicate = false;
            for (size_t i = 0; i < saved_count; ++i) {
                duplicate = duplicate || (saved[i].signo == signo);
            }
            if (duplicate || (saved_count == NSIG)) {
                continue;
            }
            saved[saved_count].signo = signo;
            if (sigaction(signo, &action, &saved[saved_count].action) != 0) {
                ucs_warn("cannot handle signal %d: %s", signo, std::strerror(errno));
                continue;
            }
            ++saved_count;
        }
        ucs_debug("error signals: %zu handled", saved_count);
    });
}

void error_signals_restore()
{
    for (size_t i = 0; i < saved_count; ++i) {
        struct sigaction current;
        if ((sigaction(saved[i].signo, nullptr, &current) == 0) &&
            (current.sa_flags & SA_SIGINFO) && (current.sa_sigaction == error_handler)) {
            sigaction(saved[i].signo, &saved[i].action, nullptr);
        }
    }
}

} // namespace ucs::debug
