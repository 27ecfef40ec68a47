/*
 * ucp_trace: an LD_PRELOAD library that records how a runtime calls UCP.
 *
 * It defines every function that Debian's Open MPI, OpenSHMEM and MPICH
 * import from libucp/libucs/libucm (../shared/abi/runtime-symbols.txt),
 * records the call with the parameters that matter to an implementation
 * (field masks, flags, datatype class, size bucket, immediate completion or
 * request, who called: pml/osc/spml/atomic/libmpich) and forwards it to the
 * real library. At exit each process writes one file of
 * "count<TAB>caller<TAB>call description" lines to $UCP_TRACE_DIR
 * (default /tmp); summarize_trace.py merges them.
 *
 * Calls made by libucp itself through its own exported functions are
 * recorded too, with caller "libucp.so.0".
 *
 * With UCP_TRACE_STREAM=1 every call is also appended at once to
 * ucp_trace.<pid>.stream (survives a crash), with memory handles shown so
 * that map/unmap pairs can be followed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ucm/api/ucm.h>
#include <ucp/api/ucp.h>
#include <ucs/type/status.h>

/* ---- aggregation table ---------------------------------------------------- */

#define TABLE_SIZE 8192
#define KEY_LEN    320

struct entry {
    char key[KEY_LEN];
    uint64_t count;
};

static struct entry table[TABLE_SIZE];
static unsigned table_used;
static char table_lock;
static int table_full_warned;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s; ++s) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

static void record_key(const char *key)
{
    uint64_t h = hash_str(key);
    unsigned i, idx;

    while (__atomic_test_and_set(&table_lock, __ATOMIC_ACQUIRE)) {
    }
    for (i = 0; i < TABLE_SIZE; ++i) {
        idx = (unsigned)((h + i) % TABLE_SIZE);
        if (table[idx].count == 0) {
            if (table_used >= TABLE_SIZE - 1) {
                table_full_warned = 1;
                break;
            }
            snprintf(table[idx].key, KEY_LEN, "%s", key);
            table[idx].count = 1;
            ++table_used;
            break;
        }
        if (strcmp(table[idx].key, key) == 0) {
            ++table[idx].count;
            break;
        }
    }
    __atomic_clear(&table_lock, __ATOMIC_RELEASE);
}

