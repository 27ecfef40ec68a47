/*
 * Reading and caching the configuration file (format in file.h).
 */
#include "ucx_ng_config.h"

#include <ucs/config/file.h>
#include <ucs/config/parser_util.h>
#include <ucs/debug/log.h>
#include <ucs/sys/read_file.h>

#include <algorithm>
#include <dlfcn.h>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace ucs::config {

namespace {

/* A configuration file holds a few dozen short lines: anything much larger
 * is not one (UCX_CONFIG_FILE=/dev/urandom, a binary), and is not read. */
constexpr size_t max_file_size      = 1 << 20;
constexpr size_t max_line_length    = 4096;
constexpr unsigned max_line_reports = 10; /* malformed lines warned about */
constexpr const char *file_name     = "ucx.conf";

struct parsed_file {
    std::unordered_map<std::string, file_value> values;
    std::vector<std::string> order; /* first appearance */
    unsigned malformed = 0;
};

/* Both are constant-initialised, so lookups from library constructors work. */
std::mutex cache_lock;
std::shared_ptr<const parsed_file> cache;

bool valid_name(std::string_view name)
{
    if (name.empty()) {
        return false;
    }
    for (char c : name) {
        if (!(((c >= 'A') && (c <= 'Z')) || ((c >= 'a') && (c <= 'z')) ||
              ((c >= '0') && (c <= '9')) || (c == '_'))) {
            return false;
        }
    }
    return true;
}

/* The value part of a line without quotes and trailing comment; false if malformed. */
bool extract_value(std::string_view text, std::string &value)
{
    text = detail::trim(text);
    if (!text.empty() && ((text.front() == '"') || (text.front() == '\''))) {
        size_t close = text.find(text.front(), 1);
        if (close == text.npos) {
            return false;
        }
        std::string_view rest = detail::trim(text.substr(close + 1));
        if (!rest.empty() && (rest.front() != '#')) {
            return false;
        }
        value = text.substr(1, close - 1);
        return true;
    }

    /* A '#' starts a comment only after white space: "a#b" is a value. */
    for (size_t i = 1; i < text.size(); ++i) {
        if ((text[i] == '#') && detail::is_space(text[i - 1])) {
            text = detail::trim(text.substr(0, i));
            break;
        }
    }
    value = text;
    return true;
}

void parse_line(const std::string &path, unsigned line_number, std::string_view line,
                parsed_file &parsed)
{
    std::string_view text = detail::trim(line);
    if (text.empty() || (text.front() == '#')) {
        return;
    }

    size_t equals = text.find('=');
    std::string value;
    std::string_view name = detail::trim(text.substr(0, equals));
    if ((text.size() > max_line_length) || (equals == text.npos) || !valid_name(name) ||
        !extract_value(text.substr(equals + 1), value)) {
        if (++parsed.malformed <= max_line_reports) {
            ucs_warn("%s:%u: malformed line ignored: '%.*s' (expected UCX_NAME = value)",
                     path.c_str(), line_number, static_cast<int>(std::min<size_t>(text.size(), 80)),
                     text.data());
        }
        return;
    }

    std::string var_name(name);
    if (var_name.rfind("UCX_", 0) != 0) {
        var_name = "UCX_" + var_name;
    }
    auto [it, inserted] = parsed.values.insert_or_assign(
        var_name, file_value{std::move(value), path + ":" + std::to_string(line_number)});
    if (inserted) {
        parsed.order.push_back(it->first);
    }
}

/* Adds the settings of one file to parsed, overriding earlier files. */
void load_into(const std::string &path, parsed_file *parsed)
{

    std::string content;
    const ucs_status_t status = ucs::sys::read_file_string(path.c_str(), &content, max_file_size);
    if (status == UCS_ERR_NO_ELEM) {
        ucs_debug("configuration file '%s' not found", path.c_str());
        return;
    }
    if (status != UCS_OK) {
        ucs_warn("configuration file '%s' not read: %s", path.c_str(),
                 (status == UCS_ERR_EXCEEDS_LIMIT) ? "larger than 1 MiB" :
                                                     ucs_status_string(status));
        return;
    }
    if (content.find('\0') != content.npos) {
        ucs_warn("configuration file '%s' not read: not a text file", path.c_str());
        return;
    }
    unsigned line_number = 0;
    for (size_t start = 0; start < content.size();) {
        size_t end = content.find('\n', start);
        if (end == content.npos) {
            end = content.size();
        }
        parse_line(path, ++line_number, std::string_view(content).substr(start, end - start),
                   *parsed);
        start = end + 1;
    }
    ucs_debug("parsed configuration file '%s'", path.c_str());
}

std::shared_ptr<const parsed_file> load(const std::vector<std::string> &paths)
{
    auto parsed = std::make_shared<parsed_file>();
    for (const std::string &path : paths) {
        const unsigned malformed_before = parsed->malformed;
        load_into(path, parsed.get());
        if (parsed->malformed - malformed_before > max_line_reports) {
            ucs_warn("%s: %u more malformed lines ignored", path.c_str(),
                     parsed->malformed - malformed_before - max_line_reports);
        }
    }
    return parsed;
}

std::shared_ptr<const parsed_file> current_file()
{
    std::lock_guard<std::mutex> guard(cache_lock);
    if (cache == nullptr) {
        cache = load(file_paths());
    }
    return cache;
}

} // namespace

std::vector<std::string> file_paths()
{
    const char *only = std::getenv("UCX_CONFIG_FILE");
    if (only != nullptr) {
        return (*only == '\0') ? std::vector<std::string>{} : std::vector<std::string>{only};
    }

    /* UCX 1.13's list (ucs_config_parse_config_files), in its order. */
    std::vector<std::string> paths = {UCX_NG_SYSCONF_FILE};
    Dl_info info;
    if ((dladdr(reinterpret_cast<void *>(&file_paths), &info) != 0) &&
        (info.dli_fname != nullptr)) {
        std::string library = info.dli_fname;
        size_t slash        = library.rfind('/');
        std::string dir     = (slash == library.npos) ? "." : library.substr(0, slash);
        paths.push_back(dir + "/../etc/" + file_name);
    }
    if (const char *home = std::getenv("HOME")) {
        paths.push_back(std::string(home) + "/" + file_name);
    }
    if (const char *dir = std::getenv("UCX_CONFIG_DIR")) {
        paths.push_back(std::string(dir) + "/" + file_name);
    }
    paths.push_back(std::string("./") + file_name);
    return paths;
}

bool file_lookup(const std::string &var_name, file_value &out)
{
    auto file = current_file();
    auto it   = file->values.find(var_name);
    if (it == file->values.end()) {
        return false;
    }
    out = it->second;
    return true;
}

std::vector<std::string> file_variables()
{
    return current_file()->order;
}

void drop_file_cache()
{
    std::lock_guard<std::mutex> guard(cache_lock);
    cache.reset();
}

} // namespace ucs::config
