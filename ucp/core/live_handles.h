/*
 * Handles the library gave the application and that it has not released
 * yet. The calls that take such a handle back (ucp_rkey_destroy,
 * ucp_mem_unmap) and the other calls that read through one outside the
 * data path look it up first, so a double release, a stale copy or a wild
 * pointer is reported instead of dereferenced. Runtimes do this: Open MPI
 * 4.1.4's OpenSHMEM destroys an rkey whose handle it reads from memory it
 * already freed.
 */
#ifndef UCP_CORE_LIVE_HANDLES_H
#define UCP_CORE_LIVE_HANDLES_H

#include <mutex>
#include <unordered_set>

namespace ucp {

template <typename T>
class live_handles {
public:
    void add(const T *handle)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        handles_.insert(handle);
    }

    /* false if the handle was not live. */
    bool remove(const T *handle)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return handles_.erase(handle) == 1;
    }

    bool contains(const T *handle) const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return handles_.count(handle) == 1;
    }

    /* The process-wide set of handles of type T (never destroyed: handles
     * may be released from atexit handlers and static destructors). */
    static live_handles &instance()
    {
        static auto *set = new live_handles;
        return *set;
    }

private:
    mutable std::mutex mutex_;
    std::unordered_set<const T *> handles_;
};

} // namespace ucp

#endif