/* Name of the shared object that contains 'addr' (the caller). */
static const char *object_of(const void *addr)
{
    Dl_info info;
    const char *slash;

    if (!dladdr(addr, &info) || (info.dli_fname == NULL)) {
        return "?";
    }
    slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

static void record(const void *ret_addr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static FILE *stream_file(void)
{
    static int checked;
    static FILE *stream;
    const char *dir, *on;
    char path[512];

    if (!checked) {
        checked = 1;
        on      = getenv("UCP_TRACE_STREAM");
        if ((on != NULL) && (strcmp(on, "1") == 0)) {
            dir = getenv("UCP_TRACE_DIR");
            snprintf(path, sizeof(path), "%s/ucp_trace.%d.stream", dir ? dir : "/tmp",
                     (int)getpid());
            stream = fopen(path, "w");
        }
    }
    return stream;
}

/* " memh=0x..." in stream mode, "" otherwise (keeps the table aggregated). */
static const char *handle_tag(const char *what, const void *handle)
{
    static __thread char buf[64];

    if (stream_file() == NULL) {
        return "";
    }
    snprintf(buf, sizeof(buf), " %s=%p", what, handle);
    return buf;
}

static void record(const void *ret_addr, const char *fmt, ...)
{
    char key[KEY_LEN];
    FILE *stream = stream_file();
    int len;
    va_list ap;

    len = snprintf(key, sizeof(key), "%s\t", object_of(ret_addr));
    va_start(ap, fmt);
    vsnprintf(key + len, sizeof(key) - (size_t)len, fmt, ap);
    va_end(ap);
    record_key(key);
    if ((stream != NULL) && !strstr(key, "ucp_worker_progress")) {
        fprintf(stream, "%s\n", key);
        fflush(stream);
    }
}

static void __attribute__((destructor)) dump_table(void)
{
    const char *dir = getenv("UCP_TRACE_DIR");
    char path[512];
    unsigned i;
    FILE *out;

    snprintf(path, sizeof(path), "%s/ucp_trace.%d.txt", dir ? dir : "/tmp", (int)getpid());
    out = fopen(path, "w");
    if (out == NULL) {
        return;
    }
    for (i = 0; i < TABLE_SIZE; ++i) {
        if (table[i].count != 0) {
            fprintf(out, "%" PRIu64 "\t%s\n", table[i].count, table[i].key);
        }
    }
    if (table_full_warned) {
        fprintf(out, "0\tucp_trace\tTABLE FULL: some calls not recorded\n");
    }
    fclose(out);
}

/* ---- finding the real functions ---------------------------------------- */

static void *lookup(const char *name)
{
    static const char *const libs[] = {"libucp.so.0", "libucs.so.0", "libucm.so.0"};
    void *fn                        = dlsym(RTLD_NEXT, name);
    unsigned i;

    /* Open MPI opens libucp through its components, outside the global
     * scope that RTLD_NEXT searches. */
    for (i = 0; (fn == NULL) && (i < sizeof(libs) / sizeof(libs[0])); ++i) {
        void *handle = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
        if (handle != NULL) {
            fn = dlsym(handle, name);
        }
    }
    if (fn == NULL) {
        fprintf(stderr, "ucp_trace: %s not found\n", name);
        abort();
    }
    return fn;
}

#define REAL(_name) \
    static __typeof__(&_name) real_##_name; \
    if (real_##_name == NULL) { \
        real_##_name = (__typeof__(&_name))lookup(#_name); \
    }

#define CALLER __builtin_return_address(0)

/* ---- formatting helpers ------------------------------------------------- */

struct strbuf {
    char s[200];
};

static struct strbuf size_bucket(size_t n)
{
    struct strbuf b;
    size_t p = 1;
    int k    = 0;

    if (n == 0) {
        snprintf(b.s, sizeof(b.s), "0");
        return b;
    }
    while (p < n) {
        p <<= 1;
        ++k;
    }
    if (k >= 20) {
        snprintf(b.s, sizeof(b.s), "<=%zuM", p >> 20);
    } else if (k >= 10) {
        snprintf(b.s, sizeof(b.s), "<=%zuK", p >> 10);
    } else {
        snprintf(b.s, sizeof(b.s), "<=%zu", p);
    }
    return b;
}

static struct strbuf dt_name(ucp_datatype_t dt)
{
    struct strbuf b;

    switch (dt & UCP_DATATYPE_CLASS_MASK) {
    case UCP_DATATYPE_CONTIG:
        snprintf(b.s, sizeof(b.s), "contig(%" PRIu64 ")", (uint64_t)(dt >> UCP_DATATYPE_SHIFT));
        break;
    case UCP_DATATYPE_STRIDED:
        snprintf(b.s, sizeof(b.s), "strided");
        break;
    case UCP_DATATYPE_IOV:
        snprintf(b.s, sizeof(b.s), "iov");
        break;
    case UCP_DATATYPE_GENERIC:
        snprintf(b.s, sizeof(b.s), "generic");
        break;
    default:
        snprintf(b.s, sizeof(b.s), "dt?%" PRIu64, (uint64_t)dt);
        break;
    }
    return b;
}

/* Bytes of 'count' items of 'dt' (generic: count itself, the runtimes pass
 * the packed size or element count). */
static size_t dt_bytes(ucp_datatype_t dt, size_t count)
{
    if ((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) {
        return count * (size_t)(dt >> UCP_DATATYPE_SHIFT);
    }
    return count;
}

static struct strbuf param_str(const ucp_request_param_t *p, ucp_datatype_t *dt_out)
{
    struct strbuf b;
    int len = 0;
    uint32_t m;

    *dt_out = ucp_dt_make_contig(1);
    if (p == NULL) {
        snprintf(b.s, sizeof(b.s), "param=NULL");
        return b;
    }
    m = p->op_attr_mask;
    len += snprintf(b.s + len, sizeof(b.s) - (size_t)len, "attr=");
#define FLAG(_bit, _name) \
    if (m & (_bit)) { \
        len += snprintf(b.s + len, sizeof(b.s) - (size_t)len, "%s|", _name); \
    }
    FLAG(UCP_OP_ATTR_FIELD_REQUEST, "REQUEST");
    FLAG(UCP_OP_ATTR_FIELD_CALLBACK, "CALLBACK");
    FLAG(UCP_OP_ATTR_FIELD_USER_DATA, "USER_DATA");
    FLAG(UCP_OP_ATTR_FIELD_DATATYPE, "DATATYPE");
    FLAG(UCP_OP_ATTR_FIELD_FLAGS, "FLAGS");
    FLAG(UCP_OP_ATTR_FIELD_REPLY_BUFFER, "REPLY_BUFFER");
    FLAG(UCP_OP_ATTR_FIELD_MEMORY_TYPE, "MEMORY_TYPE");
    FLAG(UCP_OP_ATTR_FIELD_RECV_INFO, "RECV_INFO");
    FLAG(UCP_OP_ATTR_FIELD_MEMH, "MEMH");
    FLAG(UCP_OP_ATTR_FLAG_NO_IMM_CMPL, "NO_IMM_CMPL");
    FLAG(UCP_OP_ATTR_FLAG_FAST_CMPL, "FAST_CMPL");
    FLAG(UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL, "FORCE_IMM_CMPL");
    FLAG(UCP_OP_ATTR_FLAG_MULTI_SEND, "MULTI_SEND");
#undef FLAG
    if (m & UCP_OP_ATTR_FIELD_DATATYPE) {
        *dt_out = p->datatype;
        len += snprintf(b.s + len, sizeof(b.s) - (size_t)len, " dt=%s", dt_name(p->datatype).s);
    }
    if (m & UCP_OP_ATTR_FIELD_FLAGS) {
        len += snprintf(b.s + len, sizeof(b.s) - (size_t)len, " flags=0x%x", p->flags);
    }
    if (m & UCP_OP_ATTR_FIELD_MEMORY_TYPE) {
        snprintf(b.s + len, sizeof(b.s) - (size_t)len, " mem_type=%d", (int)p->memory_type);
    }
    return b;
}

static const char *ptr_result(ucs_status_ptr_t r)
{
    static __thread char buf[32];

    if (r == NULL) {
        return "-> done(NULL)";
    }
    if (UCS_PTR_IS_ERR(r)) {
        snprintf(buf, sizeof(buf), "-> ERR(%d)", (int)UCS_PTR_STATUS(r));
        return buf;
    }
    return "-> request";
}

static const char *st_result(ucs_status_t s)
{
    static __thread char buf[32];

    snprintf(buf, sizeof(buf), "-> %d", (int)s);
    return buf;
}

/* ---- context, config, worker -------------------------------------------- */

ucs_status_t ucp_config_read(const char *env_prefix, const char *filename, ucp_config_t **config_p)
{
    REAL(ucp_config_read);
    ucs_status_t s = real_ucp_config_read(env_prefix, filename, config_p);
    record(CALLER, "ucp_config_read env_prefix=%s filename=%s %s", env_prefix ? env_prefix : "NULL",
           filename ? filename : "NULL", st_result(s));
    return s;
}

void ucp_config_release(ucp_config_t *config)
{
    REAL(ucp_config_release);
    record(CALLER, "ucp_config_release");
    real_ucp_config_release(config);
}

ucs_status_t ucp_init_version(unsigned api_major_version, unsigned api_minor_version,
                              const ucp_params_t *params, const ucp_config_t *config,
                              ucp_context_h *context_p)
{
    REAL(ucp_init_version);
    ucs_status_t s = real_ucp_init_version(api_major_version, api_minor_version, params, config,
                                           context_p);
    uint64_t m     = params->field_mask;

    record(CALLER,
           "ucp_init_version api=%u.%u field_mask=0x%" PRIx64 " features=0x%" PRIx64
           " request_size=%zd request_init=%s request_cleanup=%s"
           " tag_sender_mask=0x%" PRIx64 " mt_workers_shared=%d estimated_num_eps=%zd"
           " estimated_num_ppn=%zd name=%s config=%s %s",
           api_major_version, api_minor_version, m,
           (m & UCP_PARAM_FIELD_FEATURES) ? params->features : 0,
           (m & UCP_PARAM_FIELD_REQUEST_SIZE) ? (ssize_t)params->request_size : -1,
           (m & UCP_PARAM_FIELD_REQUEST_INIT) && params->request_init ? "yes" : "no",
           (m & UCP_PARAM_FIELD_REQUEST_CLEANUP) && params->request_cleanup ? "yes" : "no",
           (m & UCP_PARAM_FIELD_TAG_SENDER_MASK) ? params->tag_sender_mask : 0,
           (m & UCP_PARAM_FIELD_MT_WORKERS_SHARED) ? params->mt_workers_shared : -1,
           (m & UCP_PARAM_FIELD_ESTIMATED_NUM_EPS) ? (ssize_t)params->estimated_num_eps : -1,
           (m & UCP_PARAM_FIELD_ESTIMATED_NUM_PPN) ? (ssize_t)params->estimated_num_ppn : -1,
           (m & UCP_PARAM_FIELD_NAME) && params->name ? params->name : "-",
           config ? "given" : "NULL", st_result(s));
    return s;
}

void ucp_cleanup(ucp_context_h context_p)
{
    REAL(ucp_cleanup);
    record(CALLER, "ucp_cleanup");
    real_ucp_cleanup(context_p);
}

ucs_status_t ucp_context_query(ucp_context_h context_p, ucp_context_attr_t *attr)
{
    REAL(ucp_context_query);
    uint64_t asked = attr->field_mask;
    ucs_status_t s = real_ucp_context_query(context_p, attr);
    record(CALLER, "ucp_context_query field_mask=0x%" PRIx64 " (request_size=%zu) %s", asked,
           (asked & UCP_ATTR_FIELD_REQUEST_SIZE) ? attr->request_size : 0, st_result(s));
    return s;
}

void ucp_context_print_info(const ucp_context_h context, FILE *stream)
{
    REAL(ucp_context_print_info);
    record(CALLER, "ucp_context_print_info");
    real_ucp_context_print_info(context, stream);
}

void ucp_get_version(unsigned *major_version, unsigned *minor_version, unsigned *release_number)
{
    REAL(ucp_get_version);
    record(CALLER, "ucp_get_version");
    real_ucp_get_version(major_version, minor_version, release_number);
}

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p)
{
    REAL(ucp_worker_create);
    ucs_status_t s = real_ucp_worker_create(context, params, worker_p);
    uint64_t m     = params->field_mask;

    record(CALLER,
           "ucp_worker_create field_mask=0x%" PRIx64 " thread_mode=%d"
           " events=0x%x flags=0x%" PRIx64 " user_data=%s event_fd=%s name=%s %s",
           m, (m & UCP_WORKER_PARAM_FIELD_THREAD_MODE) ? (int)params->thread_mode : -1,
           (m & UCP_WORKER_PARAM_FIELD_EVENTS) ? params->events : 0,
           (m & UCP_WORKER_PARAM_FIELD_FLAGS) ? params->flags : 0,
           (m & UCP_WORKER_PARAM_FIELD_USER_DATA) ? "yes" : "no",
           (m & UCP_WORKER_PARAM_FIELD_EVENT_FD) ? "yes" : "no",
           (m & UCP_WORKER_PARAM_FIELD_NAME) && params->name ? params->name : "-", st_result(s));
    return s;
}

void ucp_worker_destroy(ucp_worker_h worker)
{
    REAL(ucp_worker_destroy);
    record(CALLER, "ucp_worker_destroy");
    real_ucp_worker_destroy(worker);
}

ucs_status_t ucp_worker_query(ucp_worker_h worker, ucp_worker_attr_t *attr)
{
    REAL(ucp_worker_query);
    uint64_t asked = attr->field_mask;
    ucs_status_t s = real_ucp_worker_query(worker, attr);
    record(CALLER, "ucp_worker_query field_mask=0x%" PRIx64 " (thread_mode=%d) %s", asked,
           (asked & UCP_WORKER_ATTR_FIELD_THREAD_MODE) ? (int)attr->thread_mode : -1, st_result(s));
    return s;
}

ucs_status_t ucp_worker_get_address(ucp_worker_h worker, ucp_address_t **address_p,
                                    size_t *address_length_p)
{
    REAL(ucp_worker_get_address);
    ucs_status_t s = real_ucp_worker_get_address(worker, address_p, address_length_p);
    record(CALLER, "ucp_worker_get_address (length %s) %s",
           size_bucket(s == UCS_OK ? *address_length_p : 0).s, st_result(s));
    return s;
}

void ucp_worker_release_address(ucp_worker_h worker, ucp_address_t *address)
{
    REAL(ucp_worker_release_address);
    record(CALLER, "ucp_worker_release_address");
    real_ucp_worker_release_address(worker, address);
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    REAL(ucp_worker_progress);
    unsigned n = real_ucp_worker_progress(worker);
    record(CALLER, "ucp_worker_progress %s", n ? "-> made progress" : "-> 0");
    return n;
}

ucs_status_t ucp_worker_fence(ucp_worker_h worker)
{
    REAL(ucp_worker_fence);
    ucs_status_t s = real_ucp_worker_fence(worker);
    record(CALLER, "ucp_worker_fence %s", st_result(s));
    return s;
}

ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned flags, ucp_send_callback_t cb)
{
    REAL(ucp_worker_flush_nb);
    ucs_status_ptr_t r = real_ucp_worker_flush_nb(worker, flags, cb);
    record(CALLER, "ucp_worker_flush_nb flags=0x%x %s", flags, ptr_result(r));
    return r;
}

ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id, ucp_am_callback_t cb,
                                       void *arg, uint32_t flags)
{
    REAL(ucp_worker_set_am_handler);
    ucs_status_t s = real_ucp_worker_set_am_handler(worker, id, cb, arg, flags);
    record(CALLER, "ucp_worker_set_am_handler id=%u flags=0x%x cb=%s %s", id, flags,
           cb ? "set" : "NULL", st_result(s));
    return s;
}

