/*
 * The CUDA module on a GPU: memory-type detection, ucp_mem_map of device
 * memory, the cuda_copy and cuda_ipc transports, and tagged, stream and
 * active messages with device buffers between two processes on one GPU
 * (cuda_ipc rendezvous device to device, host staging otherwise).
 *
 * CUDA may not be used in a child forked after the parent initialised it,
 * so this process never calls CUDA: every check runs in forked children
 * that report back over their sockets. Without a GPU the run exits 77
 * (skipped) with a message. Run with UCX_MODULE_DIR naming the directory
 * of libuct_cuda.so (meson sets it).
 */
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "../ucp/ucp_peer.h"
#include "../uct/uct_test_util.h"

#include <ucs/memory/memtype_registry.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace ucp_test;

namespace {

#define CHILD_CUDA(_call) TEST_CHILD_CHECK((_call) == cudaSuccess)

/* Device memory filled with and checked against the test pattern. */
struct device_buffer {
    void *ptr = nullptr;
    explicit device_buffer(size_t size, bool managed = false)
    {
        if (managed) {
            cudaMallocManaged(&ptr, size);
        } else {
            cudaMalloc(&ptr, size);
        }
    }
    ~device_buffer() { cudaFree(ptr); }
    char *data() const { return static_cast<char *>(ptr); }
};

bool fill_device(void *dest, size_t size, uint64_t seed)
{
    std::vector<uint8_t> host(size);
    fill_pattern(host.data(), size, seed);
    return cudaMemcpy(dest, host.data(), size, cudaMemcpyHostToDevice) == cudaSuccess;
}

bool check_device(const void *src, size_t size, uint64_t seed)
{
    std::vector<uint8_t> host(size);
    return (cudaMemcpy(host.data(), src, size, cudaMemcpyDeviceToHost) == cudaSuccess) &&
           check_pattern(host.data(), size, seed);
}

/* What ucp_ep_print_info says of an ep. */
std::string ep_info(ucp_ep_h ep)
{
    char *text  = nullptr;
    size_t size = 0;
    FILE *out   = open_memstream(&text, &size);
    ucp_ep_print_info(ep, out);
    std::fclose(out);
    std::string result(text, size);
    std::free(text);
    return result;
}

/* Runs `body` in a forked child; its exit code (0: passed). */
int in_child(std::function<int(int)> body)
{
    test::child_process child(std::move(body));
    return child.wait(std::chrono::seconds(240));
}

const char *const tls = "posix,cma,cuda_copy,cuda_ipc";
/* What the tagged-message children connect over (forked: they inherit it). */
const char *g_tag_tls = tls;

enum class kind : uint8_t { host, device, managed };

struct transfer {
    size_t size;
    kind from;
    kind to;
};

std::vector<transfer> transfers()
{
    std::vector<transfer> list;
    for (size_t size :
         {size_t(8), size_t(4096), size_t(65536), size_t(1) << 20, size_t(16) << 20}) {
        list.push_back({size, kind::device, kind::device});
        list.push_back({size, kind::device, kind::host});
        list.push_back({size, kind::host, kind::device});
    }
    list.push_back({65536, kind::managed, kind::device});
    list.push_back({65536, kind::device, kind::managed});
    return list;
}

constexpr size_t max_size = size_t(16) << 20;

struct buffers {
    std::vector<uint8_t> host;
    device_buffer device;
    device_buffer managed;
    buffers() : host(max_size), device(max_size), managed(max_size, true) {}

    char *of(kind k)
    {
        switch (k) {
        case kind::host:
            return reinterpret_cast<char *>(host.data());
        case kind::device:
            return device.data();
        default:
            return managed.data();
        }
    }
};

/* Both children: the GPU, a context and an ep to the other, addresses
 * through the parent. */
int connect_through_parent(int fd, peer &p, uint64_t features, const char *with = tls)
{
    CHILD_CUDA(cudaSetDevice(0));
    TEST_CHILD_CHECK(p.init(with, features) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, p.address()));
    TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
    TEST_CHILD_CHECK(p.connect(remote) == UCS_OK);
    return 0;
}

