/*
 * Two-process RMA and atomic tests: one process (the initiator, the test
 * runner) reaches memory another one (the target, a forked child, or the
 * runner itself for loopback) mapped with ucp_mem_map, either allocated by
 * UCP (a shared segment where posix/sysv run) or the application's own
 * memory registered. The initiator checks what arrived by asking the target
 * over the test socket (commands below), never through the path under test.
 */
#ifndef TEST_UCP_RMA_TEST_UTIL_H
#define TEST_UCP_RMA_TEST_UTIL_H

#include "ucp_peer.h"

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace rma_test {

using ucp_test::peer;

constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                              UCP_FEATURE_AMO64;

enum class memory { allocated, registered };

inline const char *memory_name(memory kind)
{
    return (kind == memory::allocated) ? "allocated" : "registered";
}

/* Where the tests run: transports and memory kinds. "sysv" alone has no
 * lane for registered memory, so its operations are emulated. */
struct config {
    const char *tls;
    memory kind;
};

inline const std::vector<config> &two_process_configs()
{
    static const std::vector<config> configs = {
        {"posix,cma", memory::allocated}, {"posix,cma", memory::registered},
        {"sysv,cma", memory::allocated},  {"sysv,cma", memory::registered},
        {"tcp", memory::allocated},       {"tcp", memory::registered},
        {"sysv", memory::registered},
    };
    return configs;
}

inline const std::vector<config> &loopback_configs()
{
    static const std::vector<config> configs = {
        {"self", memory::allocated},      {"self", memory::registered},
        {"posix,cma", memory::allocated}, {"posix,cma", memory::registered},
        {"tcp", memory::registered},
    };
    return configs;
}

/* A region this process exposes, and its packed remote key. */
class region {
public:
    region()                          = default;
    region(const region &)            = delete;
    region &operator=(const region &) = delete;

    ~region()
    {
        if (memh_ != nullptr) {
            ucp_mem_unmap(context_, memh_);
        }
        std::free(own_);
    }

    ucs_status_t map(ucp_context_h context, memory kind, size_t length)
    {
        context_ = context;
        ucp_mem_map_params_t params{};
        params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        params.length = length;
        if (kind == memory::allocated) {
            params.flags = UCP_MEM_MAP_ALLOCATE;
        } else {
            own_ = std::aligned_alloc(64, (length + 63) / 64 * 64);
            if (own_ == nullptr) {
                return UCS_ERR_NO_MEMORY;
            }
            std::memset(own_, 0, length);
            params.address = own_;
        }
        ucs_status_t status = ucp_mem_map(context, &params, &memh_);
        if (status != UCS_OK) {
            memh_ = nullptr;
            return status;
        }
        ucp_mem_attr_t attr{};
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
        status          = ucp_mem_query(memh_, &attr);
        if (status != UCS_OK) {
            return status;
        }
        data_   = static_cast<uint8_t *>(attr.address);
        length_ = length;
        void *buffer;
        size_t size;
        status = ucp_rkey_pack(context, memh_, &buffer, &size);
        if (status != UCS_OK) {
            return status;
        }
        key_.assign(static_cast<uint8_t *>(buffer), static_cast<uint8_t *>(buffer) + size);
        ucp_rkey_buffer_release(buffer);
        return UCS_OK;
    }

    /* Unmaps now (the destructor then only frees the memory). */
    void unmap()
    {
        if (memh_ != nullptr) {
            ucp_mem_unmap(context_, memh_);
            memh_ = nullptr;
        }
    }

    ucp_mem_h memh() const { return memh_; }
    uint8_t *data() const { return data_; }
    uint64_t address() const { return reinterpret_cast<uintptr_t>(data_); }
    size_t length() const { return length_; }
    const std::vector<uint8_t> &key() const { return key_; }

private:
    ucp_context_h context_ = nullptr;
    ucp_mem_h memh_        = nullptr;
    void *own_             = nullptr;
    uint8_t *data_         = nullptr;
    size_t length_         = 0;
    std::vector<uint8_t> key_;
};

// clang-format off
/* What the initiator asks the target to do with its region. */
enum class command_type : uint32_t {
    fill,      /* fill_pattern(offset, length, seed = value) */
    check,     /* replies 1 if check_pattern(offset, length, seed = value) */
    read,      /* replies the `size`-byte word at offset */
    write,     /* stores value as a `size`-byte word at offset */
    hold,      /* replies, then waits for the next command without progress */
    ping,      /* replies (and ends a hold) */
    watch,     /* progresses until the word at value2 (flag) reaches `length`;
                  replies how often the word at offset was below the flag */
    exit,
    custom     /* first type a test's own target loop may define */
};
// clang-format on

struct command {
    command_type type;
    uint32_t size;
    uint64_t offset;
    uint64_t length;
    uint64_t value;
    uint64_t value2;
};

/* A 4- or 8-byte word; atomic where aligned (atomics target it meanwhile). */
inline uint64_t load_word(const uint8_t *p, uint32_t size)
{
    const bool aligned = (reinterpret_cast<uintptr_t>(p) % size) == 0;
    if (size == 4) {
        uint32_t value;
        if (aligned) {
            value = __atomic_load_n(reinterpret_cast<const uint32_t *>(p), __ATOMIC_ACQUIRE);
        } else {
            std::memcpy(&value, p, sizeof(value));
        }
        return value;
    }
    uint64_t value;
    if (aligned) {
        value = __atomic_load_n(reinterpret_cast<const uint64_t *>(p), __ATOMIC_ACQUIRE);
    } else {
        std::memcpy(&value, p, sizeof(value));
    }
    return value;
}

inline void store_word(uint8_t *p, uint32_t size, uint64_t value)
{
    const bool aligned = (reinterpret_cast<uintptr_t>(p) % size) == 0;
    if (size == 4) {
        const auto value32 = uint32_t(value);
        if (aligned) {
            __atomic_store_n(reinterpret_cast<uint32_t *>(p), value32, __ATOMIC_RELEASE);
        } else {
            std::memcpy(p, &value32, sizeof(value32));
        }
    } else if (aligned) {
        __atomic_store_n(reinterpret_cast<uint64_t *>(p), value, __ATOMIC_RELEASE);
    } else {
        std::memcpy(p, &value, sizeof(value));
    }
}

/* Executes one command on local memory; *reply gets the answer. */
inline bool execute(peer &p, const region &r, const command &c, uint64_t *reply)
{
    if ((c.offset > r.length()) || (c.length > r.length() - c.offset) ||
        ((c.type == command_type::read || c.type == command_type::write) &&
         (((c.size != 4) && (c.size != 8)) || (c.offset + c.size > r.length())))) {
        return false;
    }
    uint8_t *at = r.data() + c.offset;
    *reply      = 0;
    switch (c.type) {
    case command_type::fill:
        ucp_test::fill_pattern(at, c.length, c.value);
        break;
    case command_type::check:
        *reply = ucp_test::check_pattern(at, c.length, c.value) ? 1 : 0;
        break;
    case command_type::read:
        *reply = load_word(at, c.size);
        break;
    case command_type::write:
        store_word(at, c.size, c.value);
        break;
    case command_type::watch: {
        if (c.value2 + 8 > r.length()) {
            return false;
        }
        const uint8_t *flag = r.data() + c.value2;
        uint64_t seen       = 0;
        while (seen < c.length) {
            ucp_worker_progress(p.worker);
            seen = load_word(flag, 8);
            /* The flag went out after the counter's update (fence). */
            if (load_word(at, 8) < seen) {
                ++*reply;
            }
        }
        break;
    }
    default:
        break;
    }
    return true;
}

/*
 * Target side: serves commands on `fd` until exit, progressing meanwhile.
 * `custom` handles command types from command_type::custom on: it returns
 * 0 when it sent its own reply, or the line of a failed check.
 */
template <typename Custom>
int serve(peer &p, const region &r, int fd, Custom &&custom)
{
    bool progress = true;
    for (;;) {
        command c;
        TEST_CHILD_CHECK(progress ? p.recv_value_progress(fd, &c) : test::recv_value(fd, &c));
        progress = true;
        if (c.type == command_type::exit) {
            return 0;
        }
        if (c.type >= command_type::custom) {
            const int failed = custom(c);
            if (failed != 0) {
                return failed;
            }
            continue;
        }
        uint64_t reply;
        TEST_CHILD_CHECK(execute(p, r, c, &reply));
        TEST_CHILD_CHECK(test::send_value(fd, reply));
        if (c.type == command_type::hold) {
            progress = false;
        }
    }
}

inline int serve(peer &p, const region &r, int fd)
{
    return serve(p, r, fd, [](const command &) { return __LINE__; });
}

/* A blob from the socket, progressing the worker while it is on its way. */
inline bool recv_blob_progress(peer &p, int fd, std::vector<uint8_t> *blob)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    while (::poll(&pfd, 1, 0) == 0) {
        ucp_worker_progress(p.worker);
    }
    return test::recv_blob(fd, blob);
}