/* ---- endpoints ---------------------------------------------------------- */

ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t *params, ucp_ep_h *ep_p)
{
    REAL(ucp_ep_create);
    ucs_status_t s = real_ucp_ep_create(worker, params, ep_p);
    uint64_t m     = params->field_mask;

    record(CALLER,
           "ucp_ep_create field_mask=0x%" PRIx64 " err_mode=%d flags=0x%x"
           " err_handler=%s user_data=%s %s",
           m, (m & UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE) ? (int)params->err_mode : -1,
           (m & UCP_EP_PARAM_FIELD_FLAGS) ? params->flags : 0,
           (m & UCP_EP_PARAM_FIELD_ERR_HANDLER) && params->err_handler.cb ? "yes" : "no",
           (m & UCP_EP_PARAM_FIELD_USER_DATA) ? "yes" : "no", st_result(s));
    return s;
}

void ucp_ep_destroy(ucp_ep_h ep)
{
    REAL(ucp_ep_destroy);
    record(CALLER, "ucp_ep_destroy");
    real_ucp_ep_destroy(ep);
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    REAL(ucp_disconnect_nb);
    ucs_status_ptr_t r = real_ucp_disconnect_nb(ep);
    record(CALLER, "ucp_disconnect_nb %s", ptr_result(r));
    return r;
}

