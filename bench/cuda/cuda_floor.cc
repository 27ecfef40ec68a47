/*
 * The hardware floors the GPU goals of issue 22 are measured against, on
 * the GPU this runs on:
 *   d2d  SIZE: cudaMemcpy device to device, MB/s (2^20 bytes per second,
 *              bytes copied once: as ucx_perftest counts a message);
 *   dtoh_pinned / htod_pinned SIZE: cudaMemcpy between device memory and
 *              pinned host memory, MB/s: the stages of a message staged
 *              through host memory (the host copy between them is the
 *              third, measured by bench/compare's memcpy floor);
 *   rtt  8:    a cudaMemcpyAsync round trip of 8 bytes, host to device and
 *              back on one stream, then a stream synchronize, in usec.
 *   turn_<kind> SIZE: two processes on the GPU taking turns, each turn one
 *              copy and a pipe hop to the other, in usec per turn: the floor
 *              of a ping-pong between processes (each one-way pays the
 *              receiver's copy). Kinds: htod and dtoh (pinned host memory),
 *              d2d (within the process's device memory), htod_mapped (from
 *              pinned host memory through its device address, as a device
 *              to device copy).
 * One line per figure: "<name> <size> <value>". The two-process figures
 * come first: a process that has used CUDA cannot fork a CUDA user.
 */
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

double seconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "cuda_floor: %s: %s\n", what, cudaGetErrorString(e));
        return false;
    }
    return true;
}

enum class turn_kind { htod, dtoh, d2d, htod_mapped };

struct turn_case {
    turn_kind kind;
    const char *name;
    size_t size;
};

constexpr turn_case turn_cases[] = {
    {turn_kind::htod, "htod", 8},     {turn_kind::dtoh, "dtoh", 8},
    {turn_kind::d2d, "d2d", 8},       {turn_kind::htod_mapped, "htod_mapped", 8},
    {turn_kind::htod, "htod", 65536},
};

/* One side of the two-process turns: copy, tell the other, wait for it. */
void take_turns(int in, int out, bool first, const turn_case &tc, int iters, double *usec)
{
    cudaSetDevice(0);
    constexpr size_t buffer_size = 1 << 20;
    char *dev = nullptr, *pinned = nullptr, *pinned_dev = nullptr;
    cudaStream_t stream;
    if (!ok(cudaMalloc(&dev, buffer_size), "cudaMalloc") ||
        !ok(cudaHostAlloc(&pinned, buffer_size, cudaHostAllocMapped), "cudaHostAlloc") ||
        !ok(cudaHostGetDevicePointer(&pinned_dev, pinned, 0), "cudaHostGetDevicePointer") ||
        !ok(cudaStreamCreate(&stream), "cudaStreamCreate")) {
        _exit(1);
    }
    auto copy = [&] {
        cudaError_t e = cudaSuccess;
        switch (tc.kind) {
        case turn_kind::htod:
            e = cudaMemcpyAsync(dev, pinned, tc.size, cudaMemcpyHostToDevice, stream);
            break;
        case turn_kind::dtoh:
            e = cudaMemcpyAsync(pinned, dev, tc.size, cudaMemcpyDeviceToHost, stream);
            break;
        case turn_kind::d2d:
            e = cudaMemcpyAsync(dev, dev + (buffer_size / 2), tc.size, cudaMemcpyDeviceToDevice,
                                stream);
            break;
        case turn_kind::htod_mapped:
            e = cudaMemcpyAsync(dev, pinned_dev, tc.size, cudaMemcpyDeviceToDevice, stream);
            break;
        }
        if (!ok(e, tc.name) || !ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) {
            _exit(1);
        }
    };
    char token = 0;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
        if (!first && (read(in, &token, 1) != 1)) {
            _exit(1);
        }
        copy();
        if ((write(out, &token, 1) != 1) || (first && (read(in, &token, 1) != 1))) {
            _exit(1);
        }
    }
    *usec = seconds_since(start) / iters / 2 * 1e6;
    cudaFree(dev);
    cudaFreeHost(pinned);
}

/* Both sides in children of this process, which must not have used CUDA
 * (a child forked after it did could not); the first reports the figure. */
