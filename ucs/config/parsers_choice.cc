/*
 * Value types chosen from a fixed set of words: bool, ternary, on/off/auto,
 * and enums from a name list. Words match in any case.
 */
#include <ucs/config/parser.h>
#include <ucs/config/parser_util.h>

namespace ucs::config::detail {

namespace {

const char *const true_words[]  = {"y", "yes", "on", "1", "true"};
const char *const false_words[] = {"n", "no", "off", "0", "false"};

/* 1 for a "yes" word, 0 for a "no" word, -1 otherwise. */
int bool_word(std::string_view text)
{
    for (const char *word : true_words) {
        if (iequals(text, word)) {
            return 1;
        }
    }
    for (const char *word : false_words) {
        if (iequals(text, word)) {
            return 0;
        }
    }
    return -1;
}

} // namespace

/* bool */

bool parse_bool(const char *text, void *dest, const parser &)
{
    int value = bool_word(trim(text));
    if (value < 0) {
        return false;
    }
    store(dest, value);
    return true;
}

std::string print_bool(const void *src, const parser &)
{
    return load<int>(src) ? "y" : "n";
}

std::string syntax_bool(const parser &)
{
    return "<y|n> (also yes/no, on/off, true/false, 1/0)";
}

/* yes/no/try/auto */

bool parse_ternary(const char *text, void *dest, const parser &)
{
    std::string_view view = trim(text);
    ucs_ternary_auto_value_t value;
    int word = bool_word(view);
    if (word >= 0) {
        value = word ? UCS_YES : UCS_NO;
    } else if (iequals(view, "try") || iequals(view, "maybe")) {
        value = UCS_TRY;
    } else if (iequals(view, "auto")) {
        value = UCS_AUTO;
    } else {
        return false;
    }
    store(dest, value);
    return true;
}

std::string print_ternary(const void *src, const parser &)
{
    switch (load<ucs_ternary_auto_value_t>(src)) {
    case UCS_NO:
        return "no";
    case UCS_YES:
        return "yes";
    case UCS_TRY:
        return "try";
    case UCS_AUTO:
        return "auto";
    default:
        return "<invalid>";
    }
}

std::string syntax_ternary(const parser &)
{
    return "<yes|no|try|auto>";
}

/* on/off/auto */

bool parse_on_off_auto(const char *text, void *dest, const parser &)
{
    std::string_view view = trim(text);
    ucs_on_off_auto_value_t value;
    int word = bool_word(view);
    if (word >= 0) {
        value = word ? UCS_CONFIG_ON : UCS_CONFIG_OFF;
    } else if (iequals(view, "auto")) {
        value = UCS_CONFIG_AUTO;
    } else {
        return false;
    }
    store(dest, value);
    return true;
}

std::string print_on_off_auto(const void *src, const parser &)
{
    switch (load<ucs_on_off_auto_value_t>(src)) {
    case UCS_CONFIG_OFF:
        return "off";
    case UCS_CONFIG_ON:
        return "on";
    case UCS_CONFIG_AUTO:
        return "auto";
    default:
        return "<invalid>";
    }
}

std::string syntax_on_off_auto(const parser &)
{
    return "<on|off|auto>";
}

/* enum: an index into the parser's name list */

namespace {

const char *const *enum_names(const parser &self)
{
    return static_cast<const char *const *>(self.arg);
}

} // namespace

bool parse_enum(const char *text, void *dest, const parser &self)
{
    std::string_view view = trim(text);
    for (unsigned i = 0; i < self.arg_count; ++i) {
        if (iequals(view, enum_names(self)[i])) {
            store(dest, i);
            return true;
        }
    }
    return false;
}

std::string print_enum(const void *src, const parser &self)
{
    unsigned value = load<unsigned>(src);
    if (value < self.arg_count) {
        return enum_names(self)[value];
    }
    return std::to_string(value); /* not one of the names; parse rejects it */
}

std::string syntax_enum(const parser &self)
{
    std::string text = "one of: ";
    for (unsigned i = 0; i < self.arg_count; ++i) {
        text += (i == 0) ? "" : ", ";
        text += enum_names(self)[i];
    }
    return text;
}

/* bitmap: a comma-separated set of the parser's names, bit i for names[i] */

bool parse_bitmap(const char *text, void *dest, const parser &self)
{
    std::string_view rest = trim(text);
    unsigned value        = 0;
    while (!rest.empty()) {
        size_t comma          = rest.find(',');
        std::string_view word = trim(rest.substr(0, comma));
        rest                  = (comma == rest.npos) ? "" : rest.substr(comma + 1);
        unsigned i            = 0;
        while ((i < self.arg_count) && !iequals(word, enum_names(self)[i])) {
            ++i;
        }
        if ((i == self.arg_count) || (i >= 32)) {
            return false;
        }
        value |= 1u << i;
    }
    store(dest, value);
    return true;
}

std::string print_bitmap(const void *src, const parser &self)
{
    unsigned value = load<unsigned>(src);
    std::string text;
    for (unsigned i = 0; (i < self.arg_count) && (i < 32); ++i) {
        if (value & (1u << i)) {
            if (!text.empty()) {
                text += ',';
            }
            text += enum_names(self)[i];
        }
    }
    return text;
}

std::string syntax_bitmap(const parser &self)
{
    std::string text = "comma-separated list of: [";
    for (unsigned i = 0; i < self.arg_count; ++i) {
        text += (i == 0) ? "" : "|";
        text += enum_names(self)[i];
    }
    return text + "]";
}

/* values that own nothing */

ucs_status_t clone_plain(const void *src, void *dest, const parser &self)
{
    std::memcpy(dest, src, self.value_size);
    return UCS_OK;
}

void release_plain(void *value, const parser &self)
{
    std::memset(value, 0, self.value_size);
}

} // namespace ucs::config::detail
