/*
 * The UCP context configuration table and ucp_config_* entry points.
 */
#include "ucp_config.h"
#include "ucp_guard.h"

#include <ucs/config/parser_util.h>
#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ucp {

const char *const rndv_scheme_names[RNDV_SCHEME_LAST] = {"auto", "get_zcopy", "put_zcopy"};

const char *const atomic_mode_names[ATOMIC_MODE_LAST] = {"cpu", "device", "guess"};

namespace {

/* UCX_RNDV_FRAG_SIZE: "512k", or sizes per memory type of the fragments,
 * as UCX writes it ("host:512K,cuda:4M"). Fragments are host memory here:
 * the value is the host size (512 KiB when the list names none). */
constexpr size_t default_frag_size = 512 * 1024;

bool parse_frag_size(const char *text, void *dest, const ucs::config::parser &)
{
    std::vector<std::string_view> entries;
    if (!ucs::config::detail::split_list(text, entries) || entries.empty()) {
        return false;
    }
    size_t host_size = default_frag_size;
    for (std::string_view entry : entries) {
        const size_t colon = entry.find(':');
        bool host          = true;
        if (colon != std::string_view::npos) {
            const std::string_view type = entry.substr(0, colon);
            unsigned t                  = 0;
            while ((t < UCS_MEMORY_TYPE_LAST) && (type != ucs_memory_type_names[t])) {
                ++t;
            }
            if (t == UCS_MEMORY_TYPE_LAST) {
                return false;
            }
            host  = (t == UCS_MEMORY_TYPE_HOST);
            entry = entry.substr(colon + 1);
        }
        size_t size = 0;
        const std::string number(entry);
        if (!ucs::config::detail::parse_size(number.c_str(), &size, ucs::config::type_size) ||
            (size == 0) || (size >= ucs::config::size_auto)) {
            return false;
        }
        if (host) {
            host_size = size;
        }
    }
    std::memcpy(dest, &host_size, sizeof(host_size));
    return true;
}

std::string print_frag_size(const void *value, const ucs::config::parser &)
{
    return "host:" + ucs::config::detail::print_size(value, ucs::config::type_size);
}

std::string syntax_frag_size(const ucs::config::parser &)
{
    return "size, or <memory type>:<size>,... (the host size is used)";
}

constexpr ucs::config::parser type_frag_size = {parse_frag_size,
                                                print_frag_size,
                                                ucs::config::detail::clone_plain,
                                                ucs::config::detail::release_plain,
                                                syntax_frag_size,
                                                nullptr,
                                                0,
                                                sizeof(size_t)};

constexpr ucs::config::field context_fields[] = {
    UCS_CONFIG_FIELD(context_config, tls, "TLS", "all",
                     "Transports to use, comma separated, or \"all\". A leading '^'\n"
                     "uses every transport except the listed ones (\"^tcp\").\n"
                     "Aliases: \"sm\" or \"shm\" = posix,sysv,cma; \"mm\" = posix,sysv.\n"
                     "Available here: see ucx_info -d.",
                     ucs::config::type_allow_list),

    UCS_CONFIG_FIELD(context_config, net_devices, "NET_DEVICES", "all",
                     "Network devices to use (e.g. \"eth0,ib0\"), \"all\", or \"^dev\" to\n"
                     "exclude some.",
                     ucs::config::type_allow_list),

    UCS_CONFIG_FIELD(context_config, shm_devices, "SHM_DEVICES", "all",
                     "Shared-memory devices to use (e.g. \"memory\"), \"all\", or \"^dev\".",
                     ucs::config::type_allow_list),

    UCS_CONFIG_FIELD(context_config, acc_devices, "ACC_DEVICES", "all",
                     "Accelerator devices to use (e.g. \"cuda0\"), \"all\", or \"^dev\".",
                     ucs::config::type_allow_list),

    UCS_CONFIG_FIELD(context_config, self_devices, "SELF_DEVICES", "all",
                     "Loopback devices to use, \"all\", or \"^dev\".",
                     ucs::config::type_allow_list),

    UCS_CONFIG_FIELD(context_config, warn_invalid_config, "WARN_INVALID_CONFIG", "y",
                     "Warn when UCX_TLS or a device list (UCX_NET_DEVICES, ...) names\n"
                     "something this host does not have.",
                     ucs::config::type_bool),

    UCS_CONFIG_FIELD(context_config, bcopy_thresh, "BCOPY_THRESH", "0",
                     "Message size from which a copy into a transport buffer is used\n"
                     "instead of an inline (short) send.",
                     ucs::config::type_size, ucs::config::field_no_effect),

    UCS_CONFIG_FIELD(context_config, zcopy_thresh, "ZCOPY_THRESH", "auto",
                     "Message size from which eager messages (on lanes with zero-copy\n"
                     "active messages) and puts and gets (on lanes with both copy and\n"
                     "zero-copy calls) go zero-copy; \"auto\" derives it from the memory\n"
                     "domain's registration cost against the cost of copying.",
                     ucs::config::type_size),

    UCS_CONFIG_FIELD(context_config, rndv_thresh, "RNDV_THRESH", "auto",
                     "Message size from which the rendezvous protocol is used; \"auto\"\n"
                     "derives it from the transports' performance model.",
                     ucs::config::type_size),

    UCS_CONFIG_FIELD(context_config, rndv_scheme, "RNDV_SCHEME", "auto",
                     "How rendezvous moves the data:\n"
                     " auto      - choose by the transports' capabilities\n"
                     " get_zcopy - the receiver reads the sender's buffer\n"
                     " put_zcopy - the sender writes into the receiver's buffer",
                     ucs::config::type_enum(rndv_scheme_names)),

    UCS_CONFIG_FIELD(context_config, rndv_split_thresh, "RNDV_SPLIT_THRESH", "64k",
                     "With RNDV_SCHEME=auto, rendezvous messages of at least this size\n"
                     "between processes on one node are copied by both sides at once:\n"
                     "the sender writes the first half while the receiver reads the\n"
                     "second. \"inf\" turns it off.",
                     ucs::config::type_size),

    UCS_CONFIG_FIELD(context_config, rndv_frag_size, "RNDV_FRAG_SIZE", "host:512K,cuda:4M",
                     "Pieces of a rendezvous that goes through host bounce buffers (device\n"
                     "memory over a host transport): the receiver moves each piece on to\n"
                     "the device while it pulls the next. Per memory type of the pieces,\n"
                     "as in UCX; they are host memory here, so the host size counts.",
                     type_frag_size),

    UCS_CONFIG_FIELD(context_config, max_eager_lanes, "MAX_EAGER_LANES", "1",
                     "Most transport lanes one eager message is split over. Eager\n"
                     "messages use the active-message lane only, so every value acts\n"
                     "as 1.",
                     ucs::config::type_uint, ucs::config::field_no_effect),

    UCS_CONFIG_FIELD(context_config, max_rndv_lanes, "MAX_RNDV_LANES", "2",
                     "Most lanes (devices) one rendezvous transfer is split over: the\n"
                     "receiver pulls a share from each, in proportion to its bandwidth.\n"
                     "0 and 1 both mean one lane; at most 8 are used.",
                     ucs::config::type_uint),

    UCS_CONFIG_FIELD(context_config, multi_lane_max_ratio, "MULTI_LANE_MAX_RATIO", "4",
                     "A rendezvous lane slower than the fastest by more than this ratio\n"
                     "(by the transports' bandwidth models) is not used beside it\n"
                     "(at least 1).",
                     ucs::config::type_double),

    UCS_CONFIG_FIELD(context_config, min_rndv_chunk_size, "MIN_RNDV_CHUNK_SIZE", "16k",
                     "Least a rendezvous lane pulls of a transfer split over several:\n"
                     "a smaller transfer uses fewer lanes (UCX 1.14's setting).",
                     ucs::config::type_size),

    UCS_CONFIG_FIELD(context_config, estimated_num_eps, "ESTIMATED_NUM_EPS", "1",
                     "Expected number of endpoints per worker, used to size resources;\n"
                     "ucp_params_t::estimated_num_eps overrides it.",
                     ucs::config::type_ulong, ucs::config::field_no_effect),

    UCS_CONFIG_FIELD(context_config, estimated_num_ppn, "ESTIMATED_NUM_PPN", "1",
                     "Expected number of processes per node, used to size shared\n"
                     "resources; ucp_params_t::estimated_num_ppn overrides it.",
                     ucs::config::type_ulong, ucs::config::field_no_effect),

    UCS_CONFIG_FIELD(context_config, keepalive_interval, "KEEPALIVE_INTERVAL", "20s",
                     "Time between checks that the peers of endpoints with peer error\n"
                     "handling are still alive; \"inf\" disables the checks.",
                     ucs::config::type_time),

    UCS_CONFIG_FIELD(context_config, keepalive_num_eps, "KEEPALIVE_NUM_EPS", "128",
                     "Most endpoints checked in one keepalive round.", ucs::config::type_uint,
                     ucs::config::field_no_effect),

    UCS_CONFIG_FIELD(context_config, max_peer_eps, "MAX_PEER_EPS", "16384",
                     "Most endpoints a worker creates by itself for peers that connected to\n"
                     "it before its application made an endpoint to them. Wireups of new\n"
                     "peers beyond it are dropped (with a warning): a peer that holds this\n"
                     "worker's address cannot make it allocate without bound.",
                     ucs::config::type_uint),

    UCS_CONFIG_FIELD(context_config, proto_info, "PROTO_INFO", "n",
                     "Print the protocol selection table of every endpoint configuration\n"
                     "to standard output when a worker makes it (the same table\n"
                     "ucp_ep_print_info shows).",
                     ucs::config::type_bool),

    UCS_CONFIG_FIELD(context_config, atomic_mode, "ATOMIC_MODE", "guess",
                     "Which atomic operations a worker uses, for all its endpoints (the\n"
                     "two kinds are not atomic with respect to each other):\n"
                     " cpu    - CPU atomics (shared memory, and what a peer executes for us)\n"
                     " device - the transports' device atomics only (a NIC's); none of\n"
                     "          the transports here has them, so atomics then fail\n"
                     " guess  - device if a transport of the worker has device atomics,\n"
                     "          otherwise cpu",
                     ucs::config::type_enum(atomic_mode_names)),

    UCS_CONFIG_FIELD(context_config, immediate_progress_interval, "IMMEDIATE_PROGRESS_INTERVAL",
                     "20us",
                     "A process that only issues operations completing inside their call\n"
                     "(RMA and atomics on memory mapped here, or on its own memory) and\n"
                     "does not call ucp_worker_progress progresses the worker once it\n"
                     "has done so for this long, so that peers whose operations need this\n"
                     "process (emulated RMA and atomics to its memory) are still served:\n"
                     "an OpenSHMEM PE spinning on atomic fetches of its own variable, or\n"
                     "testing a lock that lives at home. \"inf\" never does (UCX 1.13).",
                     ucs::config::type_time),

    UCS_CONFIG_FIELD(context_config, rcache_enable, "RCACHE_ENABLE", "try",
                     "Keep registrations of user buffers in a cache per memory domain, so\n"
                     "that rendezvous and zero-copy sends from the same buffer register it\n"
                     "once, not per message. Regions are dropped when libucm reports their\n"
                     "memory unmapped (UCX_MEM_EVENTS). yes: fail ucp_init without memory\n"
                     "events; try: register per message then; no: never cache. A cached\n"
                     "region keeps the remote keys sent for it valid until it is evicted\n"
                     "or unmapped.",
                     ucs::config::type_ternary),

    UCS_CONFIG_FIELD(context_config, rcache_max_regions, "RCACHE_MAX_REGIONS", "inf",
                     "Most regions one registration cache keeps; beyond it, unused ones\n"
                     "are deregistered, least recently used first.",
                     ucs::config::type_ulong),

    UCS_CONFIG_FIELD(context_config, rcache_max_size, "RCACHE_MAX_SIZE", "inf",
                     "Most bytes of regions one registration cache keeps; beyond it,\n"
                     "unused ones are deregistered, least recently used first.",
                     ucs::config::type_size),

    UCS_CONFIG_FIELD(context_config, pwc_max_id_size, "PWC_MAX_ID_SIZE", "64",
                     "Longest completion id payload of ucp_pwc_put/ucp_pwc_get (ucp_pwc.h):\n"
                     "a longer one is refused. Ids of 8 bytes by value need none.",
                     ucs::config::type_size),

    UCS_CONFIG_FIELD(context_config, pwc_credits, "PWC_CREDITS", "128",
                     "Remote completion ids one endpoint may have waiting at its target\n"
                     "that the target's application has not probed; beyond it the\n"
                     "operations wait at the initiator (ucp_pwc.h).",
                     ucs::config::type_uint),

    UCS_CONFIG_FIELD(context_config, pwc_packed_max, "PWC_PACKED_MAX", "8k",
                     "Largest put with completion sent as one message with its id (when\n"
                     "it fits one of the active-message lane); larger ones are a put and\n"
                     "then a notification.",
                     ucs::config::type_size),
};

bool name_in(const ucs_config_names_array_t &list, std::string_view name)
{
    for (unsigned i = 0; i < list.count; ++i) {
        if (name == list.names[i]) {
            return true;
        }
    }
    return false;
}

/* Transports an alias in UCX_TLS stands for (nullptr-terminated). */
const char *const *alias_members(std::string_view alias)
{
    static const char *const shm[]  = {"posix", "sysv", "cma", nullptr};
    static const char *const mm[]   = {"posix", "sysv", nullptr};
    static const char *const cuda[] = {"cuda_copy", "cuda_ipc", nullptr};
    /* As UCX: rc brings ud along to carry the wireup. */
    static const char *const rc[] = {"rc_verbs", "ud_verbs", nullptr};
    static const char *const ud[] = {"ud_verbs", nullptr};
    if ((alias == "rc") || (alias == "rc_v") || (alias == "ib")) {
        return rc;
    }
    if ((alias == "ud") || (alias == "ud_v")) {
        return ud;
    }
    if ((alias == "sm") || (alias == "shm")) {
        return shm;
    }
    if (alias == "mm") {
        return mm;
    }
    if (alias == "cuda") {
        return cuda;
    }
    return nullptr;
}

/* Whether name is in the list directly or through an alias. */
bool tl_listed(const ucs_config_names_array_t &list, std::string_view tl_name)
{
    for (unsigned i = 0; i < list.count; ++i) {
        std::string_view entry = list.names[i];
        if (entry == tl_name) {
            return true;
        }
        const char *const *members = alias_members(entry);
        for (; (members != nullptr) && (*members != nullptr); ++members) {
            if (tl_name == *members) {
                return true;
            }
        }
    }
    return false;
}

bool allowed(const ucs_config_allow_list_t &list, bool listed)
{
    switch (list.mode) {
    case UCS_CONFIG_ALLOW_LIST_ALLOW_ALL:
        return true;
    case UCS_CONFIG_ALLOW_LIST_ALLOW:
        return listed;
    case UCS_CONFIG_ALLOW_LIST_NEGATE:
        return !listed;
    }
    return false;
}

std::string trim(std::string_view text)
{
    size_t begin = 0, end = text.size();
    while ((begin < end) && std::isspace(static_cast<unsigned char>(text[begin]))) {
        ++begin;
    }
    while ((end > begin) && std::isspace(static_cast<unsigned char>(text[end - 1]))) {
        --end;
    }
    return std::string(text.substr(begin, end - begin));
}

/* Whether the environment sets the field: then the file must not override it. */
bool env_sets(const std::string &env_prefix, const std::string &name)
{
    if (!env_prefix.empty() &&
        (std::getenv(("UCX_" + env_prefix + "_" + name).c_str()) != nullptr)) {
        return true;
    }
    return std::getenv(("UCX_" + name).c_str()) != nullptr;
}

/*
 * Applies "NAME = value" lines of a file given to ucp_config_read (same
 * syntax as ucx.conf) to the fields the environment leaves alone.
 */
ucs_status_t apply_file(ucp_config &config, const char *filename)
{
    std::ifstream in(filename);
    if (!in) {
        ucs_error("ucp_config_read: cannot read configuration file '%s': %s", filename,
                  std::strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    std::string line;
    for (unsigned line_no = 1; std::getline(in, line); ++line_no) {
        std::string text = trim(line);
        if (text.empty() || (text[0] == '#')) {
            continue;
        }
        size_t eq = text.find('=');
        if (eq == std::string::npos) {
            ucs_warn("%s:%u: expected NAME = value, ignoring the line", filename, line_no);
            continue;
        }
        std::string name  = trim(std::string_view(text).substr(0, eq));
        std::string value = trim(std::string_view(text).substr(eq + 1));
        size_t hash       = value.find(" #");
        if (hash != std::string::npos) {
            value = trim(std::string_view(value).substr(0, hash));
        }
        if ((value.size() >= 2) && ((value.front() == '"') || (value.front() == '\'')) &&
            (value.back() == value.front())) {
            value = value.substr(1, value.size() - 2);
        }
        if (name.rfind("UCX_", 0) == 0) {
            name = name.substr(4);
        }
        if (env_sets(config.env_prefix, name)) {
            continue;
        }
        ucs_status_t status = ucs::config::set_value(&config.values, context_config_table,
                                                     name.c_str(), value.c_str());
        if (status == UCS_ERR_NO_ELEM) {
            /* Settings of other layers may share the file. */
            ucs_debug("%s:%u: UCX_%s is not a UCP context setting", filename, line_no,
                      name.c_str());
        } else if (status != UCS_OK) {
            ucs_error("%s:%u: invalid value for UCX_%s", filename, line_no, name.c_str());
            return status;
        }
    }
    return UCS_OK;
}

} // namespace

/* UCX 1.13's names of settings that exist here under another name. */
constexpr ucs::config::alias context_aliases[] = {
    {"MAX_EAGER_RAILS", "MAX_EAGER_LANES"},
    {"MAX_RNDV_RAILS", "MAX_RNDV_LANES"},
    {"NUM_EPS", "ESTIMATED_NUM_EPS"},
    {"NUM_PPN", "ESTIMATED_NUM_PPN"},
};

/* UCX 1.13's UCP settings with no counterpart here. */
// clang-format off
constexpr const char *context_no_effect[] = {
    "PROTOS", "ALLOC_PRIO", "SOCKADDR_TLS_PRIORITY", "SOCKADDR_AUX_TLS",
    "SELECT_DISTANCE_MD", "MEMTYPE_REG_WHOLE_ALLOC_TYPES", "RNDV_MEMTYPE_DIRECT_SIZE",
    "RNDV_SEND_NBR_THRESH", "RNDV_THRESH_FALLBACK", "RNDV_PERF_DIFF",
    "RKEY_PTR_SEG_SIZE", "BCOPY_BW",
    "ADDRESS_DEBUG_INFO", "MAX_WORKER_NAME", "MAX_WORKER_ADDRESS_NAME", "USE_MT_MUTEX",
    "ADAPTIVE_PROGRESS", "TM_THRESH", "TM_MAX_BB_SIZE", "TM_FORCE_THRESH", "TM_SW_RNDV",
    "RNDV_FRAG_ALLOC_COUNT", "RNDV_FRAG_MEM_TYPE",
    "RNDV_PIPELINE_SEND_THRESH", "RNDV_PIPELINE_SHM_ENABLE", "FLUSH_WORKER_EPS",
    "UNIFIED_MODE", "CM_USE_ALL_DEVICES", "LISTENER_BACKLOG", "PROTO_ENABLE",
    "RESOLVE_REMOTE_EP_ID", "PROTO_INDIRECT_ID", "RNDV_PUT_FORCE_FLUSH", "SA_DATA_VERSION",
    "RKEY_MPOOL_MAX_MD", "RX_MPOOL_SIZES", "ADDRESS_VERSION",
};
// clang-format on

constinit const ucs::config::table context_config_table = {"UCP context",   "",
                                                           context_fields,  sizeof(context_config),
                                                           context_aliases, context_no_effect};

UCS_CONFIG_REGISTER_TABLE(context_config_table);

bool tl_allowed(const ucs_config_allow_list_t &tls, const char *tl_name)
{
    return allowed(tls, tl_listed(tls.array, tl_name));
}

bool device_allowed(const context_config &config, uct::device_type type, const char *dev_name)
{
    const ucs_config_allow_list_t *list;
    switch (type) {
    case uct::device_type::NET:
        list = &config.net_devices;
        break;
    case uct::device_type::SHM:
        list = &config.shm_devices;
        break;
    case uct::device_type::ACC:
        list = &config.acc_devices;
        break;
    case uct::device_type::SELF:
        list = &config.self_devices;
        break;
    default:
        return false;
    }
    return allowed(*list, name_in(list->array, dev_name));
}

const char *device_list_var(uct::device_type type)
{
    switch (type) {
    case uct::device_type::NET:
        return "UCX_NET_DEVICES";
    case uct::device_type::SHM:
        return "UCX_SHM_DEVICES";
    case uct::device_type::ACC:
        return "UCX_ACC_DEVICES";
    case uct::device_type::SELF:
        return "UCX_SELF_DEVICES";
    }
    return "?";
}

const char *device_type_name(uct::device_type type)
{
    switch (type) {
    case uct::device_type::NET:
        return "net";
    case uct::device_type::SHM:
        return "shm";
    case uct::device_type::ACC:
        return "acc";
    case uct::device_type::SELF:
        return "self";
    }
    return "?";
}

} // namespace ucp

extern "C" {

ucs_status_t ucp_config_read(const char *env_prefix, const char *filename, ucp_config_t **config_p)
{
    if (config_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_config_read", [&]() -> ucs_status_t {
        auto config        = std::make_unique<ucp_config>();
        std::string prefix = (env_prefix != nullptr) ? env_prefix : "";
        while (!prefix.empty() && (prefix.back() == '_')) {
            prefix.pop_back();
        }
        config->env_prefix = prefix;

        ucs_status_t status = ucs::config::fill(&config->values, ucp::context_config_table,
                                                prefix.c_str());
        if (status != UCS_OK) {
            return status;
        }
        if (filename != nullptr) {
            status = ucp::apply_file(*config, filename);
            if (status != UCS_OK) {
                ucs::config::release(&config->values, ucp::context_config_table);
                return status;
            }
        }
        *config_p = config.release();
        return UCS_OK;
    });
}

void ucp_config_release(ucp_config_t *config)
{
    if (config == nullptr) {
        return;
    }
    ucs::config::release(&config->values, ucp::context_config_table);
    delete config;
}

ucs_status_t ucp_config_modify(ucp_config_t *config, const char *name, const char *value)
{
    if ((config == nullptr) || (name == nullptr) || (value == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_config_modify", [&]() {
        return ucs::config::set_value(&config->values, ucp::context_config_table, name, value);
    });
}

void ucp_config_print(const ucp_config_t *config, FILE *stream, const char *title,
                      ucs_config_print_flags_t print_flags)
{
    if ((config == nullptr) || (stream == nullptr)) {
        return;
    }
    ucp::guarded("ucp_config_print", [&]() {
        return ucs::config::print(stream, &config->values, ucp::context_config_table, print_flags,
                                  title, config->env_prefix.c_str());
    });
}

} // extern "C"
