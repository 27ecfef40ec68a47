/*
 * libuct_badabi.so: a module whose entry point declares another module ABI
 * version, as a module built against an older or newer ucx-ng would. The
 * loader must refuse it with a message, and never call anything else.
 */
#include <uct/base/uct_module.h>

extern "C" const uct::module_descriptor *uct_module_descriptor()
{
    static const uct::module_descriptor desc{uct::module_abi_version + 1, 0, "badabi", nullptr};
    return &desc;
}
