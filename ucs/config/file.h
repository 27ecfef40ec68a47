/*
 * The configuration file: UCX_* settings that apply when the environment
 * does not set them.
 *
 * Which files: those UCX 1.13 reads, in its order, a later file overriding
 * an earlier one's settings (the environment overrides them all):
 *   1. <prefix>/etc/ucx/ucx.conf (UCX_NG_SYSCONF_FILE)
 *   2. <directory of libucs>/../etc/ucx.conf
 *   3. $HOME/ucx.conf
 *   4. $UCX_CONFIG_DIR/ucx.conf
 *   5. ./ucx.conf (the current directory)
 * UCX_CONFIG_FILE (not in UCX 1.13) replaces the whole list with one file,
 * or with none when set but empty. A missing file is silently ignored.
 *
 * Format, one setting per line:
 *     # a comment                  (also after a value: "UCX_TLS = tcp  # why")
 *     UCX_LOG_LEVEL = info
 *     LOG_LEVEL = info             (same; the UCX_ prefix is added)
 *     UCX_LOG_FILE = "/tmp/a b"    (surrounding quotes are removed)
 * Blank lines are skipped. A malformed line gives one warning naming
 * file:line and is skipped. A later line for the same name wins.
 *
 * The files are read once per process, on first use, under a lock.
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

/* The value of a full variable name ("UCX_TLS") in the config files. */
bool file_lookup(const std::string &var_name, file_value &out);

/* Every variable the config files set, in order of first appearance. */
std::vector<std::string> file_variables();

/* The files this process would read now, lowest precedence first, whether
 * they exist or not. */
std::vector<std::string> file_paths();

/*
 * Forgets the parsed files: the next lookup reads them again, re-evaluating
 * UCX_CONFIG_FILE, HOME, UCX_CONFIG_DIR and the current directory. For
 * tests and tools that change them at run time.
 */
void drop_file_cache();

} // namespace ucs::config

#endif
