#include <uct/base/uct_md.h>

#include <ucs/debug/log.h>

#include <algorithm>
#include <cstring>

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
std::vector<component*> &registry()
{
    static std::vector<component*> list;
    return list;
}

} // namespace

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

const std::vector<component*> &components()
{
    return registry();
}

void register_component(component *c)
{
    auto &list = registry();
    if (std::find(list.begin(), list.end(), c) == list.end()) {
        list.push_back(c);
    }
}

} // namespace uct
