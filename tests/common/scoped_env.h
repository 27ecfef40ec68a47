/*
 * An environment variable set for one scope (and for the children forked in
 * it), then restored to what it was: set to its old value, or unset.
 */
#ifndef TEST_COMMON_SCOPED_ENV_H
#define TEST_COMMON_SCOPED_ENV_H

#include <cstdlib>
#include <string>

namespace test {

class scoped_env {
public:
    scoped_env(const char *name, const char *value) : name_(name)
    {
        const char *prev = std::getenv(name);
        had_             = (prev != nullptr);
        old_             = had_ ? prev : "";
        ::setenv(name, value, 1);
    }
    ~scoped_env()
    {
        if (had_) {
            ::setenv(name_.c_str(), old_.c_str(), 1);
        } else {
            ::unsetenv(name_.c_str());
        }
    }
    scoped_env(const scoped_env &)            = delete;
    scoped_env &operator=(const scoped_env &) = delete;

private:
    std::string name_;
    std::string old_;
    bool had_;
};

} // namespace test

#endif
