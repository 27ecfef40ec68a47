#include "table_cells.h"

#include <cstdio>

namespace perftest {

namespace {

std::string pad_left(const std::string &text, int width)
{
    return std::string(size_t(width) - text.size(), ' ') + text;
}

} // namespace

std::string number_cell(double value, int width, int decimals, bool grouped)
{
    char text[64];
    for (int d = decimals; d >= 0; --d) {
        std::snprintf(text, sizeof(text), grouped ? "%'.*f" : "%.*f", d, value);
        if (std::string(text).size() <= size_t(width)) {
            return pad_left(text, width);
        }
    }
    for (int d = 3; d >= 0; --d) {
        std::snprintf(text, sizeof(text), "%.*e", d, value);
        if (std::string(text).size() <= size_t(width)) {
            return pad_left(text, width);
        }
    }
    return std::string(size_t(width), '#');
}

std::string text_cell(const std::string &text, int width)
{
    if (text.size() <= size_t(width)) {
        return text + std::string(size_t(width) - text.size(), ' ');
    }
    return text.substr(0, size_t(width) - 1) + "~";
}

std::string centered_cell(const std::string &text, int width)
{
    if (text.size() >= size_t(width)) {
        return text;
    }
    size_t left = (size_t(width) - text.size()) / 2;
    return std::string(left, ' ') + text + std::string(size_t(width) - text.size() - left, ' ');
}

} // namespace perftest
