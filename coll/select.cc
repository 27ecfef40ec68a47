/*
 * Algorithm selection and UCX_COLL_TUNE (select.h).
 */
#include "select.h"

#include "algorithms.h"

#include <ucs/config/registry.h>
#include <ucs/config/table.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

namespace coll {

namespace {

/* Defaults, from measurements on one node (bench/results): latency-bound
 * trees up to these sizes, bandwidth-bound schedules above. */
constexpr size_t allreduce_large_from = 16384;
constexpr size_t bcast_scatter_from   = 262144;
/* Per-rank blocks from which a ring allgather and a linear gather beat the
 * log2(n) rounds that pass growing parts of the whole around. */
constexpr size_t allgather_ring_from = 8192;
constexpr size_t gather_linear_from  = 8192;
/* Per-rank blocks from which pairwise exchange beats Bruck (which moves
 * each block up to log2(n) times); UCC switches near 129 bytes per rank of
 * the team, here a fixed size. */
constexpr size_t alltoall_pairwise_from = 1024;

unsigned default_algorithm(ucp_coll_type_t coll, size_t bytes, unsigned team_size)
{
    switch (coll) {
    case UCP_COLL_ALLREDUCE:
        /* Rabenseifner sends about twice the message in 2 log2(n) rounds
         * and reduces each element once; recursive doubling sends log2(n)
         * whole messages and reduces all of them at every rank. */
        (void)team_size;
        return (bytes >= allreduce_large_from) ? 1 : 0;
    case UCP_COLL_BCAST:
        return ((team_size > 2) && (bytes >= bcast_scatter_from)) ? 1 : 0;
    case UCP_COLL_ALLGATHER:
        return (bytes >= allgather_ring_from) ? 1 : 0;
    case UCP_COLL_GATHER:
        return (bytes >= gather_linear_from) ? 1 : 0;
    case UCP_COLL_ALLTOALL:
        return ((team_size <= 2) || (bytes >= alltoall_pairwise_from)) ? 1 : 0;
    default:
        return 0;
    }
}

bool parse_size(const std::string &text, size_t *value)
{
    if (text == "inf") {
        *value = SIZE_MAX;
        return true;
    }
    return ucs::config::type_size.parse(text.c_str(), value, ucs::config::type_size) &&
           (*value != ucs::config::size_auto);
}

/* "[min-max]": team sizes, both ends included; max may be "inf". */
bool parse_team_range(const std::string &field, tune_rule *rule)
{
    const size_t dash = field.find('-');
    if ((field.size() < 5) || (field.front() != '[') || (field.back() != ']') ||
        (dash == std::string::npos)) {
        return false;
    }
    size_t low = 0, high = 0;
    if (!parse_size(field.substr(1, dash - 1), &low) ||
        !parse_size(field.substr(dash + 1, field.size() - dash - 2), &high) || (low == SIZE_MAX) ||
        (low > high) || ((high != SIZE_MAX) && (high > UINT_MAX))) {
        return false;
    }
    rule->team_min = unsigned(std::max<size_t>(low, 1));
    rule->team_max = (high == SIZE_MAX) ? UINT_MAX : unsigned(high);
    return true;
}

/* "start-end": one rank's bytes, the end excluded. */
bool parse_size_range(const std::string &field, tune_rule *rule)
{
    const size_t dash = field.find('-');
    return (dash != std::string::npos) && parse_size(field.substr(0, dash), &rule->start) &&
           parse_size(field.substr(dash + 1), &rule->end) && (rule->start < rule->end);
}

/* Whether a collective has knomial algorithms (a radix rule applies). */
bool has_knomial(ucp_coll_type_t coll)
{
    for (const algorithm &a : algorithms_of(coll)) {
        if (std::strcmp(a.name, "knomial") == 0) {
            return true;
        }
    }
    return false;
}

/* "radix=K", K a number from knomial_radix_min to knomial_radix_max (read
 * as UCX_COLL_KNOMIAL_RADIX is). */
bool parse_radix(const std::string &text, unsigned *radix)
{
    static const std::string prefix = "radix=";
    unsigned value                  = 0;
    if ((text.compare(0, prefix.size(), prefix) != 0) ||
        !ucs::config::type_uint.parse(text.c_str() + prefix.size(), &value,
                                      ucs::config::type_uint) ||
        (value < knomial_radix_min) || (value > knomial_radix_max)) {
        return false;
    }
    *radix = value;
    return true;
}

bool parse_token(const std::string &token, tune_rule *rule)
{
    const size_t first = token.find(':');
    const size_t last  = token.rfind(':');
    if (first == std::string::npos) {
        return false;
    }
    const std::string name   = token.substr(0, first);
    const std::string target = token.substr(last + 1);
    const bool radix_rule    = (target.compare(0, 1, "@") != 0);
    if (radix_rule && !parse_radix(target, &rule->radix)) {
        return false;
    }
    const std::string alg = radix_rule ? std::string() : target.substr(1);
    unsigned coll         = 0;
    while ((coll < UCP_COLL_LAST) && (name != coll_name(ucp_coll_type_t(coll)))) {
        ++coll;
    }
    if (coll == UCP_COLL_LAST) {
        return false;
    }
    rule->coll     = ucp_coll_type_t(coll);
    rule->start    = 0;
    rule->end      = SIZE_MAX;
    rule->team_min = 1;
    rule->team_max = UINT_MAX;
    /* The fields between the name and the algorithm, each kind at most once
     * (none when first == last: `last` is a colon, so each search stops there). */
    bool sizes = false, teams = false;
    for (size_t begin = first + 1; begin <= last;) {
        const size_t colon      = token.find(':', begin);
        const std::string field = token.substr(begin, colon - begin);
        const bool team         = !field.empty() && (field.front() == '[');
        if (team ? (teams || !parse_team_range(field, rule)) :
                   (sizes || !parse_size_range(field, rule))) {
            return false;
        }
        (team ? teams : sizes) = true;
        begin                  = colon + 1;
    }
    if (radix_rule) {
        return has_knomial(rule->coll);
    }
    rule->radix                           = 0;
    const std::span<const algorithm> algs = algorithms_of(rule->coll);
    for (unsigned i = 0; i < algs.size(); ++i) {
        if (alg == algs[i].name) {
            rule->alg = i;
            return true;
        }
    }
    return false;
}

std::string size_text(size_t bytes)
{
    if (bytes == SIZE_MAX) {
        return "inf";
    }
    if (bytes == ucs::config::size_auto) {
        return "auto";
    }
    if ((bytes != 0) && (bytes % 1024 == 0)) {
        return std::to_string(bytes / 1024) + "k";
    }
    return std::to_string(bytes);
}

struct coll_opts {
    char *tune;
    unsigned knomial_radix;
    size_t pipeline_segment;
};

static_assert(knomial_radix_default == 4, "KNOMIAL_RADIX's default text below");
static_assert(pipeline_segment_default == 65536, "PIPELINE_SEGMENT's default text below");

const ucs::config::field coll_fields[] = {
    UCS_CONFIG_FIELD(coll_opts, tune, "TUNE", "",
                     "Algorithms of the collectives of libucp_coll, by message size and\n"
                     "team size: coll[:start-end][:[min-max]]:@algorithm tokens separated\n"
                     "by '#', e.g. allreduce:0-8k:@recursive_doubling#allreduce:8k-inf:@ring\n"
                     "or bcast:[2-4]:@binomial. Sizes are one rank's bytes (end excluded),\n"
                     "team sizes in brackets (both ends included); later tokens win.\n"
                     "A token ending in radix=K (2 to 16) instead of @algorithm sets the\n"
                     "radix of the knomial algorithms there (barrier, bcast, allreduce,\n"
                     "reduce), e.g. allreduce:0-4k:radix=8.\n"
                     "Algorithms: barrier: dissemination, knomial; bcast: knomial,\n"
                     "scatter_allgather, binomial, pipeline;\n"
                     "alltoall: bruck, pairwise; allreduce: recursive_doubling,\n"
                     "rabenseifner, ring, knomial;\n"
                     "allgather: bruck, ring; reduce_scatter: ring;\n"
                     "reduce: knomial, binomial, pipeline; scatter: binomial;\n"
                     "gather: binomial, linear.",
                     ucs::config::type_string),
    UCS_CONFIG_FIELD(coll_opts, knomial_radix, "KNOMIAL_RADIX", "4",
                     "Radix of the knomial algorithms of libucp_coll (barrier, bcast,\n"
                     "allreduce, reduce), 2 to 16: a rank sends to up to radix - 1 peers\n"
                     "per round, in about log_radix(team size) rounds.",
                     ucs::config::type_uint),
    UCS_CONFIG_FIELD(coll_opts, pipeline_segment, "PIPELINE_SEGMENT", "64k",
                     "Segment size of the pipelined bcast and reduce of libucp_coll\n"
                     "(UCX_COLL_TUNE's @pipeline), 1k to 1g: the message moves along the\n"
                     "chain of ranks in pieces of this size, one message per piece and link.",
                     ucs::config::type_size),
};

const ucs::config::table coll_table{"Collectives (libucp_coll)", "COLL_", coll_fields,
                                    sizeof(coll_opts)};
UCS_CONFIG_REGISTER_TABLE(coll_table);

} // namespace

namespace {

bool covers(const tune_rule &rule, ucp_coll_type_t coll, size_t bytes, unsigned team_size)
{
    return (rule.coll == coll) && (bytes >= rule.start) && (bytes < rule.end) &&
           (team_size >= rule.team_min) && (team_size <= rule.team_max);
}

} // namespace

bool parse_tuning(const char *text, tuning *out)
{
    out->rules.clear();
    const std::string all = (text == nullptr) ? "" : text;
    size_t begin          = 0;
    while (begin < all.size()) {
        size_t end = all.find('#', begin);
        if (end == std::string::npos) {
            end = all.size();
        }
        const std::string token = all.substr(begin, end - begin);
        tune_rule rule{};
        if (!token.empty()) {
            if (!parse_token(token, &rule)) {
                ucs_error("UCX_COLL_TUNE: bad token '%s' "
                          "(coll[:start-end][:[min-max]]:@algorithm, or :radix=2..16 for "
                          "barrier, bcast, allreduce and reduce)",
                          token.c_str());
                out->rules.clear();
                return false;
            }
            out->rules.push_back(rule);
        }
        begin = end + 1;
    }
    return true;
}

const algorithm &select_algorithm(const tuning &tune, ucp_coll_type_t coll, size_t bytes,
                                  unsigned team_size)
{
    unsigned alg = default_algorithm(coll, bytes, team_size);
    for (const tune_rule &rule : tune.rules) {
        if ((rule.radix == 0) && covers(rule, coll, bytes, team_size)) {
            alg = rule.alg;
        }
    }
    return algorithms_of(coll)[alg];
}

unsigned select_radix(const tuning &tune, ucp_coll_type_t coll, size_t bytes, unsigned team_size)
{
    unsigned radix = tune.knomial_radix;
    for (const tune_rule &rule : tune.rules) {
        if ((rule.radix != 0) && covers(rule, coll, bytes, team_size)) {
            radix = rule.radix;
        }
    }
    return radix;
}

namespace {

/* One line of the resolved table: per span of team sizes, the value of
 * `value(bytes, team_size)` from each size on where it changes. Spans and
 * sizes come from the defaults' edges and those of the rules of one kind. */
template <typename Value>
std::string describe_line(std::string line, const tuning &tune, ucp_coll_type_t coll,
                          bool radix_rules, Value value)
{
    std::vector<size_t> edges = {0, alltoall_pairwise_from, allgather_ring_from,
                                 allreduce_large_from, bcast_scatter_from};
    /* Team sizes from which the choice may change: the defaults' (2, 3)
     * and the rules' edges; one group per span. */
    std::vector<unsigned> teams = {1, 2, 3};
    for (const tune_rule &rule : tune.rules) {
        if ((rule.coll != coll) || ((rule.radix != 0) != radix_rules)) {
            continue;
        }
        edges.push_back(rule.start);
        if (rule.end != SIZE_MAX) {
            edges.push_back(rule.end);
        }
        teams.push_back(rule.team_min);
        if (rule.team_max != UINT_MAX) {
            teams.push_back(rule.team_max + 1);
        }
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    std::sort(teams.begin(), teams.end());
    teams.erase(std::unique(teams.begin(), teams.end()), teams.end());
    for (size_t t = 0; t < teams.size(); ++t) {
        const unsigned team_size = teams[t];
        std::string ranges, previous;
        for (size_t i = 0; i < edges.size(); ++i) {
            const std::string current = value(edges[i], team_size);
            if ((i == 0) || (current != previous)) {
                ranges.append(" ").append(size_text(edges[i])).append("-:").append(current);
                previous = current;
            }
        }
        const std::string upto = (t + 1 < teams.size()) ? std::to_string(teams[t + 1] - 1) :
                                                          std::string("inf");
        line.append(" [")
            .append(std::to_string(team_size))
            .append("-")
            .append(upto)
            .append(" ranks]")
            .append(ranges);
    }
    return line;
}

} // namespace

std::vector<std::string> describe_tuning(const tuning &tune)
{
    std::vector<std::string> lines;
    for (unsigned index = 0; index < UCP_COLL_LAST; ++index) {
        const auto coll = ucp_coll_type_t(index);
        lines.push_back(describe_line(std::string(coll_name(coll)) + ":", tune, coll, false,
                                      [&](size_t bytes, unsigned team_size) {
            return std::string(select_algorithm(tune, coll, bytes, team_size).name);
        }));
    }
    lines.push_back("knomial radix " + std::to_string(tune.knomial_radix));
    /* Where radix rules apply, the radix by size and team size. */
    for (unsigned index = 0; index < UCP_COLL_LAST; ++index) {
        const auto coll = ucp_coll_type_t(index);
        if (std::none_of(tune.rules.begin(), tune.rules.end(), [&](const tune_rule &rule) {
                return (rule.coll == coll) && (rule.radix != 0);
            })) {
            continue;
        }
        lines.push_back(describe_line(std::string(coll_name(coll)) + " knomial radix:", tune, coll,
                                      true,
                                      [&](size_t bytes, unsigned team_size) {
            return std::to_string(select_radix(tune, coll, bytes, team_size));
        }));
    }
    lines.push_back("pipeline segment " + size_text(tune.pipeline_segment));
    return lines;
}

bool read_tuning(tuning *out)
{
    coll_opts opts{};
    if (ucs::config::fill(&opts, coll_table) != UCS_OK) {
        return false;
    }
    bool ok = parse_tuning(opts.tune, out);
    if ((opts.knomial_radix < knomial_radix_min) || (opts.knomial_radix > knomial_radix_max)) {
        ucs_error("UCX_COLL_KNOMIAL_RADIX: %u is out of range (%u to %u)", opts.knomial_radix,
                  knomial_radix_min, knomial_radix_max);
        ok = false;
    }
    out->knomial_radix = opts.knomial_radix;
    /* inf and auto are sizes too: both out of range. */
    if ((opts.pipeline_segment < pipeline_segment_min) ||
        (opts.pipeline_segment > pipeline_segment_max)) {
        ucs_error("UCX_COLL_PIPELINE_SEGMENT: %s is out of range (1k to 1g)",
                  size_text(opts.pipeline_segment).c_str());
        ok = false;
    }
    out->pipeline_segment = opts.pipeline_segment;
    ucs::config::release(&opts, coll_table);
    return ok;
}

} // namespace coll
