/*
 * The operations on a settings struct described by a table (see table.h).
 */
#include <ucs/config/file.h>
#include <ucs/config/parser_util.h>
#include <ucs/config/registry.h>
#include <ucs/config/table.h>
#include <ucs/debug/log.h>

#include <cstdlib>
#include <exception>
#include <new>

namespace ucs::config {

namespace {

/* Deeper than any sane settings layout; stops a table that contains itself. */
constexpr unsigned max_nesting = 8;

void *member_of(void *opts, const leaf &l)
{
    return static_cast<char *>(opts) + l.offset;
}

const void *member_of(const void *opts, const leaf &l)
{
    return static_cast<const char *>(opts) + l.offset;
}

void flatten_into(const table &t, const std::string &prefix, const std::string &short_prefix,
                  bool with_short, size_t base, unsigned depth, std::vector<leaf> &out)
{
    for (const field &f : t.fields) {
        std::string name = (f.name != nullptr) ? f.name : "";
        if (f.type.sub_table == nullptr) {
            out.push_back({&f, prefix + name, with_short ? short_prefix + name : "",
                           base + f.offset});
        } else if (depth < max_nesting) {
            flatten_into(*f.type.sub_table, prefix + name, short_prefix + name, with_short,
                         base + f.offset, depth + 1, out);
        } else {
            ucs_error("configuration table '%s': sub-tables nested deeper than %u", t.title,
                      max_nesting);
        }
    }
}

/* "MPI" or "MPI_" -> "MPI_"; NULL or "" -> "". */
std::string normalize_env_prefix(const char *env_prefix)
{
    std::string env = (env_prefix != nullptr) ? env_prefix : "";
    while (!env.empty() && (env.back() == '_')) {
        env.pop_back();
    }
    return env.empty() ? env : env + "_";
}

/* Where a field's text comes from. */
struct value_source {
    std::string text;
    std::string var_name; /* the variable that set it, or the field's own name */
    std::string location; /* "path:line" for the file, "" otherwise */
    bool is_default = false;
};

/* Variable names that may set the field, most specific first. */
std::vector<std::string> candidate_names(const table &t, const leaf &l, const std::string &env)
{
    std::vector<std::string> names;
    auto add = [&](const std::string &prefix) {
        names.push_back("UCX_" + prefix + l.name);
        if (!l.short_name.empty()) {
            names.push_back("UCX_" + prefix + l.short_name);
        }
    };
    if (!env.empty()) {
        add(env);
    }
    add("");
    for (const alias &a : t.aliases) {
        if (l.name == a.field_name) {
            if (!env.empty()) {
                names.push_back("UCX_" + env + a.ucx_name);
            }
            names.push_back(std::string("UCX_") + a.ucx_name);
        }
    }
    return names;
}

value_source default_source(const leaf &l, const std::string &env)
{
    value_source src;
    src.text       = (l.f->default_value != nullptr) ? l.f->default_value : "";
    src.var_name   = "UCX_" + env + l.name;
    src.is_default = true;
    return src;
}

value_source find_source(const table &t, const leaf &l, const std::string &env)
{
    std::vector<std::string> names = candidate_names(t, l, env);
    for (const std::string &name : names) {
        const char *text = std::getenv(name.c_str());
        if (text != nullptr) {
            return {text, name, "", false};
        }
    }
    for (const std::string &name : names) {
        file_value value;
        if (file_lookup(name, value)) {
            return {value.value, name, value.location, false};
        }
    }
    return default_source(l, env);
}

void log_invalid(const leaf &l, const std::string &var_name, const std::string &text,
                 const std::string &location, bool is_default)
{
    std::string where = location.empty() ? "" : " at " + location;
    ucs_error("Invalid %svalue for %s: '%s'%s (expected %s)", is_default ? "default " : "",
              var_name.c_str(), text.c_str(), where.c_str(), l.f->type.syntax(l.f->type).c_str());
}

void release_leaves(void *opts, const std::vector<leaf> &leaves, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        leaves[i].f->type.release(member_of(opts, leaves[i]), leaves[i].f->type);
    }
}

/* The leaf a user's name refers to: full name first, then short name. */
const leaf *find_leaf(const std::vector<leaf> &leaves, const char *name)
{
    std::string_view wanted = name;
    if ((wanted.size() > 4) && detail::iequals(wanted.substr(0, 4), "UCX_")) {
        wanted.remove_prefix(4);
    }
    for (const leaf &l : leaves) {
        if (detail::iequals(wanted, l.name)) {
            return &l;
        }
    }
    for (const leaf &l : leaves) {
        if (!l.short_name.empty() && detail::iequals(wanted, l.short_name)) {
            return &l;
        }
    }
    return nullptr;
}

/* Runs body, turning an escaping exception into a status. */
template <typename Body>
ucs_status_t guarded(const char *what, Body &&body)
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        ucs_error("%s: out of memory", what);
        return UCS_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        ucs_error("%s: %s", what, e.what());
        return UCS_ERR_NO_MEMORY;
    }
}

