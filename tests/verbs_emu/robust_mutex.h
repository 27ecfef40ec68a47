/*
 * Process-shared robust mutexes: a process killed while holding one (a
 * producer copying into a ring, an atomic in flight) must not wedge every
 * other process. The next locker gets EOWNERDEAD and takes over; whatever
 * the dead owner was doing was not published yet.
 */
#ifndef VERBS_EMU_ROBUST_MUTEX_H
#define VERBS_EMU_ROBUST_MUTEX_H

#include <pthread.h>

namespace verbs_emu {

/* 0 or an errno value. */
int robust_mutex_init(pthread_mutex_t *mutex);
/* 0 (also after taking over from a dead owner) or an errno value. */
int robust_mutex_lock(pthread_mutex_t *mutex);
void robust_mutex_unlock(pthread_mutex_t *mutex);

class robust_guard {
public:
    explicit robust_guard(pthread_mutex_t *mutex) :
        mutex_(mutex), locked_(robust_mutex_lock(mutex) == 0)
    {
    }
    ~robust_guard()
    {
        if (locked_) {
            robust_mutex_unlock(mutex_);
        }
    }
    bool locked() const { return locked_; }
    robust_guard(const robust_guard &)            = delete;
    robust_guard &operator=(const robust_guard &) = delete;

private:
    pthread_mutex_t *mutex_;
    bool locked_;
};

} // namespace verbs_emu

#endif
