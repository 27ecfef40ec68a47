/*
 * A uct worker is the progress engine shared by the interfaces of one UCP
 * worker: progress() polls each active interface once. It also carries the
 * async context used for connection management and wakeup.
 */
#ifndef UCT_BASE_UCT_WORKER_H
#define UCT_BASE_UCT_WORKER_H

#include <uct/base/uct_iface.h>
#include <ucs/type/thread_mode.h>

#include <algorithm>
#include <vector>

namespace ucs {
class async_context;
}

namespace uct {

class worker {
public:
    worker(ucs::async_context *async, ucs_thread_mode_t thread_mode) :
        async_(async), thread_mode_(thread_mode)
    {
    }

    worker(const worker &)            = delete;
    worker &operator=(const worker &) = delete;

    ucs::async_context *async() const { return async_; }
    ucs_thread_mode_t thread_mode() const { return thread_mode_; }

    /* Polls every registered interface once; returns the events handled.
     * By index: an interface may register itself (or leave) from inside a
     * progress call, which moves the list. */
    unsigned progress()
    {
        unsigned count = 0;
        for (size_t n = 0; n < progress_list_.size(); ++n) {
            count += progress_list_[n]->progress();
        }
        return count;
    }

    void progress_register(iface *i)
    {
        if (std::find(progress_list_.begin(), progress_list_.end(), i) == progress_list_.end()) {
            progress_list_.push_back(i);
        }
    }

    void progress_unregister(iface *i)
    {
        progress_list_.erase(std::remove(progress_list_.begin(), progress_list_.end(), i),
                             progress_list_.end());
    }

private:
    ucs::async_context *async_;
    ucs_thread_mode_t thread_mode_;
    std::vector<iface *> progress_list_;
};

} // namespace uct

#endif