/* Target child: connects, maps, sends its key and serves. */
inline int target_child(int fd, const char *tls, memory kind, size_t length)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, features) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    region r;
    TEST_CHILD_CHECK(r.map(p.context, kind, length) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, r.key()));
    TEST_CHILD_CHECK(test::send_value(fd, r.address()));
    return serve(p, r, fd);
}

/*
 * The initiator's view of a target: an ep and an unpacked key to the
 * target's region, and the commands to look at it. Loopback: the target
 * is this process (its ep goes to its own worker).
 */
class session {
public:
    /* Two processes: the child runs `body` (default: target_child). */
    ucs_status_t start(const config &cfg, size_t length)
    {
        const char *tls   = cfg.tls;
        const memory kind = cfg.kind;
        return start_with(cfg, length, [=](int fd) { return target_child(fd, tls, kind, length); });
    }

    template <typename Body>
    ucs_status_t start_with(const config &cfg, size_t length, Body &&body)
    {
        ucs_status_t status = p.init(cfg.tls, features);
        if (status != UCS_OK) {
            return status;
        }
        child = std::make_unique<test::child_process>(std::forward<Body>(body));
        std::vector<uint8_t> remote;
        if (!test::send_blob(child->fd(), p.address()) || !test::recv_blob(child->fd(), &remote)) {
            return UCS_ERR_IO_ERROR;
        }
        status = p.connect(remote, err_mode, on_error, this);
        if (status != UCS_OK) {
            return status;
        }
        if (!test::recv_blob(child->fd(), &packed_key) ||
            !p.recv_value_progress(child->fd(), &base)) {
            return UCS_ERR_IO_ERROR;
        }
        this->length = length;
        return ucp_ep_rkey_unpack(p.ep, packed_key.data(), &rkey);
    }

