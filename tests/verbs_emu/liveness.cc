#include "liveness.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace verbs_emu {

bool process_alive(pid_t pid)
{
    if (pid <= 0) {
        return false;
    }
    if (pid == getpid()) {
        return true;
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return false;
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", int(pid));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno != ENOENT;
    }
    char text[512];
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) {
        return true;
    }
    text[n] = '\0';
    /* "pid (comm) S ...": comm may hold spaces and parentheses */
    const char *paren = std::strrchr(text, ')');
    if (paren == nullptr || paren[1] != ' ') {
        return true;
    }
    char state = paren[2];
    return state != 'Z' && state != 'X' && state != 'x';
}

int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    long fd = syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        fcntl(int(fd), F_SETFD, FD_CLOEXEC);
        return int(fd);
    }
#endif
    (void)pid;
    return -1;
}

bool pidfd_alive(int pidfd)
{
    struct pollfd pfd = {pidfd, POLLIN, 0};
    int n;
    do {
        n = poll(&pfd, 1, 0);
    } while (n < 0 && errno == EINTR);
    return n == 0;
}

} // namespace verbs_emu