int tag_sender(int fd)
{
    peer p;
    if (int rc = connect_through_parent(fd, p, UCP_FEATURE_TAG, g_tag_tls)) {
        return rc;
    }
    buffers b;
    const std::vector<transfer> list = transfers();
    for (size_t i = 0; i < list.size(); ++i) {
        const transfer &t = list[i];
        char *src         = b.of(t.from);
        if (t.from == kind::host) {
            fill_pattern(reinterpret_cast<uint8_t *>(src), t.size, i);
        } else {
            TEST_CHILD_CHECK(fill_device(src, t.size, i));
        }
        TEST_CHILD_CHECK(p.send(src, t.size, i) == UCS_OK);
    }
    /* Device-to-device rendezvous has a cuda_ipc lane where it may. */
    const std::string info = ep_info(p.ep);
    TEST_CHILD_CHECK((info.find("cuda_ipc") != std::string::npos) ==
                     (std::strstr(g_tag_tls, "cuda_ipc") != nullptr));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

int tag_receiver(int fd)
{
    peer p;
    if (int rc = connect_through_parent(fd, p, UCP_FEATURE_TAG, g_tag_tls)) {
        return rc;
    }
    buffers b;
    const std::vector<transfer> list = transfers();
    int failures                     = 0;
    for (size_t i = 0; i < list.size(); ++i) {
        const transfer &t = list[i];
        char *dest        = b.of(t.to);
        /* On the default stream, not synchronised: the staging copies are
         * ordered after it (cuda_memtype.h). */
        if (t.to == kind::host) {
            std::memset(dest, 0, t.size);
        } else {
            CHILD_CUDA(cudaMemset(dest, 0, t.size));
        }
        ucp_tag_recv_info_t info{};
        const ucs_status_t status = p.recv(dest, t.size, i, ~ucp_tag_t(0), &info);
        std::vector<uint8_t> got(t.size);
        CHILD_CUDA(cudaMemcpy(got.data(), dest, t.size, cudaMemcpyDefault));
        const bool good = (status == UCS_OK) && (info.length == t.size) &&
                          check_pattern(got.data(), t.size, i);
        if (!good) {
            std::vector<uint8_t> expected(t.size);
            fill_pattern(expected.data(), t.size, i);
            size_t first_bad = 0;
            while ((first_bad < t.size) && (got[first_bad] == expected[first_bad])) {
                ++first_bad;
            }
            std::fprintf(stderr,
                         "receiver: transfer %zu (%zu bytes, %d -> %d): %s, length "
                         "%zu, first wrong byte at %zu\n",
                         i, t.size, int(t.from), int(t.to), ucs_status_string(status), info.length,
                         first_bad);
            ++failures;
        }
    }
    TEST_CHILD_CHECK(failures == 0);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

/* Maps device memory and gives its address and key to the peer, which
 * puts into it and reads it back; checks what landed. */
int rma_target(int fd)
{
    peer p;
    if (int rc = connect_through_parent(fd, p, UCP_FEATURE_RMA)) {
        return rc;
    }
    constexpr size_t size = 4 << 20;
    device_buffer region(size);
    CHILD_CUDA(cudaMemset(region.ptr, 0, size));
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address    = region.ptr;
    mp.length     = size;
    ucp_mem_h memh;
    TEST_CHILD_CHECK(ucp_mem_map(p.context, &mp, &memh) == UCS_OK);
    void *packed;
    size_t packed_size;
    TEST_CHILD_CHECK(ucp_rkey_pack(p.context, memh, &packed, &packed_size) == UCS_OK);
    std::vector<uint8_t> blob(sizeof(uint64_t) + packed_size);
    const uint64_t address = reinterpret_cast<uintptr_t>(region.ptr);
    std::memcpy(blob.data(), &address, sizeof(address));
    std::memcpy(blob.data() + sizeof(address), packed, packed_size);
    ucp_rkey_buffer_release(packed);
    TEST_CHILD_CHECK(test::send_blob(fd, blob));
    uint8_t done = 0;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &done)); /* the peer put and flushed */
    TEST_CHILD_CHECK(check_device(region.ptr, size / 2, 21));
    TEST_CHILD_CHECK(check_device(region.data() + size / 2, 8, 22));
    TEST_CHILD_CHECK(ucp_mem_unmap(p.context, memh) == UCS_OK);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

int rma_origin(int fd)
{
    peer p;
    if (int rc = connect_through_parent(fd, p, UCP_FEATURE_RMA)) {
        return rc;
    }
    std::vector<uint8_t> blob;
    TEST_CHILD_CHECK(test::recv_blob(fd, &blob) && (blob.size() > sizeof(uint64_t)));
    uint64_t address;
    std::memcpy(&address, blob.data(), sizeof(address));
    ucp_rkey_h rkey;
    TEST_CHILD_CHECK(ucp_ep_rkey_unpack(p.ep, blob.data() + sizeof(address), &rkey) == UCS_OK);
    constexpr size_t half = 2 << 20;
    std::vector<uint8_t> host(half);
    fill_pattern(host.data(), half, 21);
    device_buffer mine(half);
    TEST_CHILD_CHECK(fill_device(mine.ptr, 8, 22));
    ucp_request_param_t param{};
    /* Host memory to the peer's GPU, and 8 bytes GPU to GPU. */
    TEST_CHILD_CHECK(p.wait(ucp_put_nbx(p.ep, host.data(), half, address, rkey, &param)) == UCS_OK);
    TEST_CHILD_CHECK(p.wait(ucp_put_nbx(p.ep, mine.ptr, 8, address + half, rkey, &param)) ==
                     UCS_OK);
    TEST_CHILD_CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
    /* Read it back into device memory. */
    CHILD_CUDA(cudaMemset(mine.ptr, 0, half));
    TEST_CHILD_CHECK(p.wait(ucp_get_nbx(p.ep, mine.ptr, half, address, rkey, &param)) == UCS_OK);
    TEST_CHILD_CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
    TEST_CHILD_CHECK(check_device(mine.ptr, half, 21));
    /* Atomics on device memory have no transport: refused. */
    uint64_t value     = 1;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(8);
    TEST_CHILD_CHECK(UCS_PTR_STATUS(ucp_atomic_op_nbx(p.ep, UCP_ATOMIC_OP_ADD, &value, 1, address,
                                                      rkey, &param)) == UCS_ERR_UNSUPPORTED);
    ucp_rkey_destroy(rkey);
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

/* Runs two children that reach each other through this process: their
 * UCP addresses, then one blob from the first to the second, then a byte
 * back; then both are released together. */
void run_pair(int (*first)(int), int (*second)(int), bool relay_blob)
{
    test::child_process a(first);
    test::child_process b(second);
    std::vector<uint8_t> addr_a, addr_b, blob;
    REQUIRE(test::recv_blob(a.fd(), &addr_a));
    REQUIRE(test::recv_blob(b.fd(), &addr_b));
    REQUIRE(test::send_blob(a.fd(), addr_b));
    REQUIRE(test::send_blob(b.fd(), addr_a));
    if (relay_blob) {
        REQUIRE(test::recv_blob(a.fd(), &blob));
        REQUIRE(test::send_blob(b.fd(), blob));
        uint8_t done = 0;
        REQUIRE(test::recv_value(b.fd(), &done));
        REQUIRE(test::send_value(a.fd(), done));
    }
    REQUIRE(test::readable(a.fd(), 240000));
    REQUIRE(test::readable(b.fd(), 240000));
    REQUIRE(test::sync_peer(a.fd()));
    REQUIRE(test::sync_peer(b.fd()));
    CHECK(a.wait(std::chrono::seconds(60)) == 0);
    CHECK(b.wait(std::chrono::seconds(60)) == 0);
}

bool gpu_present()
{
    return in_child([](int) {
               int count = 0;
               return ((cudaGetDeviceCount(&count) == cudaSuccess) && (count > 0)) ? 0 : 1;
           }) == 0;
}

} // namespace

TEST_CASE("detection, context memory types and mapped device memory", "[cuda]")
{
    CHECK(in_child([](int) {
              CHILD_CUDA(cudaSetDevice(0));
              device_buffer dev(1 << 20), managed(1 << 20, true);
              std::vector<char> host(1 << 20);
              peer p;
              TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
              ucp_context_attr_t attr{};
              attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
              TEST_CHILD_CHECK(ucp_context_query(p.context, &attr) == UCS_OK);
              TEST_CHILD_CHECK(attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA));
              TEST_CHILD_CHECK(attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED));

              TEST_CHILD_CHECK(ucs::memtype::detect(dev.data() + 100, 8) == UCS_MEMORY_TYPE_CUDA);
              TEST_CHILD_CHECK(ucs::memtype::detect(managed.data(), 8) ==
                               UCS_MEMORY_TYPE_CUDA_MANAGED);
              TEST_CHILD_CHECK(ucs::memtype::detect(host.data(), 8) == UCS_MEMORY_TYPE_HOST);

              /* Mapping device memory finds its type; ALLOCATE gives device memory. */
              ucp_mem_map_params_t mp{};
              mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
              mp.address    = dev.data();
              mp.length     = 1 << 20;
              ucp_mem_h memh;
              TEST_CHILD_CHECK(ucp_mem_map(p.context, &mp, &memh) == UCS_OK);
              ucp_mem_attr_t mattr{};
              mattr.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE;
              TEST_CHILD_CHECK(ucp_mem_query(memh, &mattr) == UCS_OK);
              TEST_CHILD_CHECK(mattr.mem_type == UCS_MEMORY_TYPE_CUDA);
              TEST_CHILD_CHECK(ucp_mem_unmap(p.context, memh) == UCS_OK);

              for (ucs_memory_type_t type : {UCS_MEMORY_TYPE_CUDA, UCS_MEMORY_TYPE_CUDA_MANAGED}) {
                  mp            = {};
                  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS |
                                  UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
                  mp.length      = 1 << 20;
                  mp.flags       = UCP_MEM_MAP_ALLOCATE;
                  mp.memory_type = type;
                  TEST_CHILD_CHECK(ucp_mem_map(p.context, &mp, &memh) == UCS_OK);
                  mattr.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE | UCP_MEM_ATTR_FIELD_ADDRESS;
                  TEST_CHILD_CHECK(ucp_mem_query(memh, &mattr) == UCS_OK);
                  TEST_CHILD_CHECK(mattr.mem_type == type);
                  cudaPointerAttributes pattr{};
                  TEST_CHILD_CHECK(cudaPointerGetAttributes(&pattr, mattr.address) == cudaSuccess);
                  TEST_CHILD_CHECK(pattr.type == ((type == UCS_MEMORY_TYPE_CUDA) ?
                                                      cudaMemoryTypeDevice :
                                                      cudaMemoryTypeManaged));
                  TEST_CHILD_CHECK(ucp_mem_unmap(p.context, memh) == UCS_OK);
              }
              return 0;
          }) == 0);
}

