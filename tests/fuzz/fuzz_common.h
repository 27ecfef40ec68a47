/*
 * What the fuzz targets share (docs/fuzzing.md): a quiet environment, a
 * cursor over the input, a reader that touches every byte a handler is
 * given (so that a length larger than the data shows up under ASan), and
 * bounded waits on sockets.
 *
 * The targets call the parsers only through their existing entry points
 * (ucp::unpack_address, ucp::rkey_unpack, a component's rkey_unpack, the
 * AM handlers an iface has installed, sockets), so that they keep working
 * when the parsers change inside.
 */
#ifndef TESTS_FUZZ_FUZZ_COMMON_H
#define TESTS_FUZZ_FUZZ_COMMON_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fuzz {

/*
 * Logging off unless FUZZ_VERBOSE is set (a malformed input is logged on
 * every run otherwise, which slows the fuzzer down and hides its output),
 * no site configuration file, and UCX_TLS=tls. Call from
 * LLVMFuzzerInitialize, before the first ucp/uct call. Extra variables as
 * "NAME=value" strings, null-terminated list (may be null).
 */
void init_env(const char *tls, const char *const *extra = nullptr);

/* Reads each of the `length` bytes at `data`; the sum keeps the reads. */
uint64_t touch(const void *data, size_t length);

/* Sequential reader over a fuzz input; never reads past its end. */
class cursor {
public:
    cursor(const uint8_t *data, size_t size) : p_(data), left_(size) {}

    size_t left() const { return left_; }
    const uint8_t *rest() const { return p_; }

    template <typename T>
    bool get(T *value)
    {
        if (left_ < sizeof(T)) {
            return false;
        }
        std::memcpy(value, p_, sizeof(T));
        skip(sizeof(T));
        return true;
    }

    /* Up to `n` bytes (fewer at the end of the input). */
    size_t take(size_t n, const uint8_t **data_p)
    {
        n       = (n < left_) ? n : left_;
        *data_p = p_;
        skip(n);
        return n;
    }

private:
    void skip(size_t n)
    {
        p_ += n;
        left_ -= n;
    }

    const uint8_t *p_;
    size_t left_;
};

/* Sends all of `data` on a blocking socket; false on error. */
bool send_all(int fd, const void *data, size_t length);

/* Reads and drops what `fd` has now (non-blocking); true when it saw EOF
 * or an error (the peer closed). */
bool drain(int fd);

/* A connected blocking TCP socket to 127.0.0.1:port, or -1 (errno set).
 * Tries a few times: at thousands of connections a second a connect may
 * meet one of the other side's TIME_WAIT connections on the same ports. */
int connect_loopback(uint16_t port);

/* A non-blocking listening TCP socket on 127.0.0.1 (any port), or -1;
 * *port_p its port. */
int listen_loopback(uint16_t *port_p);

/* Closes a socket without leaving it in TIME_WAIT (an RST instead of the
 * closing handshake): at thousands of connections a second the local
 * ports would run out. Use it once the exchange is over. */
void close_now(int fd);

/* Waits up to `timeout_ms` for `fd` to become readable. */
bool wait_readable(int fd, int timeout_ms);

/* Fixed address of the memory the RMA targets expose, so that addresses
 * recorded from real traffic (tests/fuzz/record_corpus.cc) hit it. */
constexpr uintptr_t region_address = 0x5a0000000000ull;
constexpr size_t region_length     = 64 * 1024;

/* Maps region_length bytes at region_address (exactly there; aborts when it
 * cannot, the recorded inputs depend on it). */
void *map_region();

/* Worker uuid the UCP targets and the recorder give their workers (see
 * fuzz_ucp_am.cc): messages "from" it find an endpoint. */
constexpr uint64_t worker_uuid = 0x66757a7a2d776b72ull; /* "fuzz-wkr" */

/* Tag of the receive fuzz_ucp_am posts first (the recorder's messages
 * carry it too). */
constexpr uint64_t tag_expected = 0x7461672d66757a7aull; /* "tag-fuzz" */

/* Stands for the fuzzing process's pid where a recorded input carries the
 * recorder's (fuzz_mm_fifo.cc's FIFO header owner). */
constexpr uint32_t pid_token = 0x21444950u; /* "PID!" */

/* Stands for the secret of fuzz_ucp_am's mapped region (random per
 * mapping, ucp/core/ucp_rkey.h) in recorded UCP messages. */
constexpr uint64_t secret_token = 0x2174657263657321ull; /* "!secret!" */

/* Stands for the tcp iface's connection key (random per iface) in a
 * recorded handshake: fuzz_tcp_rx writes its iface's key over it. */
constexpr uint8_t iface_key_token[16] = {'t', 'c', 'p', '-', 'i', 'f', 'a', 'c',
                                         'e', '-', 'k', 'e', 'y', '-', '-', '!'};

/* Writes `value` over every copy of `token` (both `length` bytes) in `data`. */
void replace_all(std::vector<uint8_t> &data, const void *token, const void *value, size_t length);

} // namespace fuzz

#endif