ucs_status_t fill_from(void *opts, const table &t, const char *env_prefix, bool defaults_only)
{
    if (opts == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::vector<leaf> leaves;
    size_t filled       = 0; /* members holding a value, released on error */
    ucs_status_t status = guarded("filling configuration", [&] {
        leaves          = flatten(t);
        std::string env = normalize_env_prefix(env_prefix);
        if (!env.empty()) {
            note_env_prefix(env.substr(0, env.size() - 1).c_str());
        }
        for (; filled < leaves.size(); ++filled) {
            const leaf &l    = leaves[filled];
            value_source src = defaults_only ? default_source(l, env) : find_source(t, l, env);
            if (!l.f->type.parse(src.text.c_str(), member_of(opts, l), l.f->type)) {
                log_invalid(l, src.var_name, src.text, src.location, src.is_default);
                return UCS_ERR_INVALID_PARAM;
            }
        }
        return UCS_OK;
    });
    if (status != UCS_OK) {
        release_leaves(opts, leaves, filled);
    }
    return status;
}

} // namespace

std::vector<leaf> flatten(const table &t)
{
    std::vector<leaf> out;
    std::string prefix = (t.prefix != nullptr) ? t.prefix : "";
    flatten_into(t, prefix, "", !prefix.empty(), 0, 0, out);
    return out;
}

ucs_status_t fill(void *opts, const table &t, const char *env_prefix)
{
    return fill_from(opts, t, env_prefix, false);
}

ucs_status_t fill_defaults(void *opts, const table &t)
{
    return fill_from(opts, t, nullptr, true);
}

void release(void *opts, const table &t)
{
    if (opts == nullptr) {
        return;
    }
    try {
        auto leaves = flatten(t);
        release_leaves(opts, leaves, leaves.size());
    } catch (const std::exception &e) {
        ucs_error("releasing configuration: %s", e.what());
    }
}

