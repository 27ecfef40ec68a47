/*
 * The table registry and the printer of every registered table.
 */
#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace ucs::config {

namespace {

struct registry {
    std::mutex lock;
    std::vector<const table *> tables;
    std::vector<std::string> env_prefixes;
};

/* Never destroyed: registrations in other libraries may outlive ours at exit. */
registry &the_registry()
{
    static registry *instance = new registry;
    return *instance;
}

/* True if every field lies inside the struct; print_all fills a scratch copy. */
bool fits(const table &t)
{
    for (const leaf &l : flatten(t)) {
        if (l.offset + l.f->type.value_size > t.struct_size) {
            return false;
        }
    }
    return true;
}

} // namespace

void register_table(const table &t)
{
    try {
        registry &r = the_registry();
        std::lock_guard<std::mutex> guard(r.lock);
        if (std::find(r.tables.begin(), r.tables.end(), &t) == r.tables.end()) {
            r.tables.push_back(&t);
        }
    } catch (const std::exception &e) {
        ucs_error("cannot register configuration table '%s': %s", t.title, e.what());
    }
}

void unregister_table(const table &t)
{
    registry &r = the_registry();
    std::lock_guard<std::mutex> guard(r.lock);
    r.tables.erase(std::remove(r.tables.begin(), r.tables.end(), &t), r.tables.end());
}

std::vector<const table *> registered_tables()
{
    registry &r = the_registry();
    std::lock_guard<std::mutex> guard(r.lock);
    return r.tables;
}

void note_env_prefix(const char *env_prefix)
{
    if ((env_prefix == nullptr) || (*env_prefix == '\0')) {
        return;
    }
    registry &r = the_registry();
    std::lock_guard<std::mutex> guard(r.lock);
    if (std::find(r.env_prefixes.begin(), r.env_prefixes.end(), env_prefix) ==
        r.env_prefixes.end()) {
        r.env_prefixes.push_back(env_prefix);
    }
}

std::vector<std::string> env_prefixes()
{
    registry &r = the_registry();
    std::lock_guard<std::mutex> guard(r.lock);
    return r.env_prefixes;
}

ucs_status_t print_all(FILE *stream, unsigned flags, const char *env_prefix)
{
    if (stream == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }

    ucs_status_t result = UCS_OK;
    try {
        for (const table *t : registered_tables()) {
            if (!fits(*t)) {
                ucs_error("configuration table '%s': fields beyond struct_size %zu", t->title,
                          t->struct_size);
                result = UCS_ERR_INVALID_PARAM;
                continue;
            }

            std::vector<unsigned char> opts(std::max<size_t>(t->struct_size, 1));
            ucs_status_t status = fill(opts.data(), *t, env_prefix);
            if (status != UCS_OK) {
                std::fprintf(stream, "#\n# %s: invalid configuration: %s\n#\n", t->title,
                             ucs_status_string(status));
                result = status;
                continue;
            }
            status = print(stream, opts.data(), *t, flags, nullptr, env_prefix);
            release(opts.data(), *t);
            if (status != UCS_OK) {
                result = status;
            }
        }
    } catch (const std::exception &e) {
        ucs_error("printing configuration: %s", e.what());
        return UCS_ERR_NO_MEMORY;
    }
    return result;
}

} // namespace ucs::config