ucs_status_t ucp_ep_flush(ucp_ep_h ep)
{
    REAL(ucp_ep_flush);
    ucs_status_t s = real_ucp_ep_flush(ep);
    record(CALLER, "ucp_ep_flush %s", st_result(s));
    return s;
}

ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags, ucp_send_callback_t cb)
{
    REAL(ucp_ep_flush_nb);
    ucs_status_ptr_t r = real_ucp_ep_flush_nb(ep, flags, cb);
    record(CALLER, "ucp_ep_flush_nb flags=0x%x %s", flags, ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const ucp_request_param_t *param)
{
    REAL(ucp_ep_flush_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_ep_flush_nbx(ep, param);
    record(CALLER, "ucp_ep_flush_nbx %s %s", p.s, ptr_result(r));
    return r;
}

/* ---- memory and keys ---------------------------------------------------- */

ucs_status_t ucp_mem_map(ucp_context_h context, const ucp_mem_map_params_t *params,
                         ucp_mem_h *memh_p)
{
    REAL(ucp_mem_map);
    ucs_status_t s = real_ucp_mem_map(context, params, memh_p);
    uint64_t m     = params->field_mask;

    record(CALLER,
           "ucp_mem_map field_mask=0x%" PRIx64 " address=%s length=%s flags=0x%x"
           " prot=0x%x mem_type=%d%s %s",
           m,
           (m & UCP_MEM_MAP_PARAM_FIELD_ADDRESS) ? (params->address ? "given" : "NULL") : "unset",
           size_bucket((m & UCP_MEM_MAP_PARAM_FIELD_LENGTH) ? params->length : 0).s,
           (m & UCP_MEM_MAP_PARAM_FIELD_FLAGS) ? params->flags : 0,
           (m & UCP_MEM_MAP_PARAM_FIELD_PROT) ? params->prot : 0,
           (m & UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE) ? (int)params->memory_type : -1,
           handle_tag("memh", (s == UCS_OK) ? *memh_p : NULL), st_result(s));
    return s;
}

ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh)
{
    REAL(ucp_mem_unmap);
    const char *tag = handle_tag("memh", memh);
    ucs_status_t s;

    if (stream_file() != NULL) {
        record(CALLER, "ucp_mem_unmap%s (calling)", tag); /* in case it crashes */
    }
    s = real_ucp_mem_unmap(context, memh);
    record(CALLER, "ucp_mem_unmap%s %s", tag, st_result(s));
    return s;
}

ucs_status_t ucp_mem_query(const ucp_mem_h memh, ucp_mem_attr_t *attr)
{
    REAL(ucp_mem_query);
    uint64_t asked = attr->field_mask;
    ucs_status_t s = real_ucp_mem_query(memh, attr);
    record(CALLER, "ucp_mem_query field_mask=0x%" PRIx64 " %s", asked, st_result(s));
    return s;
}

ucs_status_t ucp_mem_advise(ucp_context_h context, ucp_mem_h memh, ucp_mem_advise_params_t *params)
{
    REAL(ucp_mem_advise);
    ucs_status_t s = real_ucp_mem_advise(context, memh, params);
    record(CALLER, "ucp_mem_advise field_mask=0x%" PRIx64 " advice=%d length=%s %s",
           params->field_mask, (int)params->advice, size_bucket(params->length).s, st_result(s));
    return s;
}

ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void **rkey_buffer_p,
                           size_t *size_p)
{
    REAL(ucp_rkey_pack);
    ucs_status_t s = real_ucp_rkey_pack(context, memh, rkey_buffer_p, size_p);
    record(CALLER, "ucp_rkey_pack%s (size %zu) %s", handle_tag("memh", memh),
           (s == UCS_OK) ? *size_p : 0, st_result(s));
    return s;
}

