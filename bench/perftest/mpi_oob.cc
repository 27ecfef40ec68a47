#include "mpi_oob.h"

#include "modules.h"

#include <cstdlib>

#include <dlfcn.h>

namespace perftest {

struct mpi_oob::api {
    int (*init)(int *rank, int *size);
    int (*send)(const void *data, size_t length);
    int (*recv)(void *data, size_t length);
    int (*ready)();
    void (*finalize)();
};

int launcher_rank()
{
    for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
        const char *value = std::getenv(name);
        if ((value != nullptr) && (*value != '\0')) {
            return std::atoi(value);
        }
    }
    return -1;
}

std::unique_ptr<mpi_oob> mpi_oob::open(std::string *error)
{
    std::string why;
    /* Global: Open MPI's own plugins look for libmpi's symbols. */
    void *handle = open_module("perftest_mpi.so", RTLD_GLOBAL, &why);
    if (handle == nullptr) {
        *error = "started by mpirun, but the MPI bootstrap cannot be loaded (" + why +
                 "; it is built only where mpicc exists)";
        return nullptr;
    }
    auto calls      = std::make_unique<api>();
    calls->init     = reinterpret_cast<int (*)(int *, int *)>(dlsym(handle, "perftest_mpi_init"));
    calls->send     = reinterpret_cast<int (*)(const void *, size_t)>(dlsym(handle,
                                                                            "perftest_mpi_send"));
    calls->recv     = reinterpret_cast<int (*)(void *, size_t)>(dlsym(handle, "perftest_mpi_recv"));
    calls->ready    = reinterpret_cast<int (*)()>(dlsym(handle, "perftest_mpi_ready"));
    calls->finalize = reinterpret_cast<void (*)()>(dlsym(handle, "perftest_mpi_finalize"));
    if (!calls->init || !calls->send || !calls->recv || !calls->ready || !calls->finalize) {
        *error = "the MPI bootstrap module is incomplete";
        return nullptr;
    }
    int rank = -1, size = 0;
    if (calls->init(&rank, &size) != 0) {
        *error = "MPI_Init failed";
        return nullptr;
    }
    if (size != 2) {
        calls->finalize();
        *error = "run it with exactly two ranks (mpirun -np 2), not " + std::to_string(size);
        return nullptr;
    }
    return std::unique_ptr<mpi_oob>(new mpi_oob(std::move(calls), rank));
}

mpi_oob::mpi_oob(std::unique_ptr<api> calls, int rank) :
    perf::oob(rank == 0), calls_(std::move(calls)), rank_(rank)
{
}

mpi_oob::~mpi_oob()
{
    calls_->finalize();
}

bool mpi_oob::send(const void *data, size_t length)
{
    return calls_->send(data, length) == 0;
}

bool mpi_oob::recv(void *data, size_t length)
{
    return calls_->recv(data, length) == 0;
}

bool mpi_oob::ready()
{
    return calls_->ready() != 0;
}

} // namespace perftest
