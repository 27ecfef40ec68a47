/*
 * Capture with backtrace(3), symbols and lines with libdw (see backtrace.h).
 */
#include <ucs/debug/backtrace.h>

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <execinfo.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
        text   += written;
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
        const char *file_name = (line != nullptr) ?
                dwfl_lineinfo(line, nullptr, &line_number, nullptr, nullptr, nullptr) :
                nullptr;
        if (file_name != nullptr) {
            where = std::string(file_name) + ":" + std::to_string(line_number);
        } else {
            const char *object = dwfl_module_info(module, nullptr, nullptr, nullptr,
                                                  nullptr, nullptr, nullptr, nullptr);
            where = (object != nullptr) ? object : "??";
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

    /* Without a session every frame is still listed, unsymbolised. */
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (dwfl != nullptr) {
        dwfl_report_begin(dwfl);
        if ((dwfl_linux_proc_report(dwfl, getpid()) != 0) ||
            (dwfl_report_end(dwfl, nullptr, nullptr) != 0)) {
            dwfl_end(dwfl);
            dwfl = nullptr;
        }
    }
    for (size_t i = 0; i < count; ++i) {
        write_text(fd, describe_frame(dwfl, static_cast<unsigned>(i), frames[i]));
    }
    if (dwfl != nullptr) {
        dwfl_end(dwfl);
    }
    write_text(fd, "=================================\n");
}

} // namespace ucs::debug
