/*
 * record_corpus's socket recorder: every byte the libraries of this process
 * receive on a socket, kept per socket, each piece tagged with the scenario
 * that was running. This executable defines recv(), readv() and close();
 * the libraries it links resolve those before libc's (the executable comes
 * first in symbol lookup), and the definitions forward to libc. Nothing of
 * this is in the libraries.
 */
#ifndef TESTS_FUZZ_RECORD_SOCKETS_H
#define TESTS_FUZZ_RECORD_SOCKETS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace record {

using bytes = std::vector<uint8_t>;

/* Exits with a message when !ok (a recording that failed is no corpus). */
void check(bool ok, const char *what);

/* What the scenario running now is called (set by the scenarios). */
extern std::string scenario;

/* The bytes received on one socket. */
struct stream {
    bytes data;
    std::vector<std::pair<size_t, std::string>> marks; /* where a scenario starts */
};

/* Every stream received so far, closed sockets' and open ones'; clears. */
std::vector<stream> take_streams();

/* The scenario the byte at `offset` of `s` arrived in. */
const std::string &scenario_at(const stream &s, size_t offset);

} // namespace record

#endif
