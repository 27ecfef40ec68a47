/*
 * The out-of-band channel between the two sides of a benchmark. It carries
 * setup data (parameters, addresses, remote keys), barriers and "done"
 * markers, never anything that is timed. It runs over a stream socket
 * (socketpair or TCP) or, under mpirun, over MPI messages; for the latter
 * every send() must be matched by a recv() of the same length, which is how
 * all the helpers below use it.
 */
#ifndef BENCH_COMMON_OOB_H
#define BENCH_COMMON_OOB_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace perf {

class oob {
public:
    /* The leader sends first in exchange(), so no side ever waits on a
     * send while the other does the same. */
    explicit oob(bool leader) : leader_(leader) {}
    virtual ~oob()              = default;
    oob(const oob &)            = delete;
    oob &operator=(const oob &) = delete;

    /* Exactly `length` bytes; false when the peer is gone. */
    virtual bool send(const void *data, size_t length) = 0;
    virtual bool recv(void *data, size_t length)       = 0;
    /* True when something can be received now; never waits. */
    virtual bool ready() = 0;
    /* True when the peer closed its end and nothing is left to read: the
     * way a side that failed in the middle of a test stops the other one. */
    virtual bool peer_gone() = 0;

    bool leader() const { return leader_; }

    bool send_blob(const std::vector<uint8_t> &blob);
    bool recv_blob(std::vector<uint8_t> *blob);
    bool send_byte(uint8_t value);
    bool recv_byte(uint8_t *value);
    /* Ours goes out, theirs comes back; both sides call it. */
    bool exchange(const std::vector<uint8_t> &mine, std::vector<uint8_t> *theirs);
    /* Both sides say whether their step worked, and why not: afterwards
     * both know whether both did, so a step that failed on either side is
     * given up by both and the channel stays in step. */
    bool agree(bool ok_here, const std::string &why_here, bool *ok_there, std::string *why_there);
    bool barrier();

private:
    bool leader_;
};

/* A stream socket: socketpair (loopback) or TCP (client/server). */
class fd_oob : public oob {
public:
    fd_oob(int fd, bool leader) : oob(leader), fd_(fd) {}
    ~fd_oob() override;

    bool send(const void *data, size_t length) override;
    bool recv(void *data, size_t length) override;
    bool ready() override;
    bool peer_gone() override;

    int fd() const { return fd_; }
    /* Tells the peer nothing more comes from this side (it sees EOF). */
    void close_write();

private:
    int fd_;
};

/* Largest blob the helpers accept from a peer: guards against garbage. */
constexpr size_t OOB_MAX_BLOB = 64u << 20;

} // namespace perf

#endif
