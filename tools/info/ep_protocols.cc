#include "ep_protocols.h"

namespace info {

void print_ep_protocols(ucp_ep_h ep, FILE *stream)
{
    /* Today the endpoint's own report: lanes and tag_send size ranges. */
    ucp_ep_print_info(ep, stream);
}

} // namespace info
