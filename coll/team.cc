/*
 * Teams (ucp_team_*): made from endpoints or as a strided range of a parent
 * team. Creation is a collective of the members (a dissemination exchange
 * of size and key, build_team_check), so it completes through a request.
 *
 * Keys name a team on the wire. Teams from endpoints take the caller's key;
 * a sub-team's key is derived from its parent's key, the range and how many
 * sub-teams of that range the parent made before, the same on every
 * member, with the top bit set so it never equals a caller's key.
 */
#include "algorithms.h"
#include "context.h"

#include <ucs/debug/log.h>

#include <memory>

namespace coll {

namespace {

constexpr uint64_t derived_key_bit = 1ull << 63;

uint64_t mix(uint64_t x)
{
    /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint64_t subteam_key(const ucp_team &parent, unsigned start, unsigned stride, unsigned count,
                     uint64_t nth)
{
    uint64_t h = mix(parent.key);
    h          = mix(h ^ ((uint64_t(start) << 32) | stride));
    h          = mix(h ^ ((uint64_t(count) << 32) | (nth & 0xffffffffu)));
    return h | derived_key_bit;
}

ucs_status_t team_members(const ucp_team_params_t &p, std::vector<ucp_ep_h> *eps, unsigned *rank,
                          uint64_t *key)
{
    const uint64_t mask    = p.field_mask;
    const bool from_eps    = mask & UCP_TEAM_PARAM_FIELD_EPS;
    const bool from_parent = mask & UCP_TEAM_PARAM_FIELD_PARENT;
    if (from_eps == from_parent) {
        ucs_error("ucp_team_create_nbx: give either endpoints or a parent team");
        return UCS_ERR_INVALID_PARAM;
    }
    if (from_eps) {
        if ((p.eps == nullptr) || (p.size == 0) || (p.my_rank >= p.size)) {
            ucs_error("ucp_team_create_nbx: %u endpoints with rank %u", p.size, p.my_rank);
            return UCS_ERR_INVALID_PARAM;
        }
        *key = (mask & UCP_TEAM_PARAM_FIELD_KEY) ? p.key : 0;
        if (*key & derived_key_bit) {
            ucs_error("ucp_team_create_nbx: keys with the top bit are reserved");
            return UCS_ERR_INVALID_PARAM;
        }
        eps->assign(p.eps, p.eps + p.size);
        for (unsigned i = 0; i < p.size; ++i) {
            if ((i != p.my_rank) && ((*eps)[i] == nullptr)) {
                ucs_error("ucp_team_create_nbx: no endpoint for rank %u", i);
                return UCS_ERR_INVALID_PARAM;
            }
        }
        (*eps)[p.my_rank] = nullptr;
        *rank             = p.my_rank;
        return UCS_OK;
    }
    const ucp_team *parent = p.parent;
    if ((parent == nullptr) || !parent->ready || (p.stride == 0) || (p.count == 0) ||
        (p.start >= parent->size()) ||
        (uint64_t(p.start) + uint64_t(p.count - 1) * p.stride >= parent->size())) {
        ucs_error("ucp_team_create_nbx: a range start %u stride %u count %u of a %u-rank "
                  "parent",
                  p.start, p.stride, p.count, parent ? parent->size() : 0);
        return UCS_ERR_INVALID_PARAM;
    }
    const unsigned prank = parent->rank;
    if ((prank < p.start) || ((prank - p.start) % p.stride != 0) ||
        ((prank - p.start) / p.stride >= p.count)) {
        ucs_error("ucp_team_create_nbx: rank %u of the parent is not in the range", prank);
        return UCS_ERR_INVALID_PARAM;
    }
    *rank = (prank - p.start) / p.stride;
    eps->resize(p.count);
    for (unsigned i = 0; i < p.count; ++i) {
        (*eps)[i] = parent->eps[p.start + i * p.stride];
    }
    const auto range   = std::make_tuple(p.start, p.stride, p.count);
    const uint64_t nth = parent->subteams_made.count(range) ? parent->subteams_made.at(range) : 0;
    *key               = subteam_key(*parent, p.start, p.stride, p.count, nth);
    return UCS_OK;
}

} // namespace

} // namespace coll

using namespace coll;

extern "C" {

ucs_status_ptr_t ucp_team_create_nbx(ucp_coll_context_h ctx, const ucp_team_params_t *params,
                                     ucp_team_h *team_p, const ucp_request_param_t *param)
{
    if ((ctx == nullptr) || (params == nullptr) || (team_p == nullptr)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    auto team           = std::make_unique<ucp_team>();
    ucs_status_t status = team_members(*params, &team->eps, &team->rank, &team->key);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    if (ctx->teams.count(team->key) != 0) {
        ucs_error("ucp_team_create_nbx: key 0x%lx is in use", (unsigned long)team->key);
        return UCS_STATUS_PTR(UCS_ERR_ALREADY_EXISTS);
    }
    if (params->field_mask & UCP_TEAM_PARAM_FIELD_PARENT) {
        ++params->parent
              ->subteams_made[std::make_tuple(params->start, params->stride, params->count)];
    }
    team->ctx       = ctx;
    task *t         = task_get(ctx, team.get());
    t->seq          = 0;
    t->algorithm    = "team creation";
    unsigned rounds = 0;
    while ((1u << rounds) < team->size()) {
        ++rounds;
    }
    uint64_t *check = reinterpret_cast<uint64_t *>(t->make_scratch((2 + 2 * rounds) *
                                                                   sizeof(uint64_t)));
    check[0]        = team->size();
    check[1]        = team->key;
    build_team_check(*t, team->size(), team->rank, check);
    ucp_team *raw = team.get();
    task_set_callback(t, param);
    ctx->teams.emplace(raw->key, raw);
    *team_p = team.release();
    task_start(t);
    ucs_status_ptr_t result = task_result(t, param);
    if (UCS_PTR_IS_ERR(result)) {
        ucp_team_destroy(raw); /* failed in the call: nothing is left to the caller */
        *team_p = nullptr;
    }
    return result;
}

ucs_status_t ucp_team_destroy(ucp_team_h team)
{
    if (team == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (team->active != 0) {
        return UCS_ERR_BUSY;
    }
    ucp_coll_context *ctx = team->ctx;
    ctx->teams.erase(team->key);
    forget_team_messages(ctx, team->key);
    delete team;
    return UCS_OK;
}

ucs_status_t ucp_team_query(ucp_team_h team, unsigned *rank_p, unsigned *size_p)
{
    if ((team == nullptr) || (rank_p == nullptr) || (size_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    *rank_p = team->rank;
    *size_p = team->size();
    return UCS_OK;
}

} // extern "C"
