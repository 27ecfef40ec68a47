/*
 * Capture with backtrace(3), symbols and lines with libdw (see backtrace.h).
 */
#include <ucs/debug/backtrace.h>

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <execinfo.h>

#include <cinttypes>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

namespace ucs::debug {

namespace {

void write_all(int fd, const char *text, size_t length)
{
    while (length > 0) {
        ssize_t written = ::write(fd, text, length);
        if (written <= 0) {
            return; /* nowhere left to report to */
        }
        text += written;
        length -= static_cast<size_t>(written);
    }
}

void write_text(int fd, const std::string &text)
{
    write_all(fd, text.data(), text.size());
}

/* "ns::f(int)" for a mangled C++ name, the name itself otherwise. */
std::string demangle(const char *name)
{
    int status      = 0;
    char *demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string out = ((status == 0) && (demangled != nullptr)) ? demangled : name;
    std::free(demangled);
    return out;
}

/* One report line; without source lines the object's path stands for the file. */
std::string describe_frame(Dwfl *dwfl, unsigned index, void *frame)
{
    const Dwarf_Addr address = reinterpret_cast<uintptr_t>(frame);
    const Dwarf_Addr lookup  = (index == 0) ? address : address - 1;
    Dwfl_Module *module      = (dwfl != nullptr) ? dwfl_addrmodule(dwfl, lookup) : nullptr;

    std::string function = "??";
    std::string where    = "??";
    if (module != nullptr) {
        const char *symbol = dwfl_module_addrname(module, lookup);
        if (symbol != nullptr) {
            function = demangle(symbol);
        }
        int line_number       = 0;
        Dwfl_Line *line       = dwfl_module_getsrc(module, lookup);
        const char *file_name = (line != nullptr) ? dwfl_lineinfo(line, nullptr, &line_number,
                                                                  nullptr, nullptr, nullptr) :
                                                    nullptr;
        if (file_name != nullptr) {
            where = std::string(file_name) + ":" + std::to_string(line_number);
        } else {
            const char *object = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr,
                                                  nullptr, nullptr, nullptr);
            where              = (object != nullptr) ? object : "??";
        }
    }
    /* UCX writes "name()"; a demangled C++ name already has its parameters. */
    if (function.empty() || (function.back() != ')')) {
        function += "()";
    }

    char head[48];
    std::snprintf(head, sizeof(head), "%2u 0x%016" PRIxPTR " ", index,
                  static_cast<uintptr_t>(address));
    return head + function + "  " + where + "\n";
}

/*
 * libdw reads the debug information of every object in the process; should
 * that fault (malformed DWARF), the report goes on without symbols instead
 * of ending. One report at a time (error_signals.cc lets one thread in).
 */
sigjmp_buf symbolise_jump;

void symbolise_fault(int)
{
    siglongjmp(symbolise_jump, 1);
}

class fault_guard {
public:
    fault_guard()
    {
        struct sigaction action = {};
        action.sa_handler       = symbolise_fault;
        action.sa_flags         = SA_NODEFER | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        sigaction(SIGSEGV, &action, &m_old_segv);
        sigaction(SIGBUS, &action, &m_old_bus);
        /* Inside a SIGSEGV handler SIGSEGV is blocked, and a blocked fault
         * would kill the process at once. */
        sigset_t faults;
        sigemptyset(&faults);
        sigaddset(&faults, SIGSEGV);
        sigaddset(&faults, SIGBUS);
        pthread_sigmask(SIG_UNBLOCK, &faults, &m_old_mask);
    }

    ~fault_guard()
    {
        pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
        sigaction(SIGSEGV, &m_old_segv, nullptr);
        sigaction(SIGBUS, &m_old_bus, nullptr);
    }

    fault_guard(const fault_guard &)            = delete;
    fault_guard &operator=(const fault_guard &) = delete;

private:
    struct sigaction m_old_segv, m_old_bus;
    sigset_t m_old_mask;
};

} // namespace

void backtrace_prepare()
{
    void *frame;
    ::backtrace(&frame, 1);
}

size_t backtrace_capture(void **frames, size_t max_frames)
{
    int count = ::backtrace(frames, static_cast<int>(max_frames));
    return (count > 0) ? static_cast<size_t>(count) : 0;
}

void backtrace_write(int fd, void *const *frames, size_t count)
{
    static const Dwfl_Callbacks callbacks = {
        .find_elf        = dwfl_linux_proc_find_elf,
        .find_debuginfo  = dwfl_standard_find_debuginfo,
        .section_address = nullptr,
        .debuginfo_path  = nullptr,
    };

    char head[64];
    std::snprintf(head, sizeof(head), "==== backtrace (tid:%7ld) ====\n",
                  static_cast<long>(syscall(SYS_gettid)));
    write_text(fd, head);

    fault_guard guard;
    Dwfl *volatile dwfl  = nullptr; /* without one, frames are listed unsymbolised */
    volatile size_t next = 0;
    if (sigsetjmp(symbolise_jump, 1) == 0) {
        dwfl = dwfl_begin(&callbacks);
        if (dwfl != nullptr) {
            dwfl_report_begin(dwfl);
            if ((dwfl_linux_proc_report(dwfl, getpid()) != 0) ||
                (dwfl_report_end(dwfl, nullptr, nullptr) != 0)) {
                dwfl_end(dwfl);
                dwfl = nullptr;
            }
        }
    } else {
        /* A fault while symbolising: the session is left as it is (leaked). */
        write_text(fd, "(fault while reading debug information: no more symbols)\n");
        dwfl = nullptr;
    }
    while (next < count) {
        write_text(fd, describe_frame(dwfl, static_cast<unsigned>(next), frames[next]));
        next = next + 1;
    }
    if (dwfl != nullptr) {
        dwfl_end(dwfl);
    }
    write_text(fd, "=================================\n");
}

} // namespace ucs::debug
