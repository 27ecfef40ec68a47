#include "test_mm_util.h"

#include <uct/sm/mm/mm_md.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <dirent.h>
#include <unistd.h>

namespace test {

mm_entity::mm_entity(const std::string &tl_name, const uct::mm::mm_config &config)
{
    worker_ = std::make_unique<uct::worker>(nullptr, UCS_THREAD_MODE_SINGLE);
    for (uct::component *comp : uct::components()) {
        if (tl_name != comp->name()) {
            continue;
        }
        uct::md *md         = nullptr;
        ucs_status_t status = comp->md_open(comp->name(), &md);
        if (status != UCS_OK) {
            error_ = std::string("md_open: ") + ucs_status_string(status);
            return;
        }
        auto *mm_md = dynamic_cast<uct::mm::mm_md *>(md);
        if (mm_md == nullptr) {
            error_ = "component " + tl_name + " is not an mm component";
            delete md;
            return;
        }
        uct::iface_params params;
        params.tl_name         = comp->name();
        params.dev_name        = uct::mm::DEVICE_NAME;
        params.err_handler     = on_error;
        params.err_handler_arg = this;
        status                 = mm_md->iface_open_with_config(*worker_, params, config, &iface_);
        if (status != UCS_OK) {
            error_ = std::string("iface_open: ") + ucs_status_string(status);
            iface_ = nullptr;
            delete md;
            return;
        }
        component_ = comp;
        md_        = md;
        return;
    }
    error_ = "component '" + tl_name + "' not found";
}

mm_entity::~mm_entity()
{
    for (uct::ep *ep : eps_) {
        delete ep;
    }
    delete iface_;
    delete md_;
}

uct_addresses mm_entity::addresses() const
{
    uct_addresses addr;
    addr.device.resize(iface_->attr().device_addr_len);
    addr.iface.resize(iface_->attr().iface_addr_len);
    iface_->get_device_address(addr.device.data());
    iface_->get_address(addr.iface.data());
    return addr;
}

uct::ep *mm_entity::connect(const uct_addresses &peer, ucs_status_t *status_p)
{
    uct::ep *ep         = nullptr;
    ucs_status_t status = iface_->ep_create_connected(peer.device.data(), peer.device.size(),
                                                      peer.iface.data(), peer.iface.size(), &ep);
    if (status_p != nullptr) {
        *status_p = status;
    }
    if (status != UCS_OK) {
        return nullptr;
    }
    eps_.push_back(ep);
    return ep;
}

void mm_entity::destroy_ep(uct::ep *ep)
{
    for (auto it = eps_.begin(); it != eps_.end(); ++it) {
        if (*it == ep) {
            eps_.erase(it);
            delete ep;
            return;
        }
    }
}

ucs_status_t mm_entity::on_error(void *arg, uct::ep *ep, ucs_status_t status)
{
    static_cast<mm_entity *>(arg)->failures_.push_back({ep, status});
    return UCS_OK;
}

std::set<std::string> dev_shm_entries()
{
    std::set<std::string> names;
    DIR *dir = opendir("/dev/shm");
    if (dir == nullptr) {
        return names;
    }
    while (dirent *e = readdir(dir)) {
        if (std::strncmp(e->d_name, "ucx-ng", 6) == 0) {
            names.insert(e->d_name);
        }
    }
    closedir(dir);
    return names;
}

std::vector<std::string> posix_segment_links()
{
    std::vector<std::string> links;
    DIR *dir = opendir("/proc/self/fd");
    if (dir == nullptr) {
        return links;
    }
    while (dirent *e = readdir(dir)) {
        char path[300], target[512];
        std::snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            if (std::strstr(target, "ucx-ng-mm") != nullptr) {
                links.push_back(target);
            }
        }
    }
    closedir(dir);
    return links;
}

std::vector<sysv_segment> sysv_segments_of(const std::set<pid_t> &pids)
{
    /* Columns: key shmid perms size cpid lpid ... */
    std::vector<sysv_segment> found;
    std::ifstream in("/proc/sysvipc/shm");
    std::string line;
    std::getline(in, line); /* header */
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        long long key, size;
        int shmid;
        unsigned mode;
        pid_t cpid;
        if (fields >> key >> shmid >> std::oct >> mode >> std::dec >> size >> cpid) {
            if (pids.count(cpid) != 0) {
                found.push_back({shmid, mode, cpid});
            }
        }
    }
    return found;
}

} // namespace test
