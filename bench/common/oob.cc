#include "oob.h"

#include <cerrno>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace perf {

bool oob::send_blob(const std::vector<uint8_t> &blob)
{
    uint32_t length = uint32_t(blob.size());
    return send(&length, sizeof(length)) && send(blob.data(), blob.size());
}

bool oob::recv_blob(std::vector<uint8_t> *blob)
{
    uint32_t length;
    if (!recv(&length, sizeof(length)) || (length > OOB_MAX_BLOB)) {
        return false;
    }
    blob->resize(length);
    return recv(blob->data(), length);
}

bool oob::send_byte(uint8_t value)
{
    return send(&value, 1);
}

bool oob::recv_byte(uint8_t *value)
{
    return recv(value, 1);
}

bool oob::exchange(const std::vector<uint8_t> &mine, std::vector<uint8_t> *theirs)
{
    if (leader_) {
        return send_blob(mine) && recv_blob(theirs);
    }
    return recv_blob(theirs) && send_blob(mine);
}

bool oob::agree(bool ok_here, const std::string &why_here, bool *ok_there, std::string *why_there)
{
    /* One status byte, then the reason. */
    std::string text = std::string(1, ok_here ? '\1' : '\0') + (ok_here ? "" : why_here);
    std::vector<uint8_t> mine(text.begin(), text.end()), theirs;
    if (!exchange(mine, &theirs) || theirs.empty()) {
        return false;
    }
    *ok_there = (theirs[0] == 1);
    why_there->assign(theirs.begin() + 1, theirs.end());
    return true;
}

bool oob::barrier()
{
    uint8_t theirs;
    if (leader_) {
        return send_byte(1) && recv_byte(&theirs);
    }
    return recv_byte(&theirs) && send_byte(1);
}

fd_oob::~fd_oob()
{
    if (fd_ >= 0) {
        close(fd_);
    }
}

bool fd_oob::send(const void *data, size_t length)
{
    auto *p = static_cast<const uint8_t *>(data);
    while (length > 0) {
        ssize_t n = ::send(fd_, p, length, MSG_NOSIGNAL);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        length -= size_t(n);
    }
    return true;
}

bool fd_oob::recv(void *data, size_t length)
{
    auto *p = static_cast<uint8_t *>(data);
    while (length > 0) {
        ssize_t n = ::read(fd_, p, length);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        length -= size_t(n);
    }
    return true;
}

bool fd_oob::ready()
{
    struct pollfd pfd = {fd_, POLLIN, 0};
    return (poll(&pfd, 1, 0) == 1) && (pfd.revents & (POLLIN | POLLHUP | POLLERR));
}

bool fd_oob::peer_gone()
{
    if (!ready()) {
        return false;
    }
    uint8_t byte;
    ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return (n == 0) || ((n < 0) && (errno != EAGAIN) && (errno != EINTR));
}

void fd_oob::close_write()
{
    shutdown(fd_, SHUT_WR);
}

} // namespace perf
