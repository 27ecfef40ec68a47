/*
 * How ucx_info shows an endpoint's protocols (-e). One function, so the
 * protocol selection table can take its place here when it exists.
 */
#ifndef TOOLS_INFO_EP_PROTOCOLS_H
#define TOOLS_INFO_EP_PROTOCOLS_H

#include <ucp/api/ucp.h>

#include <cstdio>

namespace info {

/* Lanes and, per operation, which protocol each message size takes. */
void print_ep_protocols(ucp_ep_h ep, FILE *stream);

} // namespace info

#endif
