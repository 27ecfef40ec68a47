/*
 * Names in UCX_TLS / UCX_*_DEVICES that this host does not have (see
 * unavailable_report.h); the wording is UCX 1.13's.
 */
#include "unavailable_report.h"

#include <ucs/debug/log.h>

#include <functional>
#include <set>

namespace ucp {

namespace {

const char *const tl_aliases[] = {"sm", "shm", "mm", "cuda", "rc", "rc_v", "ud", "ud_v", "ib"};

/* UCX's uct_device_type_names. */
const char *device_type_words(uct::device_type type)
{
    switch (type) {
    case uct::device_type::NET:
        return "network";
    case uct::device_type::SHM:
        return "intra-node";
    case uct::device_type::ACC:
        return "accelerator";
    case uct::device_type::SELF:
        return "loopback";
    }
    return "unknown";
}

const ucs_config_allow_list_t &device_list(const context_config &config, uct::device_type type)
{
    switch (type) {
    case uct::device_type::NET:
        return config.net_devices;
    case uct::device_type::SHM:
        return config.shm_devices;
    case uct::device_type::ACC:
        return config.acc_devices;
    case uct::device_type::SELF:
        break;
    }
    return config.self_devices;
}

bool tl_name_exists(const std::string &name, const std::vector<found_resource> &found)
{
    char *names[] = {const_cast<char *>(name.c_str())};
    ucs_config_allow_list_t one{};
    one.array.names = names;
    one.array.count = 1;
    one.mode        = UCS_CONFIG_ALLOW_LIST_ALLOW;
    for (const found_resource &res : found) {
        if (tl_allowed(one, res.tl_name.c_str())) {
            return true;
        }
    }
    return false;
}

void report(const ucs_config_names_array_t &wanted, const std::string &what,
            const std::set<std::string> &available,
            const std::function<bool(const std::string &)> &exists)
{
    std::string missing;
    unsigned count = 0;
    for (unsigned i = 0; i < wanted.count; ++i) {
        const std::string name = wanted.names[i];
        if ((name != "all") && !exists(name)) {
            missing += (count++ > 0) ? ",'" : "'";
            missing += name;
            missing += '\'';
        }
    }
    if (count == 0) {
        return;
    }
    std::string choices;
    for (const std::string &name : available) {
        if (!choices.empty()) {
            choices += ", ";
        }
        choices += name;
    }
    ucs_warn("%s%s %s %s not available, please use one or more of: %s", what.c_str(),
             (count > 1) ? "s" : "", missing.c_str(), (count > 1) ? "are" : "is",
             choices.empty() ? "(none)" : choices.c_str());
}

} // namespace

void warn_unavailable(const context_config &config, const std::vector<found_resource> &found)
{
    for (uct::device_type type : {uct::device_type::NET, uct::device_type::SHM,
                                  uct::device_type::ACC, uct::device_type::SELF}) {
        std::set<std::string> available;
        for (const found_resource &res : found) {
            if (res.type == type) {
                available.insert("'" + res.dev_name + "'(" + res.component + ")");
            }
        }
        report(device_list(config, type).array, std::string(device_type_words(type)) + " device",
               available, [&](const std::string &name) {
                   for (const found_resource &res : found) {
                       if ((res.type == type) && (res.dev_name == name)) {
                           return true;
                       }
                   }
                   return false;
               });
    }

    std::set<std::string> available_tls;
    for (const found_resource &res : found) {
        available_tls.insert(res.tl_name);
    }
    for (const char *alias : tl_aliases) {
        if (tl_name_exists(alias, found)) {
            available_tls.insert(alias);
        }
    }
    report(config.tls.array, "transport", available_tls,
           [&](const std::string &name) { return tl_name_exists(name, found); });
}

} // namespace ucp
