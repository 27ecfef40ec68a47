/*
 * The UCP API version this framework implements. Applications pass
 * UCP_API_MAJOR/UCP_API_MINOR to ucp_init_version() (through ucp_init()),
 * so these values are part of the ABI: UCX 1.13.
 */
#ifndef UCP_VERSION_H_
#define UCP_VERSION_H_

/* Packs a major/minor pair into one comparable integer. */
#define UCP_VERSION(_major, _minor) \
    (((_major) << UCP_VERSION_MAJOR_SHIFT) | ((_minor) << UCP_VERSION_MINOR_SHIFT))
#define UCP_VERSION_MAJOR_SHIFT 24
#define UCP_VERSION_MINOR_SHIFT 16

#define UCP_API_MAJOR   1
#define UCP_API_MINOR   13
#define UCP_API_VERSION UCP_VERSION(1, 13)

#endif
