/* Exported libibverbs calls the emulated device does not support. They
 * must still be ours: rdma-core's versions would treat our objects as its
 * own provider structures and read past their ends. */
#include "objects.h"

#include <cerrno>

using namespace verbs_emu;

int ibv_rereg_mr(struct ibv_mr *, int, struct ibv_pd *, void *, size_t, int)
{
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT; /* the old MR stays valid */
}

int ibv_attach_mcast(struct ibv_qp *, const union ibv_gid *, uint16_t)
{
    return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *, const union ibv_gid *, uint16_t)
{
    return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *, struct ibv_ece *)
{
    return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *, struct ibv_ece *)
{
    return EOPNOTSUPP;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int)
{
    errno = EOPNOTSUPP;
    return nullptr;
}

struct ibv_context *ibv_import_device(int)
{
    errno = EOPNOTSUPP;
    return nullptr;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *, uint32_t)
{
    errno = EOPNOTSUPP;
    return nullptr;
}

void ibv_unimport_pd(struct ibv_pd *)
{
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *, uint32_t)
{
    errno = EOPNOTSUPP;
    return nullptr;
}

void ibv_unimport_mr(struct ibv_mr *)
{
}

struct ibv_dm *ibv_import_dm(struct ibv_context *, uint32_t)
{
    errno = EOPNOTSUPP;
    return nullptr;
}

void ibv_unimport_dm(struct ibv_dm *)
{
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *)
{
    /* QPs are never created extended here */
    errno = EOPNOTSUPP;
    return nullptr;
}

int ibv_query_qp_data_in_order(struct ibv_qp *, enum ibv_wr_opcode, uint32_t)
{
    return 0; /* no promise beyond what the verbs guarantee */
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *, struct ibv_ah_attr *,
                                uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *)
{
    (void)eth_mac;
    return EOPNOTSUPP;
}
