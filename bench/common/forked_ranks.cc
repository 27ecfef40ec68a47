/*
 * run_forked_ranks (forked_ranks.h).
 */
#include "forked_ranks.h"

#include <cstdio>
#include <memory>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace perf {

bool run_forked_ranks(unsigned nranks, unsigned blobs_per_rank,
                      const std::vector<uint8_t> &barriers,
                      const std::function<int(unsigned rank, oob &channel)> &body)
{
    /* The parent leads each channel; a child follows on its end. */
    std::vector<std::unique_ptr<fd_oob>> socks;
    std::vector<pid_t> pids;
    for (unsigned r = 0; r < nranks; ++r) {
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
            std::perror("socketpair");
            return false;
        }
        const pid_t pid = fork();
        if (pid == 0) {
            socks.clear(); /* the other ranks' channels are not ours */
            ::close(pair[0]);
            fd_oob channel(pair[1], false);
            _exit(body(r, channel));
        }
        ::close(pair[1]);
        socks.push_back(std::make_unique<fd_oob>(pair[0], true));
        pids.push_back(pid);
    }
    bool ok = true;
    std::vector<std::vector<uint8_t>> blobs(size_t(blobs_per_rank) * nranks);
    for (unsigned r = 0; r < nranks; ++r) {
        for (unsigned j = 0; j < blobs_per_rank; ++j) {
            ok = ok && socks[r]->recv_blob(&blobs[size_t(blobs_per_rank) * r + j]);
        }
    }
    for (unsigned r = 0; ok && (r < nranks); ++r) {
        for (const auto &blob : blobs) {
            ok = ok && socks[r]->send_blob(blob);
        }
    }
    for (const uint8_t step : barriers) {
        for (auto &sock : socks) {
            uint8_t c;
            ok = ok && sock->recv_byte(&c) && (c == step);
        }
        for (auto &sock : socks) {
            ok = ok && sock->send_byte('g');
        }
    }
    socks.clear();
    for (unsigned r = 0; r < nranks; ++r) {
        int status;
        ok = (waitpid(pids[r], &status, 0) == pids[r]) && WIFEXITED(status) &&
             (WEXITSTATUS(status) == 0) && ok;
    }
    return ok;
}

} // namespace perf
