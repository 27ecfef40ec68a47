/*
 * UCX_HANDLE_ERRORS / UCX_ERROR_SIGNALS, on a child process (crash_helper)
 * that crashes with the settings under test; its stderr is read to its end
 * (or, for freeze, up to the line that says it froze).
 */
#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <map>
#include <poll.h>
#include <regex>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct child_run {
    std::string output; /* stdout and stderr together */
    int status = 0;
    pid_t pid  = -1;
};

/*
 * Starts crash_helper with mode and the given UCX_* variables. Reads its
 * output until EOF, or until `until` appears (then the child is left
 * running); bounded by a minute either way.
 */
child_run run_helper(const char *mode, const std::map<std::string, std::string> &env,
                     const std::string &until = "", const char *program = CRASH_HELPER)
{
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    child_run run;
    run.pid = fork();
    REQUIRE(run.pid >= 0);
    if (run.pid == 0) {
        dup2(pipe_fds[1], STDOUT_FILENO);
        dup2(pipe_fds[1], STDERR_FILENO);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        /* Under AddressSanitizer: no ASan handler for these signals, so that
         * ours re-raises to the default action as it does elsewhere. */
        const char *asan         = getenv("ASAN_OPTIONS");
        std::string asan_options = (asan != nullptr) ? asan : "";
        asan_options += ":handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0";
        setenv("ASAN_OPTIONS", asan_options.c_str(), 1);
        for (const auto &[name, value] : env) {
            setenv(name.c_str(), value.c_str(), 1);
        }
        execl(program, program, mode, static_cast<char *>(nullptr));
        _exit(127);
    }
    close(pipe_fds[1]);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    bool eof            = false;
    while (!eof && (until.empty() || (run.output.find(until) == std::string::npos)) &&
           (std::chrono::steady_clock::now() < deadline)) {
        pollfd pfd = {pipe_fds[0], POLLIN, 0};
        if (poll(&pfd, 1, 1000) <= 0) {
            continue;
        }
        char buffer[4096];
        ssize_t got = read(pipe_fds[0], buffer, sizeof(buffer));
        if (got > 0) {
            run.output.append(buffer, static_cast<size_t>(got));
        } else if ((got == 0) || (errno != EINTR)) {
            eof = true;
        }
    }
    close(pipe_fds[0]);
    if (until.empty()) {
        if (!eof) {
            kill(run.pid, SIGKILL);
        }
        REQUIRE(waitpid(run.pid, &run.status, 0) == run.pid);
    }
    return run;
}

bool killed_by(const child_run &run, int signo)
{
    return WIFSIGNALED(run.status) && (WTERMSIG(run.status) == signo);
}

} // namespace

TEST_CASE("a segfault prints UCX's report with a symbolised backtrace", "[debug]")
{
    child_run run = run_helper("segv", {{"UCX_HANDLE_ERRORS", "bt"}});
    INFO(run.output);

    /* "[host:pid  :thread:tid] Caught signal 11 (...)", as UCX 1.13 writes it. */
    const std::regex caught("\\[[^:\\]]+:" + std::to_string(run.pid) +
                            " *:[0-9]+:[0-9]+\\] Caught signal 11 \\(Segmentation fault: "
                            "address not mapped to object at address 0x8\\)\n");
    CHECK(std::regex_search(run.output, caught));
    CHECK(run.output.find("==== backtrace (tid:") != std::string::npos);
    /* The first frame is the faulting function, with its source line. */
    const std::regex first_frame(" 0 0x[0-9a-f]{16} crash_helper_fault_here\\(int volatile\\*\\)"
                                 "  [^\n]*crash_helper.cc:[0-9]+\n");
    CHECK(std::regex_search(run.output, first_frame));
    CHECK(std::regex_search(run.output, std::regex(" main\\(\\)  [^\n]*crash_helper.cc")));
    CHECK(run.output.find("=================================\n") != std::string::npos);
    /* The signal reaches the default action afterwards: the exit status says so. */
    CHECK(killed_by(run, SIGSEGV));
}

/* As UCX: the handler that was there before libucs still runs, after the report. */
TEST_CASE("the application's own handler runs after the report", "[debug]")
{
    child_run run = run_helper("", {{"UCX_HANDLE_ERRORS", "bt"}}, "", CHAIN_HELPER);
    INFO(run.output);
    const size_t caught = run.output.find("] Caught signal 11 (Segmentation fault: ");
    const size_t ran    = run.output.find("application handler ran\n");
    CHECK(caught != std::string::npos);
    CHECK(run.output.find("chain_helper_fault_here(int volatile*)") != std::string::npos);
    REQUIRE(ran != std::string::npos);
    CHECK(ran > caught);
    CHECK((WIFEXITED(run.status) && (WEXITSTATUS(run.status) == 42)));
}

