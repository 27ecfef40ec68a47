#include <uct/base/uct_md.h>
#include <uct/base/uct_module.h>

#include <ucs/debug/log.h>
#include <ucs/sys/module.h>

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <mutex>

namespace uct {

ucs_status_t md::mem_reg(void *, size_t, unsigned, mem_h *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t md::mem_dereg(mem_h)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t md::mem_alloc(size_t *, void **, unsigned, mem_h *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t md::mem_alloc_of_type(ucs_memory_type_t type, size_t *length_p, void **address_p,
                                   unsigned flags, mem_h *memh_p)
{
    if (type != UCS_MEMORY_TYPE_HOST) {
        return UCS_ERR_UNSUPPORTED;
    }
    return mem_alloc(length_p, address_p, flags, memh_p);
}

ucs_status_t md::mem_free(mem_h)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t md::mkey_pack(mem_h, void *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t md::detect_memory_type(const void *, size_t, ucs_memory_type_t *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t component::rkey_unpack(const void *, size_t, rkey_bundle *rkey_p)
{
    /* Components without remote keys hand out an empty one. */
    *rkey_p = rkey_bundle{};
    return UCS_OK;
}

void component::rkey_release(const rkey_bundle &)
{
}

ucs_status_t component::rkey_ptr(const rkey_bundle &, uint64_t, void **)
{
    return UCS_ERR_UNREACHABLE;
}

namespace {

/* Function-local so registration from other static initialisers is safe. */
std::vector<component *> &registry()
{
    static std::vector<component *> list;
    return list;
}

std::vector<loaded_module> &modules_kept()
{
    static std::vector<loaded_module> list;
    return list;
}

std::once_flag modules_once;

/* Checks a module's entry point and registers what it declares. */
ucs_status_t init_module(const ucs::module::candidate &c, void *dl_handle)
{
    auto entry = reinterpret_cast<module_entry_fn>(dlsym(dl_handle, module_entry_symbol));
    if (entry == nullptr) {
        ucs_error("uct module %s (%s) has no %s(): not a uct module, not loaded", c.name.c_str(),
                  c.path.c_str(), module_entry_symbol);
        return UCS_ERR_INVALID_PARAM;
    }
    const module_descriptor *desc = entry();
    if ((desc == nullptr) || (desc->abi_version != module_abi_version)) {
        ucs_error("uct module %s (%s) was built for module ABI version %u, this libuct "
                  "has version %u: not loaded (rebuild the module with this ucx-ng)",
                  c.name.c_str(), c.path.c_str(), (desc != nullptr) ? desc->abi_version : 0u,
                  module_abi_version);
        return UCS_ERR_UNSUPPORTED;
    }
    if ((desc->name == nullptr) || (c.name != desc->name)) {
        ucs_error("uct module %s (%s) calls itself '%s': not loaded", c.name.c_str(),
                  c.path.c_str(), (desc->name != nullptr) ? desc->name : "");
        return UCS_ERR_INVALID_PARAM;
    }
    for (uint32_t i = 0; i < desc->num_components; ++i) {
        register_component(desc->components[i]);
    }
    modules_kept().push_back({c.name, c.path});
    return UCS_OK;
}

} // namespace

bool register_builtin(std::initializer_list<component *> list)
{
    for (component *c : list) {
        register_component(c);
    }
    return true;
}

std::vector<loaded_module> loaded_modules()
{
    components();
    return modules_kept();
}

void copy_resource_name(char (&dest)[32], const char *src)
{
    std::strncpy(dest, src, sizeof(dest) - 1);
    dest[sizeof(dest) - 1] = '\0';
}

ucs_status_t single_md_resource(const char *md_name, std::vector<md_resource> *out)
{
    if (out == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    try {
        md_resource res{};
        copy_resource_name(res.md_name, md_name);
        out->push_back(res);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

ucs_status_t single_tl_resource(const char *tl_name, const char *dev_name, device_type type,
                                std::vector<tl_resource> *out)
{
    if (out == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    try {
        tl_resource res{};
        copy_resource_name(res.tl_name, tl_name);
        copy_resource_name(res.dev_name, dev_name);
        res.type = type;
        out->push_back(res);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

const std::vector<component *> &components()
{
    std::call_once(modules_once, [] { ucs::module::load_all("uct", init_module); });
    return registry();
}

ucs_status_t open_md_of(const std::string &tl_name, const std::string &dev_name,
                        component **component_p, md **md_p, tl_resource *resource_p)
{
    for (component *comp : components()) {
        std::vector<md_resource> mds;
        if (comp->query_md_resources(&mds) != UCS_OK) {
            continue;
        }
        for (const md_resource &mdr : mds) {
            md *opened = nullptr;
            if (comp->md_open(mdr.md_name, &opened) != UCS_OK) {
                continue;
            }
            std::unique_ptr<md> owned(opened);
            std::vector<tl_resource> tls;
            if (owned->query_tl_resources(&tls) != UCS_OK) {
                continue;
            }
            for (const tl_resource &tl : tls) {
                if ((tl_name == tl.tl_name) && (dev_name.empty() || (dev_name == tl.dev_name))) {
                    *component_p = comp;
                    *md_p        = owned.release();
                    *resource_p  = tl;
                    return UCS_OK;
                }
            }
        }
    }
    return UCS_ERR_NO_DEVICE;
}

void register_component(component *c)
{
    auto &list = registry();
    if (std::find(list.begin(), list.end(), c) == list.end()) {
        list.push_back(c);
    }
}

} // namespace uct
