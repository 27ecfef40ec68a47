/*
 * How a transport registers its components: one line, the same whether it
 * is linked into libuct or built as a loadable module libuct_<name>.so.
 *
 *   UCT_REGISTER_TRANSPORT(tcp, &tcp_component_instance());
 *
 * Built into libuct, the components are added when the library loads.
 * Built as a module (meson: uct_module_args defines UCT_MODULE_BUILD), the
 * line defines the module's entry point instead, `uct_module_descriptor`,
 * which libuct's loader calls after dlopen (ucs/sys/module.h) on the first
 * uct::components() call. The loader refuses a module whose descriptor
 * names another module_abi_version, before touching anything else in it.
 *
 * module_abi_version changes with every incompatible change to what a
 * module shares with libuct: the descriptor, and the classes in uct_md.h,
 * uct_iface.h and uct_types.h that modules derive from or call.
 */
#ifndef UCT_BASE_UCT_MODULE_H
#define UCT_BASE_UCT_MODULE_H

#include <uct/base/uct_md.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace uct {

constexpr uint32_t module_abi_version = 2;

/* What a module's entry point returns. abi_version stays the first field
 * in every version, so that any libuct can read it. */
struct module_descriptor {
    uint32_t abi_version;
    uint32_t num_components;
    const char *name;
    component *const *components;
};

using module_entry_fn = const module_descriptor *(*)();

constexpr const char *module_entry_symbol = "uct_module_descriptor";

/* Registers the components of a transport linked into libuct (what
 * UCT_REGISTER_TRANSPORT expands to there); returns true. */
bool register_builtin(std::initializer_list<component *> list);

/* A module the loader kept. */
struct loaded_module {
    std::string name;
    std::string path;
};

/* The modules loaded so far (components() loads them on its first call). */
std::vector<loaded_module> loaded_modules();

} // namespace uct

#ifdef UCT_MODULE_BUILD
#define UCT_REGISTER_TRANSPORT(_name, ...) \
    extern "C" const uct::module_descriptor *uct_module_descriptor() \
    { \
        static uct::component *const list[] = {__VA_ARGS__}; \
        static const uct::module_descriptor desc{uct::module_abi_version, \
                                                 uint32_t(sizeof(list) / sizeof(list[0])), #_name, \
                                                 list}; \
        return &desc; \
    }
#else
#define UCT_REGISTER_TRANSPORT(_name, ...) \
    namespace { \
    [[maybe_unused]] const bool uct_transport_registered_##_name = \
        uct::register_builtin({__VA_ARGS__}); \
    }
#endif

#endif