void ucp_rkey_buffer_release(void *rkey_buffer)
{
    REAL(ucp_rkey_buffer_release);
    record(CALLER, "ucp_rkey_buffer_release");
    real_ucp_rkey_buffer_release(rkey_buffer);
}

ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void *rkey_buffer, ucp_rkey_h *rkey_p)
{
    REAL(ucp_ep_rkey_unpack);
    ucs_status_t s = real_ucp_ep_rkey_unpack(ep, rkey_buffer, rkey_p);
    record(CALLER, "ucp_ep_rkey_unpack %s", st_result(s));
    return s;
}

void ucp_rkey_destroy(ucp_rkey_h rkey)
{
    REAL(ucp_rkey_destroy);
    record(CALLER, "ucp_rkey_destroy");
    real_ucp_rkey_destroy(rkey);
}

ucs_status_t ucp_rkey_ptr(ucp_rkey_h rkey, uint64_t raddr, void **addr_p)
{
    REAL(ucp_rkey_ptr);
    ucs_status_t s = real_ucp_rkey_ptr(rkey, raddr, addr_p);
    record(CALLER, "ucp_rkey_ptr %s", st_result(s));
    return s;
}

/* ---- datatypes ---------------------------------------------------------- */

ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t *ops, void *context,
                                   ucp_datatype_t *datatype_p)
{
    REAL(ucp_dt_create_generic);
    ucs_status_t s = real_ucp_dt_create_generic(ops, context, datatype_p);
    record(CALLER,
           "ucp_dt_create_generic ops: start_pack=%d start_unpack=%d packed_size=%d"
           " pack=%d unpack=%d finish=%d %s",
           ops->start_pack != NULL, ops->start_unpack != NULL, ops->packed_size != NULL,
           ops->pack != NULL, ops->unpack != NULL, ops->finish != NULL, st_result(s));
    return s;
}

