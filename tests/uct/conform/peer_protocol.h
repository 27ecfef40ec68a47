/*
 * Commands between the parent's remote_peer and the peer_agent process,
 * over the socketpair of test::child_process. Every request is a fixed
 * record (and, for WRITE, a blob of bytes); every answer is a bool and a
 * blob. Private to the conformance suite.
 */
#ifndef TESTS_UCT_CONFORM_PEER_PROTOCOL_H
#define TESTS_UCT_CONFORM_PEER_PROTOCOL_H

#include "conform_list.h"

#include <cstdint>

namespace test::conform {

// clang-format off
enum class command : uint32_t {
    EXPOSE,        /* a = length, b = seed; answer: address, length, packed key */
    READ,          /* a = address, b = length; answer: the bytes */
    WRITE,         /* a = address, blob = bytes */
    TAKE_AMS,      /* a = count, b = max bytes each; answer: serialized records */
    KEEP,          /* a = 1 to keep descriptors, 0 to stop */
    RELEASE_KEPT,  /* answer: kept_report */
    CONNECT,       /* blob = our ep's address (CONNECT_TO_EP): the peer makes an ep,
                      connects it to ours; answer: its ep's address */
    HOLD,          /* stop progressing until RESUME */
    RESUME,
    EXIT,
};
// clang-format on

struct request {
    command what;
    uint32_t reserved;
    uint64_t a;
    uint64_t b;
};

/* The process the parent forks: opens `spec`, sends its addresses, serves. */
int peer_agent(const transport_spec &spec, int fd);

} // namespace test::conform

#endif
