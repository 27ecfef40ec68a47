/*
 * Configuration tables: a list of typed fields describing a plain settings
 * struct, and the operations on such a struct (fill from the environment and
 * the config file, release, clone, set/get one value by name, print).
 *
 * Declaring a table (in a .cc file):
 *
 *   struct tcp_config {                  // plain struct, standard layout
 *       size_t sndbuf;
 *       ucs_config_names_array_t devices;
 *   };
 *
 *   const ucs::config::field tcp_fields[] = {
 *       UCS_CONFIG_FIELD(tcp_config, sndbuf, "SNDBUF", "auto",
 *                        "Socket send buffer size", ucs::config::type_size),
 *       UCS_CONFIG_FIELD(tcp_config, devices, "DEVICES", "all",
 *                        "Network devices to use", ucs::config::type_string_list,
 *                        ucs::config::field_hidden),
 *   };
 *   const ucs::config::table tcp_table = {"TCP transport", "TCP_", tcp_fields,
 *                                         sizeof(tcp_config)};
 *   UCS_CONFIG_REGISTER_TABLE(tcp_table);   // see registry.h
 *
 * Using it:
 *
 *   tcp_config cfg;
 *   ucs_status_t status = ucs::config::fill(&cfg, tcp_table, env_prefix);
 *   ...
 *   ucs::config::release(&cfg, tcp_table);
 *
 * Variable names: a field NAME of a table with prefix P (may be empty) is
 * read from UCX_<P><NAME>, and, when P is not empty, also from UCX_<NAME>
 * with lower precedence (so UCX_SEG_SIZE sets every transport's SEG_SIZE and
 * UCX_TCP_SEG_SIZE only TCP's). Where a value comes from, first match wins:
 *   1. UCX_<ENV_PREFIX>_<P><NAME>, UCX_<ENV_PREFIX>_<NAME>  (fill's env_prefix, e.g. "MPI")
 *   2. UCX_<P><NAME>, UCX_<NAME>                            (environment)
 *   3. the table's aliases of the field (UCX 1.13's names), with the env
 *      prefix and without, in the environment
 *   4. the same names in the configuration files (see file.h)
 *   5. the field's default value.
 *
 * None of these functions throws; failures are statuses and ERROR logs.
 */
#ifndef UCS_CONFIG_TABLE_H
#define UCS_CONFIG_TABLE_H

#include <ucs/config/parser.h>

#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace ucs::config {

enum field_flags : unsigned {
    /* Internal tunable: printed only with UCS_CONFIG_PRINT_HIDDEN. */
    field_hidden = 1u << 0,
    /* A UCX 1.13 setting that is parsed but changes nothing here; printed
     * with a note saying so. */
    field_no_effect = 1u << 1,
};

/* A UCX 1.13 variable name that sets a field of the table (site tunings
 * written for UCX keep working): UCX_POSIX_FIFO_SIZE sets MM_FIFO_SIZE. */
struct alias {
    const char *ucx_name;   /* without "UCX_": "POSIX_FIFO_SIZE" */
    const char *field_name; /* the field's full name: "MM_FIFO_SIZE" */
};

struct field {
    const char *name;          /* without "UCX_" and the table prefix: "LOG_LEVEL" */
    const char *default_value; /* text, parsed like a user's value */
    const char *doc;           /* description; lines separated by '\n' */
    size_t offset;             /* of the member in the settings struct */
    parser type;
    unsigned flags = 0; /* field_flags */
};

// clang-format off
struct table {
    const char             *title;      /* heading when printed: "UCS global options" */
    const char             *prefix;     /* table prefix, e.g. "TCP_"; "" for none.
                                           Ignored when used as a sub-table. */
    std::span<const field> fields;
    size_t                 struct_size; /* sizeof the settings struct */
    /* Read after the field's own names, in this order (see fill below). */
    std::span<const alias> aliases = {};
    /* UCX 1.13 variables of this area (without "UCX_") that mean nothing
     * here: accepted with a diag note, never reported as unused. */
    std::span<const char *const> no_effect_names = {};
};
// clang-format on

/*
 * A field whose member size is checked against its type at compile time
 * (a mismatch does not compile). Prefer UCS_CONFIG_FIELD, which calls it.
 */
consteval field make_field(const char *name, const char *default_value, const char *doc,
                           size_t offset, size_t member_size, const parser &type,
                           unsigned flags = 0)
{
    if ((type.sub_table == nullptr) && (member_size != type.value_size)) {
        throw "configuration field: the member's type does not match its parser";
    }
    return field{name, default_value, doc, offset, type, flags};
}

#define UCS_CONFIG_FIELD(_struct, _member, _name, _default, _doc, _type, ...) \
    ::ucs::config::make_field(_name, _default, _doc, offsetof(_struct, _member), \
                              sizeof(static_cast<_struct *>(nullptr)->_member), _type, \
                              ##__VA_ARGS__)

/* A field as the engine sees it, sub-tables flattened. */
struct leaf {
    const field *f;
    std::string name;       /* table prefix + sub-table prefixes + name: "TCP_SNDBUF" */
    std::string short_name; /* the same without the table prefix, "" if it has none */
    size_t offset;          /* from the start of the top-level struct */
};

/* The leaf fields of a table in declaration order. */
std::vector<leaf> flatten(const table &t);

/*
 * Fills the table's members of opts (which hold nothing yet) from the
 * environment, the config file and the defaults. env_prefix (e.g. "MPI",
 * NULL or "" for none) selects UCX_MPI_* variables first. On a malformed value
 * logs "Invalid value for UCX_NAME: 'text' (expected ...)", releases what
 * was filled and returns UCS_ERR_INVALID_PARAM.
 */
ucs_status_t fill(void *opts, const table &t, const char *env_prefix = nullptr);

/* Fills from the defaults only, ignoring environment and file. */
ucs_status_t fill_defaults(void *opts, const table &t);

/* Frees what the table's members of opts own (strings, lists) and zeroes them. */
void release(void *opts, const table &t);

/* Deep copy of a filled struct into dest (which holds nothing yet). */
ucs_status_t clone(const void *src, void *dest, const table &t);

/*
 * Sets one member from text. name is "TLS", "UCX_TLS", or for a prefixed
 * table "TCP_SNDBUF" / "SNDBUF". UCS_ERR_NO_ELEM when no field has that
 * name, UCS_ERR_INVALID_PARAM (and an ERROR log) when the text is malformed;
 * the old value is kept on error.
 */
ucs_status_t set_value(void *opts, const table &t, const char *name, const char *value);

/* The value of one member as text (same names as set_value). */
ucs_status_t get_value(const void *opts, const table &t, const char *name, std::string &value);

/*
 * Prints a filled struct with ucs_config_print_flags_t semantics:
 *   HEADER           "#\n# <title>\n#" (title NULL: the table's title)
 *   CONFIG           one UCX_NAME=value line per field (names with env_prefix)
 *   DOC              before each line, its doc, accepted form and the other
 *                    names it is read from ("# also read from: UCX_SEG_SIZE")
 *   HIDDEN           also fields marked field_hidden, and the table's
 *                    no_effect_names as "# UCX_<NAME>: accepted ..." lines
 *   COMMENT_DEFAULT  "#UCX_NAME=value" for values equal to the default
 */
ucs_status_t print(FILE *stream, const void *opts, const table &t, unsigned flags,
                   const char *title = nullptr, const char *env_prefix = nullptr);

} // namespace ucs::config

#endif
