/*
 * The out-of-band channel under mpirun: MPI messages between ranks 0 and 1,
 * through the perftest_mpi module (built with mpicc, opened only here).
 */
#ifndef BENCH_PERFTEST_MPI_OOB_H
#define BENCH_PERFTEST_MPI_OOB_H

#include "../common/oob.h"

#include <memory>
#include <string>

namespace perftest {

/* The rank from the launcher's environment (Open MPI, or a PMI launcher
 * such as MPICH's hydra); -1 when not started by mpirun. */
int launcher_rank();

class mpi_oob : public perf::oob {
public:
    /* Initializes MPI; nullptr with *error when it cannot, or when the job
     * does not have exactly two ranks. */
    static std::unique_ptr<mpi_oob> open(std::string *error);
    ~mpi_oob() override;

    bool send(const void *data, size_t length) override;
    bool recv(void *data, size_t length) override;
    bool ready() override;
    /* MPI ends the whole job when a rank dies. */
    bool peer_gone() override { return false; }

    int rank() const { return rank_; }

private:
    struct api;
    mpi_oob(std::unique_ptr<api> calls, int rank);

    std::unique_ptr<api> calls_;
    int rank_;
};

} // namespace perftest

#endif
