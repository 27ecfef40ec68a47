/*
 * Helpers for the configuration tests: scoped environment changes, temporary
 * files, captured log output and printing into a string.
 */
#ifndef TEST_UCS_CONFIG_TEST_UTIL_H
#define TEST_UCS_CONFIG_TEST_UTIL_H

#include <ucs/config/file.h>
#include <ucs/debug/log.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace config_test {

inline std::string read_text(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline size_t count_of(const std::string &text, const std::string &what)
{
    size_t count = 0;
    for (size_t pos = text.find(what); pos != text.npos; pos = text.find(what, pos + what.size())) {
        ++count;
    }
    return count;
}

/* Sets and unsets environment variables; restores them when destroyed. */
class env_guard {
public:
    env_guard()                             = default;
    env_guard(const env_guard &)            = delete;
    env_guard &operator=(const env_guard &) = delete;

    ~env_guard() { restore(); }

    void set(const std::string &name, const std::string &value)
    {
        save(name);
        setenv(name.c_str(), value.c_str(), 1);
    }

    void unset(const std::string &name)
    {
        save(name);
        unsetenv(name.c_str());
    }

    void restore()
    {
        for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it) {
            if (it->second) {
                setenv(it->first.c_str(), it->second->c_str(), 1);
            } else {
                unsetenv(it->first.c_str());
            }
        }
        m_saved.clear();
    }

private:
    void save(const std::string &name)
    {
        const char *old = getenv(name.c_str());
        m_saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    }

    std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

/* A file under /tmp, removed when destroyed. */
class temp_file {
public:
    explicit temp_file(const std::string &text = "")
    {
        char name[] = "/tmp/ucs_config_test_XXXXXX";
        int fd      = mkstemp(name);
        if (fd >= 0) {
            close(fd);
        }
        m_path = name;
        write(text);
    }

    ~temp_file() { unlink(m_path.c_str()); }

    temp_file(const temp_file &)            = delete;
    temp_file &operator=(const temp_file &) = delete;

    void write(const std::string &text) const
    {
        std::ofstream out(m_path, std::ios::trunc);
        out << text;
    }

    std::string text() const { return read_text(m_path); }

    const std::string &path() const { return m_path; }

private:
    std::string m_path;
};

/*
 * Makes the process read a config file with the given text (or none) and
 * drops the file cache on entry and exit, so no test sees another's file.
 */
class config_file_scope {
public:
    explicit config_file_scope(const std::string &text) : m_file(text)
    {
        m_env.set("UCX_CONFIG_FILE", m_file.path());
        ucs::config::drop_file_cache();
    }

    /* No file at all (UCX_CONFIG_FILE set but empty). */
    config_file_scope()
    {
        m_env.set("UCX_CONFIG_FILE", "");
        ucs::config::drop_file_cache();
    }

    ~config_file_scope()
    {
        m_env.restore();
        ucs::config::drop_file_cache();
    }

    const temp_file &file() const { return m_file; }

private:
    env_guard m_env;
    temp_file m_file;
};

/* How many times `what` occurs in `text` (log lines counted in tests). */
inline size_t occurrences(const std::string &text, const std::string &what)
{
    size_t count = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        ++count;
    }
    return count;
}

/* Sends log output to a temp file; restores stdout and the level after. */
class log_capture {
public:
    explicit log_capture(ucs_log_level_t level = UCS_LOG_LEVEL_WARN) :
        m_saved_level(ucs::g_log_level)
    {
        ucs::log_set_file(m_file.path().c_str());
        ucs::log_set_level(level);
    }

    ~log_capture()
    {
        ucs::log_set_file("stdout");
        ucs::log_set_level(m_saved_level);
    }

    log_capture(const log_capture &)            = delete;
    log_capture &operator=(const log_capture &) = delete;

    std::string text() const { return m_file.text(); }

private:
    temp_file m_file;
    ucs_log_level_t m_saved_level;
};

/* Collects what a function prints to a FILE* into a string. */
template <typename Print>
std::string print_to_string(Print &&print)
{
    char *buffer = nullptr;
    size_t size  = 0;
    FILE *stream = open_memstream(&buffer, &size);
    if (stream == nullptr) {
        return "<open_memstream failed>";
    }
    print(stream);
    std::fclose(stream);
    std::string text(buffer, size);
    std::free(buffer);
    return text;
}

} // namespace config_test

#endif
