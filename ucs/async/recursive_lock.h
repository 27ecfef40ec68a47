/*
 * A recursive mutex that also knows its owner, so that callers can ask "do I
 * hold it, and how deeply" without touching the mutex. The async context uses
 * it as the owner's critical section: block()/unblock() are one owner check
 * and, the first time, one uncontended mutex lock.
 */
#ifndef UCS_ASYNC_RECURSIVE_LOCK_H
#define UCS_ASYNC_RECURSIVE_LOCK_H

#include <ucs/sys/compiler_def.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace ucs {

class recursive_lock {
public:
    recursive_lock()                                  = default;
    recursive_lock(const recursive_lock &)            = delete;
    recursive_lock &operator=(const recursive_lock &) = delete;

    void lock()
    {
        if (owned_by_me()) {
            ++m_depth;
            return;
        }
        m_mutex.lock();
        take_ownership();
    }

    bool try_lock()
    {
        if (owned_by_me()) {
            ++m_depth;
            return true;
        }
        if (!m_mutex.try_lock()) {
            return false;
        }
        take_ownership();
        return true;
    }

    void unlock()
    {
        if (--m_depth == 0) {
            m_owner.store(std::thread::id(), std::memory_order_relaxed);
            m_mutex.unlock();
        }
    }

    /* Releases every level the caller holds and returns how many there were
     * (0 if it held none), for relock(): lets a thread wait for another one
     * that needs the lock, without giving up its critical section for good. */
    unsigned unlock_all()
    {
        const unsigned depth = depth_by_me();
        if (depth > 0) {
            m_depth = 1;
            unlock();
        }
        return depth;
    }

    void relock(unsigned depth)
    {
        if (depth > 0) {
            lock();
            m_depth = depth;
        }
    }

    /* Only the owner can ever read its own id here, so relaxed is enough. */
    bool owned_by_me() const
    {
        return m_owner.load(std::memory_order_relaxed) == std::this_thread::get_id();
    }

    /* How many times the calling thread holds the lock (0 if it does not). */
    unsigned depth_by_me() const { return owned_by_me() ? m_depth : 0; }

private:
    void take_ownership()
    {
        m_owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
        m_depth = 1;
    }

    std::mutex m_mutex;
    std::atomic<std::thread::id> m_owner{};
    unsigned m_depth = 0; /* written only by the owner */
};

} // namespace ucs

#endif