ucs_status_t clone(const void *src, void *dest, const table &t)
{
    if ((src == nullptr) || (dest == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::vector<leaf> leaves;
    size_t cloned       = 0;
    ucs_status_t status = guarded("cloning configuration", [&] {
        leaves = flatten(t);
        for (; cloned < leaves.size(); ++cloned) {
            const leaf &l  = leaves[cloned];
            ucs_status_t s = l.f->type.clone(member_of(src, l), member_of(dest, l), l.f->type);
            if (s != UCS_OK) {
                return s;
            }
        }
        return UCS_OK;
    });
    if (status != UCS_OK) {
        release_leaves(dest, leaves, cloned);
    }
    return status;
}

ucs_status_t set_value(void *opts, const table &t, const char *name, const char *value)
{
    if ((opts == nullptr) || (name == nullptr) || (value == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }

    return guarded("setting configuration value", [&] {
        auto leaves   = flatten(t);
        const leaf *l = find_leaf(leaves, name);
        if (l == nullptr) {
            ucs_debug("no configuration field '%s' in '%s'", name, t.title);
            return UCS_ERR_NO_ELEM;
        }

        /* Parse aside first, so a bad value keeps the old one. */
        const parser &type = l->f->type;
        std::vector<unsigned char> scratch(type.value_size);
        if (!type.parse(value, scratch.data(), type)) {
            log_invalid(*l, "UCX_" + l->name, value, "", false);
            return UCS_ERR_INVALID_PARAM;
        }
        type.release(member_of(opts, *l), type);
        std::memcpy(member_of(opts, *l), scratch.data(), type.value_size);
        return UCS_OK;
    });
}

ucs_status_t get_value(const void *opts, const table &t, const char *name, std::string &value)
{
    if ((opts == nullptr) || (name == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }

    return guarded("reading configuration value", [&] {
        auto leaves   = flatten(t);
        const leaf *l = find_leaf(leaves, name);
        if (l == nullptr) {
            return UCS_ERR_NO_ELEM;
        }
        value = l->f->type.print(member_of(opts, *l), l->f->type);
        return UCS_OK;
    });
}

namespace {

/* The default as the parser prints it, so "8k" and "8K" compare equal. */
std::string printed_default(const leaf &l)
{
    const parser &type = l.f->type;
    const char *text   = (l.f->default_value != nullptr) ? l.f->default_value : "";
    std::vector<unsigned char> scratch(type.value_size);
    if (!type.parse(text, scratch.data(), type)) {
        return text;
    }
    std::string printed = type.print(scratch.data(), type);
    type.release(scratch.data(), type);
    return printed;
}

void print_doc(FILE *stream, const table &t, const leaf &l)
{
    std::fprintf(stream, "#\n");
    std::string_view doc = (l.f->doc != nullptr) ? l.f->doc : "";
    while (!doc.empty()) {
        size_t newline        = doc.find('\n');
        std::string_view line = doc.substr(0, newline);
        std::fprintf(stream, "#%s%.*s\n", line.empty() ? "" : " ", static_cast<int>(line.size()),
                     line.data());
        doc.remove_prefix((newline == doc.npos) ? doc.size() : newline + 1);
    }
    if (l.f->flags & field_no_effect) {
        std::fprintf(stream, "#\n# no effect here (accepted for compatibility with UCX 1.13)\n");
    }
    std::fprintf(stream, "#\n# syntax:    %s\n", l.f->type.syntax(l.f->type).c_str());
    std::string others;
    for (const std::string &name : candidate_names(t, l, "")) {
        if (name != "UCX_" + l.name) {
            if (!others.empty()) {
                others += ", ";
            }
            others += name;
        }
    }
    if (!others.empty()) {
        std::fprintf(stream, "# also read from: %s\n", others.c_str());
    }
    std::fprintf(stream, "#\n");
}

} // namespace

ucs_status_t print(FILE *stream, const void *opts, const table &t, unsigned flags,
                   const char *title, const char *env_prefix)
{
    if ((stream == nullptr) || (opts == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }

    return guarded("printing configuration", [&] {
        if (flags & UCS_CONFIG_PRINT_HEADER) {
            std::fprintf(stream, "#\n# %s\n#\n",
                         (title != nullptr)   ? title :
                         (t.title != nullptr) ? t.title :
                                                "");
        }
        if (!(flags & UCS_CONFIG_PRINT_CONFIG)) {
            return UCS_OK;
        }

        std::string env = normalize_env_prefix(env_prefix);
        for (const leaf &l : flatten(t)) {
            if ((l.f->flags & field_hidden) && !(flags & UCS_CONFIG_PRINT_HIDDEN)) {
                continue;
            }
            std::string value = l.f->type.print(member_of(opts, l), l.f->type);
            bool comment      = (flags & UCS_CONFIG_PRINT_COMMENT_DEFAULT) &&
                           (value == printed_default(l));
            if (flags & UCS_CONFIG_PRINT_DOC) {
                print_doc(stream, t, l);
            }
            std::fprintf(stream, "%sUCX_%s%s=%s\n", comment ? "#" : "", env.c_str(), l.name.c_str(),
                         value.c_str());
            if (flags & UCS_CONFIG_PRINT_DOC) {
                std::fprintf(stream, "\n");
            }
        }
        if (flags & UCS_CONFIG_PRINT_HIDDEN) {
            for (const char *name : t.no_effect_names) {
                std::fprintf(stream,
                             "# UCX_%s%s: accepted for compatibility with UCX "
                             "1.13, no effect here\n",
                             env.c_str(), name);
            }
        }
        return std::ferror(stream) ? UCS_ERR_IO_ERROR : UCS_OK;
    });
}

} // namespace ucs::config
