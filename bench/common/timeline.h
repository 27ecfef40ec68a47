/*
 * Per-iteration timestamps of one measured run: one TSC read and one store
 * per iteration, into memory reserved before the clock starts. Every tool
 * computes its statistics (percentiles, averages, rates) from these after
 * the run, and an optional reporter is called about once per interval
 * while the run goes on (ucx_perftest's progress lines). Runs longer than
 * MAX_KEPT iterations keep the stamps of the last MAX_KEPT only (a ring):
 * their percentiles describe the end of the run, their totals all of it.
 */
#ifndef BENCH_COMMON_TIMELINE_H
#define BENCH_COMMON_TIMELINE_H

#include "clock.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace perf {

class timeline {
public:
    using report_fn = void (*)(void *arg, const timeline &t);

    static constexpr uint64_t MAX_KEPT = uint64_t(1) << 24;

    /* Reserves room for `iters` iterations (allocates: call before start). */
    void prepare(uint64_t iters)
    {
        uint64_t room = 2;
        while ((room < iters + 1) && (room < MAX_KEPT)) {
            room *= 2;
        }
        stamps_.assign(room, 0);
        mask_  = room - 1;
        count_ = 0;
    }

    void set_reporter(report_fn fn, void *arg, uint64_t interval_ticks)
    {
        report_   = fn;
        arg_      = arg;
        interval_ = interval_ticks;
    }

    void start()
    {
        count_ = 0;
        rate_.start();
        start_       = ticks();
        stamps_[0]   = start_;
        next_report_ = (report_ != nullptr) ? start_ + interval_ :
                                              std::numeric_limits<uint64_t>::max();
    }

    /* Marks the end of one iteration. */
    inline void iteration_done()
    {
        uint64_t now              = ticks();
        stamps_[++count_ & mask_] = now;
        if (__builtin_expect(now >= next_report_, 0)) {
            report_(arg_, *this);
            next_report_ = ticks() + interval_;
        }
    }

    /* The end of the run, which may come after the last iteration (a
     * bandwidth test waits for its sends to complete). */
    void stop()
    {
        end_ = ticks();
        rate_.stop();
    }

    uint64_t done() const { return count_; }
    /* The first iteration whose duration is still known. */
    uint64_t first_kept() const { return (count_ > mask_) ? count_ - mask_ : 0; }
    /* When iteration i ended (i = 0: the start); i >= first_kept(). */
    uint64_t stamp(uint64_t i) const { return stamps_[i & mask_]; }
    /* Ticks of iteration i (0-based), i >= first_kept(). */
    uint64_t duration(uint64_t i) const { return stamp(i + 1) - stamp(i); }
    uint64_t start_stamp() const { return start_; }
    uint64_t end_stamp() const { return end_; }
    /* Ticks from start() to stop(). */
    uint64_t total_ticks() const { return end_ - start_; }
    double seconds_per_tick() const { return rate_.seconds_per_tick(); }
    double elapsed_s() const { return rate_.elapsed_s(); }

private:
    std::vector<uint64_t> stamps_;
    uint64_t mask_        = 0;
    uint64_t count_       = 0;
    uint64_t start_       = 0;
    uint64_t end_         = 0;
    uint64_t next_report_ = 0;
    uint64_t interval_    = 0;
    report_fn report_     = nullptr;
    void *arg_            = nullptr;
    tick_rate rate_;
};

} // namespace perf

#endif
