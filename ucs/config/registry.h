/*
 * The process-wide list of configuration tables. Every layer registers its
 * tables at static-initialisation time, so that tools can print every known
 * setting (ucx_info -c) and so that UCX_* variables no table knows (usually
 * typos) can be reported.
 *
 *   UCS_CONFIG_REGISTER_TABLE(tcp_table);   // at namespace scope in a .cc file
 *
 * A table registered from a loadable module is unregistered when the module
 * is unloaded (the registration object's destructor).
 */
#ifndef UCS_CONFIG_REGISTRY_H
#define UCS_CONFIG_REGISTRY_H

#include <ucs/config/table.h>

#include <cstdio>
#include <string>
#include <vector>

namespace ucs::config {

/* Adds t (once; registering it again does nothing). Thread-safe. */
void register_table(const table &t);

void unregister_table(const table &t);

/* The registered tables, in registration order. */
std::vector<const table *> registered_tables();

/* Registers a table for the lifetime of a static object. */
class table_registration {
public:
    explicit table_registration(const table &t) : m_table(t) { register_table(m_table); }

    ~table_registration() { unregister_table(m_table); }

    table_registration(const table_registration &)            = delete;
    table_registration &operator=(const table_registration &) = delete;

private:
    const table &m_table;
};

#define UCS_CONFIG_CONCAT2_(_a, _b) _a##_b
#define UCS_CONFIG_CONCAT_(_a, _b)  UCS_CONFIG_CONCAT2_(_a, _b)
#define UCS_CONFIG_REGISTER_TABLE(_table) \
    static ::ucs::config::table_registration UCS_CONFIG_CONCAT_(ucs_config_table_registration_, \
                                                                __LINE__)(_table)

/*
 * Fills each registered table from the environment and the file and prints
 * it (print() flags; each table's title is its header). A table whose values
 * are malformed is reported in a comment, and its error status is returned
 * after the others are printed.
 */
ucs_status_t print_all(FILE *stream, unsigned flags, const char *env_prefix = nullptr);

/* Records an env prefix ("MPI") that fill() was asked for; fill does it. */
void note_env_prefix(const char *env_prefix);

/* The env prefixes seen so far. */
std::vector<std::string> env_prefixes();

/*
 * UCX_* variables in the environment that no registered field reads, each
 * with close known names: "UCX_LOG_LEVLE (maybe: UCX_LOG_LEVEL?)". A name is
 * known with or without any env prefix seen by fill() (UCX_MPI_TLS), and so
 * are the tables' aliases and no-effect names (table.h). Never reported:
 * UCX_CONFIG_FILE and UCX_CONFIG_DIR (they name files, they are not fields).
 */
std::vector<std::string> unused_env_vars();

/*
 * Logs one warning listing unused_env_vars(), the first time it is called in
 * the process and only when UCX_WARN_UNUSED_ENV_VARS is on (the default).
 * Returns true if it logged. Call it after every layer has filled its tables.
 * Also logs, once each and as UCX 1.13 does, the UCX_* variables in effect
 * (info) and those that are accepted but have no effect here (diag).
 */
bool warn_unused_env_vars();

/* Lets warn_unused_env_vars() warn again (for tests). */
void rearm_unused_env_warning();

} // namespace ucs::config

#endif