TEST_CASE("cuda_copy and cuda_ipc move data on the copy engine", "[cuda]")
{
    CHECK(in_child(
              [](int) {
        CHILD_CUDA(cudaSetDevice(0));
        constexpr size_t size = 4 << 20;
        device_buffer dev(size);
        std::vector<uint8_t> host(size), back(size);
        fill_pattern(host.data(), size, 3);

        /* cuda_copy: host -> device by put, device -> host by get. */
        test::uct_entity copy("cuda_copy", "cuda");
        TEST_CHILD_CHECK(copy.ok());
        uct::ep *ep = copy.connect(copy.addresses());
        TEST_CHILD_CHECK(ep != nullptr);
        test::counted_comp comp;
        uct::iov put{host.data(), size, uct::MEM_HANDLE_NULL};
        ucs_status_t status = ep->put_zcopy(&put, 1, reinterpret_cast<uint64_t>(dev.ptr), 0, &comp);
        TEST_CHILD_CHECK(status == UCS_INPROGRESS);
        TEST_CHILD_CHECK(test::poll_until([&] { return comp.fired == 1; },
                                          [&] { copy.progress(); }));
        TEST_CHILD_CHECK(comp.last == UCS_OK);
        TEST_CHILD_CHECK(check_device(dev.ptr, size, 3));
        comp.rearm();
        uct::iov get{back.data(), size, uct::MEM_HANDLE_NULL};
        status = ep->get_zcopy(&get, 1, reinterpret_cast<uint64_t>(dev.ptr), 0, &comp);
        TEST_CHILD_CHECK(status == UCS_INPROGRESS);
        TEST_CHILD_CHECK(test::poll_until([&] { return comp.fired == 2; },
                                          [&] { copy.progress(); }));
        TEST_CHILD_CHECK(back == host);

        /* Operations spread over the iface's streams; a flush waits for all. */
        CHILD_CUDA(cudaMemset(dev.ptr, 0, size));
        constexpr size_t chunk = size / 8;
        for (size_t i = 0; i < 8; ++i) {
            uct::iov piece{host.data() + i * chunk, chunk, uct::MEM_HANDLE_NULL};
            status = ep->put_zcopy(&piece, 1, reinterpret_cast<uint64_t>(dev.data() + i * chunk), 0,
                                   nullptr);
            TEST_CHILD_CHECK(status == UCS_INPROGRESS);
        }
        test::counted_comp flushed;
        status = copy.iface().flush(0, &flushed);
        TEST_CHILD_CHECK(status == UCS_INPROGRESS);
        TEST_CHILD_CHECK(test::poll_until([&] { return flushed.fired == 1; },
                                          [&] { copy.progress(); }));
        TEST_CHILD_CHECK(check_device(dev.ptr, size, 3));
        TEST_CHILD_CHECK(copy.iface().flush(0, &flushed) == UCS_OK);

        /* cuda_ipc: a key of our own device memory; get through it, and a
         * range outside the allocation is refused. */
        test::uct_entity ipc("cuda_ipc", "cuda");
        TEST_CHILD_CHECK(ipc.ok());
        uct::mem_h memh;
        TEST_CHILD_CHECK(ipc.md().mem_reg(dev.ptr, size, 0, &memh) == UCS_OK);
        std::vector<uint8_t> packed(ipc.md().attr().rkey_packed_size);
        TEST_CHILD_CHECK(ipc.md().mkey_pack(memh, packed.data()) == UCS_OK);
        uct::rkey_bundle rkey;
        TEST_CHILD_CHECK(ipc.component().rkey_unpack(packed.data(), packed.size(), &rkey) ==
                         UCS_OK);
        uct::rkey_bundle short_key;
        TEST_CHILD_CHECK(ipc.component().rkey_unpack(packed.data(), packed.size() - 1,
                                                     &short_key) == UCS_ERR_INVALID_PARAM);
        uct::ep *iep = ipc.connect(ipc.addresses());
        TEST_CHILD_CHECK(iep != nullptr);
        std::fill(back.begin(), back.end(), 0);
        test::counted_comp icomp;
        uct::iov iget{back.data(), size / 2, uct::MEM_HANDLE_NULL};
        status = iep->get_zcopy(&iget, 1, reinterpret_cast<uint64_t>(dev.data() + size / 2),
                                rkey.rkey, &icomp);
        TEST_CHILD_CHECK(status == UCS_INPROGRESS);
        TEST_CHILD_CHECK(test::poll_until([&] { return icomp.fired == 1; },
                                          [&] { ipc.progress(); }));
        TEST_CHILD_CHECK(std::memcmp(back.data(), host.data() + size / 2, size / 2) == 0);
        status = iep->get_zcopy(&iget, 1, reinterpret_cast<uint64_t>(dev.data() + size - 8),
                                rkey.rkey, &icomp);
        TEST_CHILD_CHECK(status == UCS_ERR_INVALID_PARAM);
        ipc.component().rkey_release(rkey);
        TEST_CHILD_CHECK(ipc.md().mem_dereg(memh) == UCS_OK);

        /* Host memory is not registered by cuda_ipc. */
        TEST_CHILD_CHECK(ipc.md().mem_reg(host.data(), size, 0, &memh) == UCS_ERR_UNSUPPORTED);
        return 0;
    }) == 0);
}

