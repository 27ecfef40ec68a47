/* The two mm components. */
#include "mm_md.h"

#include <uct/base/uct_module.h>

namespace uct::mm {

namespace {

mm_component &posix()
{
    static mm_component instance("posix", posix_backend());
    return instance;
}

mm_component &sysv()
{
    static mm_component instance("sysv", sysv_backend());
    return instance;
}

} // namespace

UCT_REGISTER_TRANSPORT(mm, &posix(), &sysv())

} // namespace uct::mm
