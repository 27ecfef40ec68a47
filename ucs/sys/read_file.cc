#include <ucs/sys/read_file.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace ucs::sys {

namespace {

ucs_status_t status_from_open_errno(int err)
{
    return ((err == ENOENT) || (err == ENOTDIR)) ? UCS_ERR_NO_ELEM : UCS_ERR_IO_ERROR;
}

/* strtoll wants trailing text checked by hand; this accepts only blanks. */
bool parse_number_prefix(const char *text, long long *value, const char **end_p)
{
    errno                  = 0;
    char *end              = nullptr;
    const long long result = std::strtoll(text, &end, 10);
    if ((end == text) || (errno == ERANGE)) {
        return false;
    }
    *value = result;
    *end_p = end;
    return true;
}

} // namespace

bool parse_number(const char *text, long long *value)
{
    if ((text == nullptr) || (value == nullptr)) {
        return false;
    }

    long long result;
    const char *end;
    if (!parse_number_prefix(text, &result, &end)) {
        return false;
    }
    while (std::isspace(static_cast<unsigned char>(*end))) {
        ++end;
    }
    if (*end != '\0') {
        return false;
    }
    *value = result;
    return true;
}

ucs_status_t read_file_string(const char *path, std::string *content, size_t max_size)
{
    if ((path == nullptr) || (content == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* Non-blocking: a FIFO without a writer must not hang the caller. */
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return status_from_open_errno(errno);
    }

    std::string result;
    char buffer[4096];
    ucs_status_t status = UCS_OK;
    for (;;) {
        const ssize_t ret = ::read(fd, buffer, sizeof(buffer));
        if (ret == 0) {
            break;
        }
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            status = UCS_ERR_IO_ERROR;
            break;
        }
        if (result.size() + static_cast<size_t>(ret) > max_size) {
            status = UCS_ERR_EXCEEDS_LIMIT;
            break;
        }
        result.append(buffer, static_cast<size_t>(ret));
    }
    ::close(fd);

    if (status == UCS_OK) {
        *content = std::move(result);
    }
    return status;
}

ucs_status_t read_file_number(const char *path, long long *value)
{
    if (value == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::string content;
    const ucs_status_t status = read_file_string(path, &content, 4096);
    if (status != UCS_OK) {
        return status;
    }
    return parse_number(content.c_str(), value) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

ucs_status_t read_file_keyed_number(const char *path, const char *key, long long *value)
{
    if ((key == nullptr) || (*key == '\0') || (value == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::string content;
    const ucs_status_t status = read_file_string(path, &content, 1 << 20);
    if (status != UCS_OK) {
        return status;
    }

    const size_t key_len = std::strlen(key);
    size_t line_start    = 0;
    while (line_start < content.size()) {
        size_t line_end = content.find('\n', line_start);
        if (line_end == std::string::npos) {
            line_end = content.size();
        }

        const std::string line = content.substr(line_start, line_end - line_start);
        if ((line.compare(0, key_len, key) == 0) && (line.size() > key_len) &&
            (line[key_len] == ':')) {
            long long result;
            const char *end;
            if (!parse_number_prefix(line.c_str() + key_len + 1, &result, &end)) {
                return UCS_ERR_INVALID_PARAM;
            }
            *value = result;
            return UCS_OK;
        }
        line_start = line_end + 1;
    }
    return UCS_ERR_NO_ELEM;
}

} // namespace ucs::sys
