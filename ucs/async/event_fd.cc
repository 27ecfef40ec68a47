#include <ucs/async/event_fd.h>

#include <ucs/debug/log.h>

#include <cerrno>
#include <sys/eventfd.h>
#include <unistd.h>
#include <utility>

namespace ucs {

event_fd::~event_fd()
{
    close();
}

event_fd::event_fd(event_fd &&other) noexcept :
    m_fd(std::exchange(other.m_fd, -1)), m_signalled(other.m_signalled.exchange(false))
{
}

event_fd &event_fd::operator=(event_fd &&other) noexcept
{
    if (this != &other) {
        close();
        m_fd = std::exchange(other.m_fd, -1);
        m_signalled.store(other.m_signalled.exchange(false));
    }
    return *this;
}

ucs_status_t event_fd::open()
{
    if (is_open()) {
        return UCS_ERR_ALREADY_EXISTS;
    }

    m_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m_fd < 0) {
        ucs_error("eventfd() failed: %m");
        return (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

void event_fd::close()
{
    if (is_open()) {
        ::close(m_fd);
        m_fd = -1;
    }
}

ucs_status_t event_fd::signal() const
{
    if (!is_open()) {
        return UCS_ERR_INVALID_PARAM;
    }

    const uint64_t one = 1;
    for (;;) {
        const ssize_t ret = ::write(m_fd, &one, sizeof(one));
        if ((ret == static_cast<ssize_t>(sizeof(one))) || (errno == EAGAIN)) {
            /* Written, or the counter saturated (readable anyway). */
            m_signalled.store(true, std::memory_order_release);
            return UCS_OK;
        }
        if (errno == EINTR) {
            continue;
        }
        ucs_error("eventfd %d write failed: %m", m_fd);
        return UCS_ERR_IO_ERROR;
    }
}

uint64_t event_fd::drain() const
{
    if (!is_open()) {
        return 0;
    }

    /* One read returns and clears the whole counter; retry only on EINTR. */
    uint64_t count = 0;
    for (;;) {
        const ssize_t ret = ::read(m_fd, &count, sizeof(count));
        if (ret == static_cast<ssize_t>(sizeof(count))) {
            return count;
        }
        if ((ret < 0) && (errno == EINTR)) {
            continue;
        }
        if ((ret < 0) && (errno != EAGAIN)) {
            ucs_error("eventfd %d read failed: %m", m_fd);
        }
        return 0;
    }
}

bool event_fd::drain_signalled() const
{
    if (!m_signalled.exchange(false, std::memory_order_acq_rel)) {
        return false;
    }
    drain();
    return true;
}

} // namespace ucs