    ucs_status_t start_loopback(const config &cfg, size_t length)
    {
        ucs_status_t status = p.init(cfg.tls, features);
        if (status == UCS_OK) {
            status = p.connect(p.address());
        }
        if (status == UCS_OK) {
            local  = std::make_unique<region>();
            status = local->map(p.context, cfg.kind, length);
        }
        if (status != UCS_OK) {
            return status;
        }
        base         = local->address();
        this->length = length;
        packed_key   = local->key();
        return ucp_ep_rkey_unpack(p.ep, packed_key.data(), &rkey);
    }

    ~session() { finish(); }

    /* Ends the target; returns the child's exit code (0 for loopback). */
    int finish()
    {
        if (rkey != nullptr) {
            ucp_rkey_destroy(rkey);
            rkey = nullptr;
        }
        if (child != nullptr) {
            command c{command_type::exit, 0, 0, 0, 0, 0};
            test::send_value(child->fd(), c);
            child_status = child->wait();
            child.reset();
        }
        local.reset(); /* before the context goes */
        return child_status;
    }

    /* Kills the target process (it gets no exit command then). */
    void kill_target()
    {
        child->kill(SIGKILL);
        child_status = child->wait();
        child.reset();
    }

    /* Sends a command and returns the reply (progressing meanwhile). */
    uint64_t ask(const command &c)
    {
        uint64_t reply = ~uint64_t(0);
        if (local != nullptr) {
            execute(p, *local, c, &reply);
            return reply;
        }
        if (child == nullptr) {
            return reply;
        }
        if (!test::send_value(child->fd(), c) || !p.recv_value_progress(child->fd(), &reply)) {
            return ~uint64_t(0);
        }
        return reply;
    }

    /* The first half of ask(): the reply is read with answer(). */
    bool tell(const command &c) { return (child != nullptr) && test::send_value(child->fd(), c); }

    uint64_t answer()
    {
        uint64_t reply = ~uint64_t(0);
        p.recv_value_progress(child->fd(), &reply);
        return reply;
    }

    void fill(uint64_t offset, size_t size, uint64_t seed)
    {
        ask({command_type::fill, 0, offset, size, seed, 0});
    }

    bool check(uint64_t offset, size_t size, uint64_t seed)
    {
        return ask({command_type::check, 0, offset, size, seed, 0}) == 1;
    }

    uint64_t read(uint64_t offset, uint32_t size)
    {
        return ask({command_type::read, size, offset, 0, 0, 0});
    }

    void write(uint64_t offset, uint32_t size, uint64_t value)
    {
        ask({command_type::write, size, offset, 0, value, 0});
    }

    /* Blocks until the request completes, progressing; frees it. */
    ucs_status_t wait(ucs_status_ptr_t request) { return p.wait(request); }

    ucs_status_t flush_ep()
    {
        ucp_request_param_t param{};
        return wait(ucp_ep_flush_nbx(p.ep, &param));
    }

    bool loopback() const { return local != nullptr; }

    static void on_error(void *arg, ucp_ep_h, ucs_status_t)
    {
        ++static_cast<session *>(arg)->errors;
    }

    /* Set before start(): PEER makes a lost target fail the ep. */
    ucp_err_handling_mode_t err_mode = UCP_ERR_HANDLING_MODE_NONE;
    int errors                       = 0;

    peer p;
    std::unique_ptr<test::child_process> child;
    std::unique_ptr<region> local;
    ucp_rkey_h rkey = nullptr;
    std::vector<uint8_t> packed_key; /* what rkey was unpacked from */
    uint64_t base    = 0;
    size_t length    = 0;
    int child_status = 0;
};

} // namespace rma_test

#endif
