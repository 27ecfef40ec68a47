/*
 * The configuration file: UCX_* settings that apply when the environment
 * does not set them.
 *
 * Which file: the path in UCX_CONFIG_FILE when that variable is set (set but
 * empty: no file at all), otherwise the installed UCX_NG_SYSCONF_FILE
 * (<prefix>/etc/ucx/ucx.conf). A missing file is silently ignored.
 *
 * Format, one setting per line:
 *     # a comment                  (also after a value: "UCX_TLS = tcp  # why")
 *     UCX_LOG_LEVEL = info
 *     LOG_LEVEL = info             (same; the UCX_ prefix is added)
 *     UCX_LOG_FILE = "/tmp/a b"    (surrounding quotes are removed)
 * Blank lines are skipped. A malformed line gives one warning naming
 * file:line and is skipped. A later line for the same name wins.
 *
 * The file is read once per process, on first use, under a lock.
 */
#ifndef UCS_CONFIG_FILE_H
#define UCS_CONFIG_FILE_H

#include <string>
#include <vector>

namespace ucs::config {

struct file_value {
    std::string value;
    std::string location; /* "path:line", for messages */
};

/* The value of a full variable name ("UCX_TLS") in the config file. */
bool file_lookup(const std::string &var_name, file_value &out);

/* Every variable the config file sets, in file order. */
std::vector<std::string> file_variables();

/* The file this process would read now; "" when none. */
std::string file_path();

/*
 * Forgets the parsed file: the next lookup reads it again, re-evaluating
 * UCX_CONFIG_FILE. For tests and tools that change the file at run time.
 */
void drop_file_cache();

} // namespace ucs::config

#endif
