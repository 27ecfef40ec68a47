/*
 * Reporting UCX_* environment variables that no configuration field reads:
 * usually a typo that would otherwise be silently ignored.
 */
#include <ucs/config/global_opts.h>
#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <set>
#include <string_view>
#include <unistd.h>

extern char **environ;

namespace ucs::config {

namespace {

/* Variables that are not fields (after "UCX_"). */
const char *const non_field_vars[] = {
    "CONFIG_FILE", /* names the configuration file */
    "CONFIG_DIR",  /* a directory with a ucx.conf (config/file.h) */
};

constexpr size_t max_edit_distance = 3;
constexpr size_t min_prefix_length = 3;
constexpr size_t max_suggestions   = 3;

std::atomic<bool> warned{false};
std::atomic<bool> noted_no_effect{false};
std::atomic<bool> logged_used{false};

/* Names (without "UCX_") that are accepted but change nothing here. */
std::set<std::string> no_effect_names()
{
    std::set<std::string> names;
    for (const table *t : registered_tables()) {
        for (const char *name : t->no_effect_names) {
            names.insert(name);
        }
        for (const leaf &l : flatten(*t)) {
            if (l.f->flags & field_no_effect) {
                names.insert(l.name);
            }
        }
    }
    return names;
}

/* One diag line naming the UCX 1.13 settings in the environment that do nothing here. */
void note_no_effect_env_vars()
{
    if (!log_enabled(UCS_LOG_LEVEL_DIAG) || noted_no_effect.exchange(true)) {
        return;
    }
    try {
        const std::set<std::string> inert = no_effect_names();
        std::string list;
        for (char **env = environ; (env != nullptr) && (*env != nullptr); ++env) {
            std::string_view var = *env;
            if (var.compare(0, 4, "UCX_") != 0) {
                continue;
            }
            std::string name(var.substr(4, var.find('=') - 4));
            if (inert.count(name) != 0) {
                list += list.empty() ? "UCX_" : ", UCX_";
                list += name;
            }
        }
        if (!list.empty()) {
            ucs_diag("%s: UCX 1.13 setting%s accepted with no effect here", list.c_str(),
                     (list.find(',') != list.npos) ? "s" : "");
        }
    } catch (const std::exception &e) {
        ucs_error("checking UCX_* environment variables: %s", e.what());
    }
}

std::string to_upper(std::string_view text)
{
    std::string upper(text);
    for (char &c : upper) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return upper;
}

/* Edit distance counting a swap of two neighbours as one edit ("LEVLE"). */
size_t edit_distance(const std::string &a, const std::string &b)
{
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) {
        d[i][0] = i;
    }
    for (size_t j = 0; j <= b.size(); ++j) {
        d[0][j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = (a[i - 1] == b[j - 1]) ? 0 : 1;
            d[i][j]     = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if ((i > 1) && (j > 1) && (a[i - 1] == b[j - 2]) && (a[i - 2] == b[j - 1])) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

bool is_prefix_related(const std::string &a, const std::string &b)
{
    const std::string &shorter = (a.size() < b.size()) ? a : b;
    const std::string &longer  = (a.size() < b.size()) ? b : a;
    return (shorter.size() >= min_prefix_length) &&
           (longer.compare(0, shorter.size(), shorter) == 0);
}

struct known_names {
    std::set<std::string> names;       /* without "UCX_"; exact case, as getenv */
    std::vector<std::string> prefixes; /* env prefixes + "_" */

    bool contains(const std::string &name) const
    {
        if (names.count(name) != 0) {
            return true;
        }
        for (const std::string &prefix : prefixes) {
            if ((name.compare(0, prefix.size(), prefix) == 0) &&
                (names.count(name.substr(prefix.size())) != 0)) {
                return true;
            }
        }
        return false;
    }
};

known_names collect_known_names()
{
    known_names known;
    for (const table *t : registered_tables()) {
        for (const leaf &l : flatten(*t)) {
            known.names.insert(l.name);
            if (!l.short_name.empty()) {
                known.names.insert(l.short_name);
            }
        }
        for (const alias &a : t->aliases) {
            known.names.insert(a.ucx_name);
        }
        for (const char *name : t->no_effect_names) {
            known.names.insert(name);
        }
    }
    for (const char *name : non_field_vars) {
        known.names.insert(name);
    }
    for (const std::string &prefix : env_prefixes()) {
        known.prefixes.push_back(prefix + "_");
    }
    return known;
}

/*
 * "LOG_LEVLE" -> "UCX_LOG_LEVLE (maybe: UCX_LOG_LEVEL?)". Similarity ignores
 * case, so "UCX_log_level" (which getenv does not match) suggests the right one.
 */
std::string describe_unknown(const std::string &name, const known_names &known)
{
    std::string upper = to_upper(name);
    std::vector<std::pair<size_t, std::string>> close;

    auto consider = [&](const std::string &wanted, const std::string &prefix) {
        for (const std::string &candidate : known.names) {
            std::string upper_candidate = to_upper(candidate);
            size_t distance             = edit_distance(wanted, upper_candidate);
            if ((distance <= max_edit_distance) || is_prefix_related(wanted, upper_candidate)) {
                close.emplace_back(distance, "UCX_" + prefix + candidate);
            }
        }
    };
    consider(upper, "");
    for (const std::string &prefix : known.prefixes) {
        std::string upper_prefix = to_upper(prefix);
        if (upper.compare(0, upper_prefix.size(), upper_prefix) == 0) {
            consider(upper.substr(upper_prefix.size()), prefix);
        }
    }

    /* Only the closest spellings when there are any (LOG_LEVLE suggests
     * LOG_LEVEL, not also LOG_FILE at distance 3); else the prefix relatives. */
    std::sort(close.begin(), close.end());
    bool have_close  = !close.empty() && (close.front().first <= max_edit_distance);
    std::string text = "UCX_" + name;
    std::vector<std::string> shown;
    for (const auto &[distance, candidate] : close) {
        if (have_close && (distance != close.front().first)) {
            break;
        }
        if ((shown.size() < max_suggestions) &&
            (std::find(shown.begin(), shown.end(), candidate) == shown.end())) {
            shown.push_back(candidate);
        }
    }
    for (size_t i = 0; i < shown.size(); ++i) {
        text += (i == 0) ? " (maybe: " : ", ";
        text += shown[i];
    }
    return shown.empty() ? text : text + "?)";
}

} // namespace

std::vector<std::string> unused_env_vars()
{
    std::vector<std::string> unused;
    try {
        known_names known = collect_known_names();
        for (char **env = environ; (env != nullptr) && (*env != nullptr); ++env) {
            std::string_view var = *env;
            if (var.compare(0, 4, "UCX_") != 0) {
                continue;
            }
            std::string name(var.substr(4, var.find('=') - 4));
            if (!known.contains(name)) {
                unused.push_back(describe_unknown(name, known));
            }
        }
    } catch (const std::exception &e) {
        ucs_error("checking UCX_* environment variables: %s", e.what());
    }
    return unused;
}

namespace {

/* UCX 1.13's info line: "UCX_* env variables: UCX_TLS=tcp UCX_LOG_LEVEL=info". */
void log_used_env_vars()
{
    if (!log_enabled(UCS_LOG_LEVEL_INFO) || logged_used.exchange(true)) {
        return;
    }
    try {
        known_names known = collect_known_names();
        std::string list;
        unsigned count = 0;
        for (char **env = environ; (env != nullptr) && (*env != nullptr); ++env) {
            std::string_view var = *env;
            if ((var.compare(0, 4, "UCX_") == 0) &&
                known.contains(std::string(var.substr(4, var.find('=') - 4)))) {
                if (count++ > 0) {
                    list += ' ';
                }
                list += var;
            }
        }
        if (count > 0) {
            ucs_info("UCX_* env variable%s: %s", (count > 1) ? "s" : "", list.c_str());
        }
    } catch (const std::exception &e) {
        ucs_error("listing UCX_* environment variables: %s", e.what());
    }
}

} // namespace

bool warn_unused_env_vars()
{
    log_used_env_vars();
    note_no_effect_env_vars();
    if (!global_opts().warn_unused_env_vars || warned.exchange(true)) {
        return false;
    }

    std::vector<std::string> unused = unused_env_vars();
    if (unused.empty()) {
        return false;
    }
    std::string list;
    for (const std::string &item : unused) {
        list += (list.empty() ? "" : ", ") + item;
    }
    ucs_warn("unused environment variable%s: %s (set UCX_WARN_UNUSED_ENV_VARS=n "
             "to suppress this warning)",
             (unused.size() > 1) ? "s" : "", list.c_str());
    return true;
}

void rearm_unused_env_warning()
{
    warned          = false;
    noted_no_effect = false;
    logged_used     = false;
}

} // namespace ucs::config
