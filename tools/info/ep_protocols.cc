#include "ep_protocols.h"

namespace info {

void print_ep_protocols(ucp_ep_h ep, FILE *stream)
{
    /* The endpoint's report: its configuration's lanes and protocol tables. */
    ucp_ep_print_info(ep, stream);
}

} // namespace info
