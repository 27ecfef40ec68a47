#include "mm_node.h"

#include <ucs/sys/identity.h>

namespace uct::mm {

uint64_t node_id()
{
    using ucs::sys::namespace_type;
    static const uint64_t id = ucs::sys::node_id({namespace_type::pid, namespace_type::ipc,
                                                  namespace_type::net});
    return id;
}

} // namespace uct::mm