void ucp_dt_destroy(ucp_datatype_t datatype)
{
    REAL(ucp_dt_destroy);
    record(CALLER, "ucp_dt_destroy");
    real_ucp_dt_destroy(datatype);
}

/* ---- requests ----------------------------------------------------------- */

ucs_status_t ucp_request_check_status(void *request)
{
    REAL(ucp_request_check_status);
    ucs_status_t s = real_ucp_request_check_status(request);
    record(CALLER, "ucp_request_check_status %s", st_result(s));
    return s;
}

ucs_status_t ucp_request_test(void *request, ucp_tag_recv_info_t *info)
{
    REAL(ucp_request_test);
    ucs_status_t s = real_ucp_request_test(request, info);
    record(CALLER, "ucp_request_test info=%s %s", info ? "given" : "NULL", st_result(s));
    return s;
}

int ucp_request_is_completed(void *request)
{
    REAL(ucp_request_is_completed);
    int done = real_ucp_request_is_completed(request);
    record(CALLER, "ucp_request_is_completed -> %d", done);
    return done;
}

void ucp_request_free(void *request)
{
    REAL(ucp_request_free);
    record(CALLER, "ucp_request_free");
    real_ucp_request_free(request);
}

void ucp_request_release(void *request)
{
    REAL(ucp_request_release);
    record(CALLER, "ucp_request_release");
    real_ucp_request_release(request);
}

void ucp_request_cancel(ucp_worker_h worker, void *request)
{
    REAL(ucp_request_cancel);
    record(CALLER, "ucp_request_cancel");
    real_ucp_request_cancel(worker, request);
}

