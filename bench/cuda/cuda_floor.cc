/*
 * The hardware floors the GPU goals of issue 22 are measured against, on
 * the GPU this runs on:
 *   d2d  SIZE: cudaMemcpy device to device, MB/s (2^20 bytes per second,
 *              bytes copied once: as ucx_perftest counts a message);
 *   rtt  8:    a cudaMemcpyAsync round trip of 8 bytes, host to device and
 *              back on one stream, then a stream synchronize, in usec.
 *   turn_htod / turn_dtoh 8: two processes on the GPU taking turns, each
 *              turn one 8-byte copy (pinned host memory) and a pipe hop to
 *              the other, in usec per turn: the floor of a staged ping-pong
 *              between processes (each one-way pays the receiver's copy).
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

/* One side of the two-process turns: copy, tell the other, wait for it. */
void take_turns(int in, int out, bool first, bool to_device, int iters, double *usec)
{
    cudaSetDevice(0);
    void *dev = nullptr, *pinned = nullptr;
    cudaStream_t stream;
    if (!ok(cudaMalloc(&dev, 4096), "cudaMalloc") ||
        !ok(cudaMallocHost(&pinned, 4096), "cudaMallocHost") ||
        !ok(cudaStreamCreate(&stream), "cudaStreamCreate")) {
        _exit(1);
    }
    auto copy = [&] {
        if (to_device) {
            cudaMemcpyAsync(dev, pinned, 8, cudaMemcpyHostToDevice, stream);
        } else {
            cudaMemcpyAsync(pinned, dev, 8, cudaMemcpyDeviceToHost, stream);
        }
        cudaStreamSynchronize(stream);
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
    for (bool to_device : {true, false}) {
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
                    take_turns(ba[0], ab[1], true, to_device, iters, &usec);
                    ssize_t n = write(result[1], &usec, sizeof(usec));
                    _exit((n == ssize_t(sizeof(usec))) ? 0 : 1);
                }
                take_turns(ab[0], ba[1], false, to_device, iters, &usec);
                _exit(0);
            }
        }
        /* Only the children hold the turn pipes: one that fails ends the other's read. */
        for (int fd : {ab[0], ab[1], ba[0], ba[1], result[1]}) {
            close(fd);
        }
        double usec = 0;
        if (read(result[0], &usec, sizeof(usec)) == ssize_t(sizeof(usec))) {
            std::printf("%s 8 %.3f\n", to_device ? "turn_htod" : "turn_dtoh", usec);
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
    two_process_turns();   /* first: nothing here has used CUDA yet */
    std::fflush(stdout);

    constexpr size_t max_size = size_t(64) << 20;
    void *a = nullptr, *b = nullptr, *pinned = nullptr;
    if (!ok(cudaMalloc(&a, max_size), "cudaMalloc") || !ok(cudaMalloc(&b, max_size), "cudaMalloc") ||
        !ok(cudaMallocHost(&pinned, 8), "cudaMallocHost")) {
        return 1;
    }
    for (size_t size : {size_t(1) << 20, size_t(4) << 20, size_t(16) << 20, max_size}) {
        const int iters = int(std::max<size_t>(20, (size_t(2) << 30) / size));
        cudaMemcpy(b, a, size, cudaMemcpyDeviceToDevice);   /* warm-up */
        cudaDeviceSynchronize();
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) {
            cudaMemcpy(b, a, size, cudaMemcpyDeviceToDevice);
        }
        cudaDeviceSynchronize();
        const double secs = seconds_since(start);
        std::printf("d2d %zu %.1f\n", size, double(size) * iters / secs / (1 << 20));
    }

    cudaStream_t stream;
    if (!ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate")) {
        return 1;
    }
    std::vector<char> host(8);
    for (const char *kind : {"rtt", "rtt_pinned"}) {
        char *h = (kind[3] == '\0') ? host.data() : static_cast<char*>(pinned);
        constexpr int iters = 20000;
        for (int i = 0; i < iters / 10; ++i) {   /* warm-up */
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
