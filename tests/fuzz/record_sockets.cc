#include "record_sockets.h"

#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace record {

std::string scenario = "setup";

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "record_corpus: %s\n", what);
        std::exit(1);
    }
}

namespace {

std::mutex g_lock;
std::map<int, stream> g_open;
std::vector<stream> g_done;

void append(int fd, const struct iovec *iov, int iovcnt, size_t n)
{
    std::lock_guard<std::mutex> lock(g_lock);
    stream &s = g_open[fd];
    if (s.marks.empty() || (s.marks.back().second != scenario)) {
        s.marks.emplace_back(s.data.size(), scenario);
    }
    for (int i = 0; (i < iovcnt) && (n > 0); ++i) {
        const size_t take = std::min(n, iov[i].iov_len);
        const auto *p     = static_cast<const uint8_t *>(iov[i].iov_base);
        s.data.insert(s.data.end(), p, p + take);
        n -= take;
    }
}

void finish(int fd)
{
    std::lock_guard<std::mutex> lock(g_lock);
    auto it = g_open.find(fd);
    if (it != g_open.end()) {
        g_done.push_back(std::move(it->second));
        g_open.erase(it);
    }
}

template <typename F>
F next(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    check(sym != nullptr, "libc symbol missing");
    return reinterpret_cast<F>(sym);
}

} // namespace

std::vector<stream> take_streams()
{
    std::lock_guard<std::mutex> lock(g_lock);
    std::vector<stream> all = std::move(g_done);
    g_done.clear();
    for (auto &[fd, s] : g_open) {
        all.push_back(std::move(s));
    }
    g_open.clear();
    return all;
}

const std::string &scenario_at(const stream &s, size_t offset)
{
    const std::string *name = &s.marks.front().second;
    for (const auto &[start, scenario_name] : s.marks) {
        if (start <= offset) {
            name = &scenario_name;
        }
    }
    return *name;
}

} // namespace record

extern "C" ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    static auto libc_recv = record::next<ssize_t (*)(int, void *, size_t, int)>("recv");
    ssize_t n             = libc_recv(fd, buf, len, flags);
    if ((n > 0) && !(flags & MSG_PEEK)) {
        struct iovec v = {buf, size_t(n)};
        record::append(fd, &v, 1, size_t(n));
    }
    return n;
}

extern "C" ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    static auto libc_readv = record::next<ssize_t (*)(int, const struct iovec *, int)>("readv");
    ssize_t n              = libc_readv(fd, iov, iovcnt);
    if (n > 0) {
        record::append(fd, iov, iovcnt, size_t(n));
    }
    return n;
}

extern "C" int close(int fd)
{
    static auto libc_close = record::next<int (*)(int)>("close");
    record::finish(fd);
    return libc_close(fd);
}