/* ---- tag matching ------------------------------------------------------- */

ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_send_callback_t cb)
{
    REAL(ucp_tag_send_nb);
    ucs_status_ptr_t r = real_ucp_tag_send_nb(ep, buffer, count, datatype, tag, cb);
    record(CALLER, "ucp_tag_send_nb dt=%s bytes=%s %s", dt_name(datatype).s,
           size_bucket(dt_bytes(datatype, count)).s, ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                      ucp_datatype_t datatype, ucp_tag_t tag,
                                      ucp_send_callback_t cb)
{
    REAL(ucp_tag_send_sync_nb);
    ucs_status_ptr_t r = real_ucp_tag_send_sync_nb(ep, buffer, count, datatype, tag, cb);
    record(CALLER, "ucp_tag_send_sync_nb dt=%s bytes=%s %s", dt_name(datatype).s,
           size_bucket(dt_bytes(datatype, count)).s, ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t *param)
{
    REAL(ucp_tag_send_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_tag_send_nbx(ep, buffer, count, tag, param);
    record(CALLER, "ucp_tag_send_nbx %s bytes=%s %s", p.s, size_bucket(dt_bytes(dt, count)).s,
           ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t *param)
{
    REAL(ucp_tag_send_sync_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_tag_send_sync_nbx(ep, buffer, count, tag, param);
    record(CALLER, "ucp_tag_send_sync_nbx %s bytes=%s %s", p.s, size_bucket(dt_bytes(dt, count)).s,
           ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask,
                                 ucp_tag_recv_callback_t cb)
{
    REAL(ucp_tag_recv_nb);
    ucs_status_ptr_t r = real_ucp_tag_recv_nb(worker, buffer, count, datatype, tag, tag_mask, cb);
    record(CALLER, "ucp_tag_recv_nb dt=%s bytes=%s tag_mask=0x%" PRIx64 " %s", dt_name(datatype).s,
           size_bucket(dt_bytes(datatype, count)).s, tag_mask, ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void *buffer, size_t count, ucp_tag_t tag,
                                  ucp_tag_t tag_mask, const ucp_request_param_t *param)
{
    REAL(ucp_tag_recv_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_tag_recv_nbx(worker, buffer, count, tag, tag_mask, param);
    record(CALLER, "ucp_tag_recv_nbx %s bytes=%s tag_mask=0x%" PRIx64 " %s", p.s,
           size_bucket(dt_bytes(dt, count)).s, tag_mask, ptr_result(r));
    return r;
}

ucp_tag_message_h ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask,
                                   int remove, ucp_tag_recv_info_t *info)
{
    REAL(ucp_tag_probe_nb);
    ucp_tag_message_h msg = real_ucp_tag_probe_nb(worker, tag, tag_mask, remove, info);
    record(CALLER, "ucp_tag_probe_nb remove=%d tag_mask=0x%" PRIx64 " -> %s", remove, tag_mask,
           msg ? "message" : "NULL");
    return msg;
}

ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                     ucp_datatype_t datatype, ucp_tag_message_h message,
                                     ucp_tag_recv_callback_t cb)
{
    REAL(ucp_tag_msg_recv_nb);
    ucs_status_ptr_t r = real_ucp_tag_msg_recv_nb(worker, buffer, count, datatype, message, cb);
    record(CALLER, "ucp_tag_msg_recv_nb dt=%s bytes=%s %s", dt_name(datatype).s,
           size_bucket(dt_bytes(datatype, count)).s, ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void *buffer, size_t count,
                                      ucp_tag_message_h message, const ucp_request_param_t *param)
{
    REAL(ucp_tag_msg_recv_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_tag_msg_recv_nbx(worker, buffer, count, message, param);
    record(CALLER, "ucp_tag_msg_recv_nbx %s bytes=%s %s", p.s, size_bucket(dt_bytes(dt, count)).s,
           ptr_result(r));
    return r;
}

/* ---- active messages ---------------------------------------------------- */

ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void *buffer, size_t count,
                                ucp_datatype_t datatype, ucp_send_callback_t cb, unsigned flags)
{
    REAL(ucp_am_send_nb);
    ucs_status_ptr_t r = real_ucp_am_send_nb(ep, id, buffer, count, datatype, cb, flags);
    record(CALLER, "ucp_am_send_nb id=%u dt=%s bytes=%s flags=0x%x %s", id, dt_name(datatype).s,
           size_bucket(dt_bytes(datatype, count)).s, flags, ptr_result(r));
    return r;
}

/* ---- RMA ---------------------------------------------------------------- */

ucs_status_t ucp_put(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                     ucp_rkey_h rkey)
{
    REAL(ucp_put);
    ucs_status_t s = real_ucp_put(ep, buffer, length, remote_addr, rkey);
    record(CALLER, "ucp_put bytes=%s %s", size_bucket(length).s, st_result(s));
    return s;
}

ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb)
{
    REAL(ucp_put_nb);
    ucs_status_ptr_t r = real_ucp_put_nb(ep, buffer, length, remote_addr, rkey, cb);
    record(CALLER, "ucp_put_nb bytes=%s %s", size_bucket(length).s, ptr_result(r));
    return r;
}

ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey)
{
    REAL(ucp_put_nbi);
    ucs_status_t s = real_ucp_put_nbi(ep, buffer, length, remote_addr, rkey);
    record(CALLER, "ucp_put_nbi bytes=%s %s", size_bucket(length).s, st_result(s));
    return s;
}

ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t *param)
{
    REAL(ucp_put_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_put_nbx(ep, buffer, count, remote_addr, rkey, param);
    record(CALLER, "ucp_put_nbx %s bytes=%s %s", p.s, size_bucket(dt_bytes(dt, count)).s,
           ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb)
{
    REAL(ucp_get_nb);
    ucs_status_ptr_t r = real_ucp_get_nb(ep, buffer, length, remote_addr, rkey, cb);
    record(CALLER, "ucp_get_nb bytes=%s %s", size_bucket(length).s, ptr_result(r));
    return r;
}

ucs_status_t ucp_get_nbi(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey)
{
    REAL(ucp_get_nbi);
    ucs_status_t s = real_ucp_get_nbi(ep, buffer, length, remote_addr, rkey);
    record(CALLER, "ucp_get_nbi bytes=%s %s", size_bucket(length).s, st_result(s));
    return s;
}

ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t *param)
{
    REAL(ucp_get_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_get_nbx(ep, buffer, count, remote_addr, rkey, param);
    record(CALLER, "ucp_get_nbx %s bytes=%s %s", p.s, size_bucket(dt_bytes(dt, count)).s,
           ptr_result(r));
    return r;
}

/* ---- atomics ------------------------------------------------------------ */

static const char *const atomic_op_names[] = {"ADD", "SWAP", "CSWAP", "AND", "OR", "XOR"};

static const char *atomic_op_name(unsigned op, const char *const *names, unsigned count)
{
    return (op < count) ? names[op] : "?";
}

ucs_status_t ucp_atomic_post(ucp_ep_h ep, ucp_atomic_post_op_t opcode, uint64_t value,
                             size_t op_size, uint64_t remote_addr, ucp_rkey_h rkey)
{
    static const char *const names[] = {"ADD", "AND", "OR", "XOR"};
    REAL(ucp_atomic_post);
    ucs_status_t s = real_ucp_atomic_post(ep, opcode, value, op_size, remote_addr, rkey);
    record(CALLER, "ucp_atomic_post op=%s size=%zu %s", atomic_op_name(opcode, names, 4), op_size,
           st_result(s));
    return s;
}

ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, ucp_atomic_fetch_op_t opcode, uint64_t value,
                                     void *result, size_t op_size, uint64_t remote_addr,
                                     ucp_rkey_h rkey, ucp_send_callback_t cb)
{
    static const char *const names[] = {"FADD", "SWAP", "CSWAP", "FAND", "FOR", "FXOR"};
    REAL(ucp_atomic_fetch_nb);
    ucs_status_ptr_t r = real_ucp_atomic_fetch_nb(ep, opcode, value, result, op_size, remote_addr,
                                                  rkey, cb);
    record(CALLER, "ucp_atomic_fetch_nb op=%s size=%zu %s", atomic_op_name(opcode, names, 6),
           op_size, ptr_result(r));
    return r;
}

ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, ucp_atomic_op_t opcode, const void *buffer,
                                   size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
                                   const ucp_request_param_t *param)
{
    REAL(ucp_atomic_op_nbx);
    ucp_datatype_t dt;
    struct strbuf p    = param_str(param, &dt);
    ucs_status_ptr_t r = real_ucp_atomic_op_nbx(ep, opcode, buffer, count, remote_addr, rkey,
                                                param);
    record(CALLER, "ucp_atomic_op_nbx op=%s count=%zu %s %s",
           atomic_op_name(opcode, atomic_op_names, 6), count, p.s, ptr_result(r));
    return r;
}

/* ---- libucs / libucm ---------------------------------------------------- */

const char *ucs_status_string(ucs_status_t status)
{
    REAL(ucs_status_string);
    record(CALLER, "ucs_status_string status=%d", (int)status);
    return real_ucs_status_string(status);
}

void ucm_set_external_event(int events)
{
    REAL(ucm_set_external_event);
    record(CALLER, "ucm_set_external_event events=0x%x", events);
    real_ucm_set_external_event(events);
}

ucs_status_t ucm_test_events(int events)
{
    REAL(ucm_test_events);
    ucs_status_t s = real_ucm_test_events(events);
    record(CALLER, "ucm_test_events events=0x%x %s", events, st_result(s));
    return s;
}

ucs_status_t ucm_test_external_events(int events)
{
    REAL(ucm_test_external_events);
    ucs_status_t s = real_ucm_test_external_events(events);
    record(CALLER, "ucm_test_external_events events=0x%x %s", events, st_result(s));
    return s;
}

void ucm_vm_munmap(void *addr, size_t length)
{
    REAL(ucm_vm_munmap);
    record(CALLER, "ucm_vm_munmap length=%s", size_bucket(length).s);
    real_ucm_vm_munmap(addr, length);
}