void two_process_turns()
{
    for (const turn_case &tc : turn_cases) {
        int ab[2], ba[2], result[2];
        if ((pipe(ab) != 0) || (pipe(ba) != 0) || (pipe(result) != 0)) {
            return;
        }
        constexpr int iters = 3000;
        pid_t pids[2];
        for (int side = 0; side < 2; ++side) {
            pids[side] = fork();
            if (pids[side] == 0) {
                /* Each side keeps the ends it uses, so the other's exit ends its read. */
                close(result[0]);
                close((side == 0) ? ab[0] : ba[0]);
                close((side == 0) ? ba[1] : ab[1]);
                double usec = 0;
                if (side == 0) {
                    take_turns(ba[0], ab[1], true, tc, iters, &usec);
                    ssize_t n = write(result[1], &usec, sizeof(usec));
                    _exit((n == ssize_t(sizeof(usec))) ? 0 : 1);
                }
                take_turns(ab[0], ba[1], false, tc, iters, &usec);
                _exit(0);
            }
        }
        /* Only the children hold the turn pipes: one that fails ends the other's read. */
        for (int fd : {ab[0], ab[1], ba[0], ba[1], result[1]}) {
            close(fd);
        }
        double usec = 0;
        if (read(result[0], &usec, sizeof(usec)) == ssize_t(sizeof(usec))) {
            std::printf("turn_%s %zu %.3f\n", tc.name, tc.size, usec);
        }
        close(result[0]);
        for (pid_t pid : pids) {
            waitpid(pid, nullptr, 0);
        }
    }
}

} // namespace

int main()
{
    two_process_turns(); /* first: nothing here has used CUDA yet */
    std::fflush(stdout);

    constexpr size_t max_size = size_t(64) << 20;
    void *a = nullptr, *b = nullptr, *pinned = nullptr;
    if (!ok(cudaMalloc(&a, max_size), "cudaMalloc") ||
        !ok(cudaMalloc(&b, max_size), "cudaMalloc") ||
        !ok(cudaMallocHost(&pinned, max_size), "cudaMallocHost")) {
        return 1;
    }
    for (size_t size : {size_t(1) << 20, size_t(4) << 20, size_t(16) << 20, max_size}) {
        const int iters = int(std::max<size_t>(20, (size_t(2) << 30) / size));
        cudaMemcpy(b, a, size, cudaMemcpyDeviceToDevice); /* warm-up */
        cudaDeviceSynchronize();
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) {
            cudaMemcpy(b, a, size, cudaMemcpyDeviceToDevice);
        }
        cudaDeviceSynchronize();
        const double secs = seconds_since(start);
        std::printf("d2d %zu %.1f\n", size, double(size) * iters / secs / (1 << 20));
    }
    for (size_t size : {size_t(1) << 20, size_t(4) << 20, size_t(16) << 20}) {
        const int iters = int(std::max<size_t>(20, (size_t(1) << 30) / size));
        for (bool to_device : {false, true}) {
            auto copy = [&] {
                cudaMemcpy(to_device ? a : pinned, to_device ? pinned : a, size,
                           to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
            };
            copy(); /* warm-up */
            auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < iters; ++i) {
                copy();
            }
            const double secs = seconds_since(start);
            std::printf("%s %zu %.1f\n", to_device ? "htod_pinned" : "dtoh_pinned", size,
                        double(size) * iters / secs / (1 << 20));
        }
    }

    cudaStream_t stream;
    if (!ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate")) {
        return 1;
    }
    std::vector<char> host(8);
    for (const char *kind : {"rtt", "rtt_pinned"}) {
        char *h             = (kind[3] == '\0') ? host.data() : static_cast<char *>(pinned);
        constexpr int iters = 20000;
        for (int i = 0; i < iters / 10; ++i) { /* warm-up */
            cudaMemcpyAsync(a, h, 8, cudaMemcpyHostToDevice, stream);
            cudaMemcpyAsync(h, a, 8, cudaMemcpyDeviceToHost, stream);
            cudaStreamSynchronize(stream);
        }
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) {
            cudaMemcpyAsync(a, h, 8, cudaMemcpyHostToDevice, stream);
            cudaMemcpyAsync(h, a, 8, cudaMemcpyDeviceToHost, stream);
            cudaStreamSynchronize(stream);
        }
        std::printf("%s 8 %.3f\n", kind, seconds_since(start) / iters * 1e6);
    }
    cudaStreamDestroy(stream);
    cudaFree(a);
    cudaFree(b);
    cudaFreeHost(pinned);
    return 0;
}