TEST_CASE("tagged messages with device buffers between two processes on one GPU", "[cuda]")
{
    g_tag_tls = tls;
    run_pair(tag_sender, tag_receiver, false);
}

TEST_CASE("tagged messages with device buffers over host transports only: staged through "
          "pinned bounce buffers, received in pieces",
          "[cuda]")
{
    g_tag_tls = "posix,cma,cuda_copy";
    run_pair(tag_sender, tag_receiver, false);
    g_tag_tls = tls;
}

TEST_CASE("put and get into another process's GPU memory (cuda_ipc)", "[cuda]")
{
    run_pair(rma_target, rma_origin, true);
}

TEST_CASE("stream and active messages with device buffers", "[cuda]")
{
    CHECK(in_child([](int) {
              CHILD_CUDA(cudaSetDevice(0));
              peer p;
              TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_STREAM | UCP_FEATURE_AM) == UCS_OK);
              TEST_CHILD_CHECK(p.connect(p.address()) == UCS_OK);
              constexpr size_t size = 3 << 20;
              device_buffer src(size), dst(size);
              TEST_CHILD_CHECK(fill_device(src.ptr, size, 5));
              CHILD_CUDA(cudaMemset(dst.ptr, 0, size));
              ucp_request_param_t sparam{};
              ucs_status_ptr_t sreq = ucp_stream_send_nbx(p.ep, src.ptr, size, &sparam);
              TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(sreq));
              ucp_request_param_t rparam{};
              rparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
              rparam.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
              size_t length       = 0;
              TEST_CHILD_CHECK(p.wait(ucp_stream_recv_nbx(p.ep, dst.ptr, size, &length, &rparam)) ==
                               UCS_OK);
              TEST_CHILD_CHECK(p.wait(sreq) == UCS_OK);
              TEST_CHILD_CHECK(check_device(dst.ptr, size, 5));

              /* An active message from device memory reaches the handler as host data. */
              struct seen_t {
                  std::vector<uint8_t> data;
                  bool done = false;
              } seen;
              ucp_am_handler_param_t hparam{};
              hparam.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
              hparam.id  = 1;
              hparam.arg = &seen;
              hparam.cb  = [](void *arg, const void *, size_t, void *data, size_t length,
                             const ucp_am_recv_param_t *param) -> ucs_status_t {
                  auto *s = static_cast<seen_t *>(arg);
                  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
                      s->data.assign(static_cast<uint8_t *>(data),
                                      static_cast<uint8_t *>(data) + length);
                  }
                  s->done = true;
                  return UCS_OK;
              };
              TEST_CHILD_CHECK(ucp_worker_set_am_recv_handler(p.worker, &hparam) == UCS_OK);
              TEST_CHILD_CHECK(p.wait(ucp_am_send_nbx(p.ep, 1, nullptr, 0, src.ptr, 6000,
                                                      &sparam)) == UCS_OK);
              TEST_CHILD_CHECK(test::poll_until([&] { return seen.done; },
                                                [&] { ucp_worker_progress(p.worker); }));
              TEST_CHILD_CHECK(check_pattern(seen.data.data(), seen.data.size(), 5));
              TEST_CHILD_CHECK(seen.data.size() == 6000);
              return 0;
          }) == 0);
}

int main(int argc, char **argv)
{
    if (!gpu_present()) {
        std::printf("skipped: no CUDA device here (the CUDA tests need a GPU)\n");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
