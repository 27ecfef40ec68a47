/*
 * Small readers for /proc and /sys files. They use plain read(2), because
 * procfs files report size 0 and must be read until EOF.
 *
 * Status codes: UCS_ERR_INVALID_PARAM for NULL arguments or content that is
 * not what was asked for (not a number), UCS_ERR_NO_ELEM when the file (or the
 * key) does not exist, UCS_ERR_IO_ERROR when it cannot be read,
 * UCS_ERR_EXCEEDS_LIMIT when it is larger than max_size (reading stops
 * there: an endless file such as /dev/urandom costs max_size bytes). Files
 * are opened non-blocking, so a FIFO nobody writes gives UCS_ERR_IO_ERROR
 * or nothing instead of waiting for ever.
 */
#ifndef UCS_SYS_READ_FILE_H
#define UCS_SYS_READ_FILE_H

#include <ucs/type/status.h>

#include <cstddef>
#include <string>

namespace ucs::sys {

/* The whole file. */
ucs_status_t read_file_string(const char *path, std::string *content, size_t max_size = 65536);

/* A file holding one decimal integer, surrounding white space allowed. */
ucs_status_t read_file_number(const char *path, long long *value);

/* The integer on the line "key: value [unit]" (e.g. /proc/meminfo); the
 * value is returned as written, units are not applied. */
ucs_status_t read_file_keyed_number(const char *path, const char *key, long long *value);

/* Parses a decimal integer with optional surrounding white space. */
bool parse_number(const char *text, long long *value);

} // namespace ucs::sys

#endif
