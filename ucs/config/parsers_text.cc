/*
 * Value types that own memory: strings, name lists and allow-lists. All
 * memory is malloc'ed so that C code may read (not free) the values.
 */
#include <ucs/config/parser.h>
#include <ucs/config/parser_util.h>

#include <cstdlib>
#include <new>
#include <vector>

namespace ucs::config::detail {

namespace {

char *duplicate(std::string_view text)
{
    char *copy = static_cast<char *>(std::malloc(text.size() + 1));
    if (copy != nullptr) {
        std::memcpy(copy, text.data(), text.size());
        copy[text.size()] = '\0';
    }
    return copy;
}

void free_names(ucs_config_names_array_t &array)
{
    for (unsigned i = 0; i < array.count; ++i) {
        std::free(array.names[i]);
    }
    std::free(array.names);
    array = {};
}

/* Builds an array from items; false (and nothing allocated) on no memory. */
bool make_names(const std::vector<std::string_view> &items, ucs_config_names_array_t &array)
{
    array = {};
    if (items.empty()) {
        return true;
    }
    array.names = static_cast<char **>(std::calloc(items.size(), sizeof(char *)));
    if (array.names == nullptr) {
        return false;
    }
    for (std::string_view item : items) {
        array.names[array.count] = duplicate(item);
        if (array.names[array.count] == nullptr) {
            free_names(array);
            return false;
        }
        ++array.count;
    }
    return true;
}


std::string join_names(const ucs_config_names_array_t &array)
{
    std::string text;
    for (unsigned i = 0; i < array.count; ++i) {
        text += (i == 0) ? "" : ",";
        text += array.names[i];
    }
    return text;
}

bool clone_names(const ucs_config_names_array_t &src, ucs_config_names_array_t &dest)
{
    std::vector<std::string_view> items(src.names, src.names + src.count);
    return make_names(items, dest);
}

} // namespace

bool split_list(std::string_view text, std::vector<std::string_view> &items)
{
    items.clear();
    if (text.empty()) {
        return true;
    }
    for (;;) {
        size_t comma          = text.find(',');
        std::string_view item = trim(text.substr(0, comma));
        if (item.empty()) {
            return false;
        }
        items.push_back(item);
        if (comma == text.npos) {
            return true;
        }
        text.remove_prefix(comma + 1);
    }
}

/* string */

bool parse_string(const char *text, void *dest, const parser &)
{
    char *copy = duplicate(text);
    if (copy == nullptr) {
        throw std::bad_alloc();
    }
    store(dest, copy);
    return true;
}

std::string print_string(const void *src, const parser &)
{
    const char *value = load<const char *>(src);
    return (value != nullptr) ? value : "";
}

ucs_status_t clone_string(const void *src, void *dest, const parser &)
{
    const char *value = load<const char *>(src);
    char *copy        = duplicate((value != nullptr) ? value : "");
    if (copy == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    store(dest, copy);
    return UCS_OK;
}

void release_string(void *value, const parser &)
{
    std::free(load<char *>(value));
    store(value, static_cast<char *>(nullptr));
}

std::string syntax_string(const parser &)
{
    return "string";
}

/* comma-separated names */

bool parse_string_list(const char *text, void *dest, const parser &)
{
    std::vector<std::string_view> items;
    if (!split_list(text, items)) {
        return false;
    }
    ucs_config_names_array_t array;
    if (!make_names(items, array)) {
        throw std::bad_alloc();
    }
    store(dest, array);
    return true;
}

std::string print_string_list(const void *src, const parser &)
{
    return join_names(load<ucs_config_names_array_t>(src));
}

ucs_status_t clone_string_list(const void *src, void *dest, const parser &)
{
    ucs_config_names_array_t array;
    if (!clone_names(load<ucs_config_names_array_t>(src), array)) {
        return UCS_ERR_NO_MEMORY;
    }
    store(dest, array);
    return UCS_OK;
}

void release_string_list(void *value, const parser &)
{
    auto array = load<ucs_config_names_array_t>(value);
    free_names(array);
    store(value, array);
}

std::string syntax_string_list(const parser &)
{
    return "comma-separated list of names";
}

/* allow-list: "all", "a,b", or "^a,b" */

bool parse_allow_list(const char *text, void *dest, const parser &)
{
    std::string_view view = trim(text);
    ucs_config_allow_list_t list{};
    std::vector<std::string_view> items;

    if (iequals(view, "all")) {
        list.mode = UCS_CONFIG_ALLOW_LIST_ALLOW_ALL;
    } else {
        list.mode = UCS_CONFIG_ALLOW_LIST_ALLOW;
        if (!view.empty() && (view.front() == '^')) {
            list.mode = UCS_CONFIG_ALLOW_LIST_NEGATE;
            view.remove_prefix(1);
            if (trim(view).empty()) {
                return false; /* "^" excludes nothing: almost surely a typo */
            }
        }
        if (!split_list(view, items)) {
            return false;
        }
    }
    if (!make_names(items, list.array)) {
        throw std::bad_alloc();
    }
    store(dest, list);
    return true;
}

std::string print_allow_list(const void *src, const parser &)
{
    auto list = load<ucs_config_allow_list_t>(src);
    switch (list.mode) {
    case UCS_CONFIG_ALLOW_LIST_ALLOW_ALL:
        return "all";
    case UCS_CONFIG_ALLOW_LIST_NEGATE:
        return std::string("^").append(join_names(list.array));
    default:
        return join_names(list.array);
    }
}

ucs_status_t clone_allow_list(const void *src, void *dest, const parser &)
{
    auto list = load<ucs_config_allow_list_t>(src);
    ucs_config_allow_list_t copy{};
    copy.mode = list.mode;
    if (!clone_names(list.array, copy.array)) {
        return UCS_ERR_NO_MEMORY;
    }
    store(dest, copy);
    return UCS_OK;
}

void release_allow_list(void *value, const parser &)
{
    auto list = load<ucs_config_allow_list_t>(value);
    free_names(list.array);
    list.mode = UCS_CONFIG_ALLOW_LIST_ALLOW_ALL;
    store(value, list);
}

std::string syntax_allow_list(const parser &)
{
    return "\"all\", a comma-separated list of names, or ^list for all but those";
}

} // namespace ucs::config::detail