/* The handler runs on an alternate stack, so even this is reported. */
TEST_CASE("a stack overflow is reported too", "[debug]")
{
    child_run run = run_helper("stack", {{"UCX_HANDLE_ERRORS", "bt"}});
    INFO(run.output);
    CHECK(run.output.find("] Caught signal 11 (Segmentation fault: ") != std::string::npos);
    CHECK(run.output.find("crash_helper_recurse(unsigned long)") != std::string::npos);
    CHECK(run.output.find("=================================\n") != std::string::npos);
    CHECK(killed_by(run, SIGSEGV));
}

TEST_CASE("UCX_HANDLE_ERRORS=none installs no handler and prints nothing", "[debug]")
{
    child_run query = run_helper("handler", {{"UCX_HANDLE_ERRORS", "none"}});
    CHECK(query.output == "SIGSEGV: default\n");
    CHECK(WIFEXITED(query.status));

    child_run handled = run_helper("handler", {{"UCX_HANDLE_ERRORS", "bt"}});
    CHECK(handled.output == "SIGSEGV: handled\n");

    child_run run = run_helper("segv", {{"UCX_HANDLE_ERRORS", "none"}});
    INFO(run.output);
    CHECK(run.output.find("Caught signal") == std::string::npos);
    CHECK(run.output.find("backtrace") == std::string::npos);
    CHECK(killed_by(run, SIGSEGV));
}

TEST_CASE("only the signals of UCX_ERROR_SIGNALS are reported", "[debug]")
{
    child_run segv = run_helper("segv",
                                {{"UCX_HANDLE_ERRORS", "bt"}, {"UCX_ERROR_SIGNALS", "BUS,SIGFPE"}});
    INFO(segv.output);
    CHECK(segv.output.find("Caught signal") == std::string::npos);
    CHECK(killed_by(segv, SIGSEGV));

    child_run fpe = run_helper("fpe",
                               {{"UCX_HANDLE_ERRORS", "bt"}, {"UCX_ERROR_SIGNALS", "BUS,SIGFPE"}});
    INFO(fpe.output);
    CHECK(fpe.output.find("] Caught signal 8 (Floating point exception: "
                          "tkill(2) or tgkill(2))") != std::string::npos);
    CHECK(killed_by(fpe, SIGFPE));
}

TEST_CASE("a bad UCX_ERROR_SIGNALS entry is named, the others still apply", "[debug]")
{
    child_run run = run_helper("segv", {{"UCX_HANDLE_ERRORS", "bt"},
                                        {"UCX_ERROR_SIGNALS", "NOSUCHSIG,11"}});
    INFO(run.output);
    CHECK(run.output.find("UCX_ERROR_SIGNALS: 'NOSUCHSIG' is not a signal") != std::string::npos);
    CHECK(run.output.find("Caught signal 11") != std::string::npos);
    CHECK(killed_by(run, SIGSEGV));

    child_run bad_mode = run_helper("handler", {{"UCX_HANDLE_ERRORS", "bt,nonsense"}});
    INFO(bad_mode.output);
    CHECK(bad_mode.output.find("Invalid value for UCX_HANDLE_ERRORS") != std::string::npos);
}

TEST_CASE("UCX_HANDLE_ERRORS=freeze reports and keeps the process stopped", "[debug]")
{
    child_run run = run_helper("segv", {{"UCX_HANDLE_ERRORS", "freeze"}}, "Process frozen...");
    INFO(run.output);
    REQUIRE(run.output.find("Process frozen...") != std::string::npos);
    CHECK(run.output.find("Caught signal 11") != std::string::npos);
    CHECK(run.output.find("backtrace") == std::string::npos); /* freeze alone: no bt */

    /* It has written its last line and waits: still there until killed. */
    int status = 0;
    CHECK(waitpid(run.pid, &status, WNOHANG) == 0);
    kill(run.pid, SIGKILL);
    REQUIRE(waitpid(run.pid, &status, 0) == run.pid);
    CHECK((WIFSIGNALED(status) && (WTERMSIG(status) == SIGKILL)));
}

TEST_CASE("UCX_HANDLE_ERRORS=debug says no debugger starts and prints the backtrace", "[debug]")
{
    child_run run = run_helper("segv", {{"UCX_HANDLE_ERRORS", "debug"}});
    INFO(run.output);
    CHECK(run.output.find("this build starts no debugger") != std::string::npos);
    CHECK(run.output.find("crash_helper_fault_here") != std::string::npos);
    CHECK(killed_by(run, SIGSEGV));
}
