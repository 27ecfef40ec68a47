/*
 * ucp_hello_world: the smallest UCP client/server program.
 *
 *   server:  ucp_hello_world [-m tag|stream|am] [-p PORT]
 *   client:  ucp_hello_world [-m tag|stream|am] [-p PORT] [-s TEXT] SERVER_HOST
 *
 * The server listens on PORT (0: any free port, printed on start) with
 * ucp_listener_create; the client connects with ucp_ep_create on the server's
 * socket address, so no out-of-band channel is needed. The client sends one
 * string with the chosen API (tag matching, byte stream or active message),
 * the server prints it and answers with a short acknowledgement, and both
 * sides close their endpoint with ucp_ep_close_nbx and exit 0. Any failure
 * exits 1.
 */
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_PORT 13337
#define HELLO_TAG    0x1337ULL /* tag of the client's message */
#define ACK_TAG      0x1338ULL /* tag of the server's answer */
#define HELLO_AM_ID  1         /* active message handler ids */
#define ACK_AM_ID    2
#define MAX_TEXT     256

typedef enum { MODE_TAG, MODE_STREAM, MODE_AM } send_mode_t;

/* What an active message handler received (the handler runs inside
 * ucp_worker_progress, so it only copies the data and raises a flag). */
typedef struct {
    char text[MAX_TEXT];
    size_t length;
    int arrived;
    void *rndv_desc; /* set when the data must still be fetched */
} am_inbox_t;

static ucp_listener_h listener;         /* the server's listening socket */
static ucp_conn_request_h pending_conn; /* set by the listener's handler */
static ucs_status_t peer_status = UCS_OK;

/* Block until a non-blocking operation finishes, driving the worker. */
static ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t request)
{
    ucs_status_t status;

    if (request == NULL) {
        return UCS_OK; /* completed at once */
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(request);
    return status;
}

/* Called when the connection to the peer fails or the peer goes away. */
static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    peer_status = status;
}

/* The listener calls this for every incoming connection: keep the first
 * one, refuse the others (this server talks to one client). */
static void on_connection(ucp_conn_request_h conn_request, void *arg)
{
    (void)arg;
    if (pending_conn == NULL) {
        pending_conn = conn_request;
    } else {
        ucp_listener_reject(listener, conn_request);
    }
}

/* Active message handler: copy short data now; large data arrives by
 * rendezvous and is fetched later with ucp_am_recv_data_nbx. */
static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    am_inbox_t *inbox = (am_inbox_t *)arg;

    (void)header;
    (void)header_length;
    if (length >= MAX_TEXT) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    inbox->length  = length;
    inbox->arrived = 1;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        inbox->rndv_desc = data;
        return UCS_INPROGRESS; /* keep the descriptor until we fetch it */
    }
    memcpy(inbox->text, data, length);
    return UCS_OK;
}

/* Send one string to the peer with the chosen API. */
static ucs_status_t send_text(ucp_worker_h worker, ucp_ep_h ep, send_mode_t mode, const char *text,
                              int is_ack)
{
    ucp_request_param_t param = {0};
    uint32_t length           = (uint32_t)strlen(text);
    ucs_status_t status;

    switch (mode) {
    case MODE_TAG:
        return wait_request(worker, ucp_tag_send_nbx(ep, text, length, is_ack ? ACK_TAG : HELLO_TAG,
                                                     &param));
    case MODE_STREAM:
        /* A stream has no message boundaries: send the length first. */
        status = wait_request(worker, ucp_stream_send_nbx(ep, &length, sizeof(length), &param));
        if (status != UCS_OK) {
            return status;
        }
        return wait_request(worker, ucp_stream_send_nbx(ep, text, length, &param));
    case MODE_AM:
    default:
        return wait_request(worker, ucp_am_send_nbx(ep, is_ack ? ACK_AM_ID : HELLO_AM_ID, NULL, 0,
                                                    text, length, &param));
    }
}

/* Receive one string from the peer into text[MAX_TEXT], NUL-terminated. */
static ucs_status_t recv_text(ucp_worker_h worker, ucp_ep_h ep, send_mode_t mode, am_inbox_t *inbox,
                              char *text, int is_ack)
{
    ucp_request_param_t param = {0};
    ucp_tag_recv_info_t info;
    ucs_status_ptr_t request;
    ucs_status_t status;
    uint32_t length;
    size_t received;

    switch (mode) {
    case MODE_TAG:
        request = ucp_tag_recv_nbx(worker, text, MAX_TEXT - 1, is_ack ? ACK_TAG : HELLO_TAG,
                                   UINT64_MAX, &param);
        if (UCS_PTR_IS_ERR(request)) {
            return UCS_PTR_STATUS(request);
        }
        while (ucp_tag_recv_request_test(request, &info) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        status = ucp_request_check_status(request);
        ucp_request_free(request);
        text[(status == UCS_OK) ? info.length : 0] = '\0';
        return status;
    case MODE_STREAM:
        /* WAITALL: complete only when every requested byte is there. */
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
        status             = wait_request(worker,
                                          ucp_stream_recv_nbx(ep, &length, sizeof(length), &received, &param));
        if (status != UCS_OK) {
            return status;
        }
        if (length >= MAX_TEXT) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        status = wait_request(worker, ucp_stream_recv_nbx(ep, text, length, &received, &param));
        text[(status == UCS_OK) ? length : 0] = '\0';
        return status;
    case MODE_AM:
    default:
        while (!inbox->arrived && (peer_status == UCS_OK)) {
            ucp_worker_progress(worker);
        }
        if (!inbox->arrived) {
            return peer_status;
        }
        if (inbox->rndv_desc != NULL) {
            status = wait_request(worker, ucp_am_recv_data_nbx(worker, inbox->rndv_desc,
                                                               inbox->text, inbox->length, &param));
            if (status != UCS_OK) {
                return status;
            }
        }
        memcpy(text, inbox->text, inbox->length);
        text[inbox->length] = '\0';
        inbox->arrived      = 0;
        inbox->rndv_desc    = NULL;
        return UCS_OK;
    }
}

/* Close an endpoint the polite way: flush what is outstanding, then tell
 * the peer. A peer that closed first is not an error. */
static int close_ep(ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    ucs_status_t status       = wait_request(worker, ucp_ep_close_nbx(ep, &param));

    if ((status != UCS_OK) && (status != UCS_ERR_CONNECTION_RESET) &&
        (status != UCS_ERR_ENDPOINT_TIMEOUT)) {
        fprintf(stderr, "ucp_ep_close_nbx: %s\n", ucs_status_string(status));
        return -1;
    }
    return 0;
}

static int run_server(ucp_worker_h worker, send_mode_t mode, uint16_t port, am_inbox_t *inbox)
{
    struct sockaddr_in listen_addr;
    ucp_listener_params_t lparams;
    ucp_listener_attr_t lattr;
    ucp_ep_params_t ep_params;
    char text[MAX_TEXT], ack[MAX_TEXT];
    ucs_status_t status;
    ucp_ep_h ep;
    int ret = 1;

    /* Listen on every local address. */
    memset(&listen_addr, 0, sizeof(listen_addr));
    listen_addr.sin_family      = AF_INET;
    listen_addr.sin_addr.s_addr = htonl(INADDR_ANY);
    listen_addr.sin_port        = htons(port);

    memset(&lparams, 0, sizeof(lparams));
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr    = (const struct sockaddr *)&listen_addr;
    lparams.sockaddr.addrlen = sizeof(listen_addr);
    lparams.conn_handler.cb  = on_connection;
    lparams.conn_handler.arg = NULL;
    status                   = ucp_listener_create(worker, &lparams, &listener);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_listener_create: %s\n", ucs_status_string(status));
        return 1;
    }

    /* With port 0 the system chose one: ask the listener which. */
    lattr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    status           = ucp_listener_query(listener, &lattr);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_listener_query: %s\n", ucs_status_string(status));
        goto out_listener;
    }
    printf("server listening on port %u\n",
           ntohs(((struct sockaddr_in *)&lattr.sockaddr)->sin_port));
    fflush(stdout); /* a script may be waiting for this line */

    while (pending_conn == NULL) {
        ucp_worker_progress(worker);
    }

    /* Accept: an endpoint created from the connection request. */
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                           UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.conn_request    = pending_conn;
    ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb  = on_ep_error;
    ep_params.err_handler.arg = NULL;
    status                    = ucp_ep_create(worker, &ep_params, &ep);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_ep_create (accept): %s\n", ucs_status_string(status));
        goto out_listener;
    }

    status = recv_text(worker, ep, mode, inbox, text, 0);
    if (status != UCS_OK) {
        fprintf(stderr, "receive: %s\n", ucs_status_string(status));
        close_ep(worker, ep);
        goto out_listener;
    }
    printf("server received: \"%s\"\n", text);

    snprintf(ack, sizeof(ack), "received %zu bytes", strlen(text));
    status = send_text(worker, ep, mode, ack, 1);
    if (status != UCS_OK) {
        fprintf(stderr, "send acknowledgement: %s\n", ucs_status_string(status));
        close_ep(worker, ep);
        goto out_listener;
    }
    /* The client hangs up once it has the answer: wait for that (the error
     * handler reports it), so our close cannot overtake the answer still
     * on its way over a transport other than the connection's socket. */
    while (peer_status == UCS_OK) {
        ucp_worker_progress(worker);
    }
    ret = (close_ep(worker, ep) == 0) ? 0 : 1;

out_listener:
    ucp_listener_destroy(listener);
    return ret;
}

static int run_client(ucp_worker_h worker, send_mode_t mode, const char *host, uint16_t port,
                      const char *message, am_inbox_t *inbox)
{
    struct addrinfo hints, *server;
    ucp_ep_params_t ep_params;
    char port_text[8], ack[MAX_TEXT];
    ucs_status_t status;
    ucp_ep_h ep;
    int rc;

    /* Resolve the server's host name to an IPv4 socket address. */
    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port_text, sizeof(port_text), "%u", port);
    rc = getaddrinfo(host, port_text, &hints, &server);
    if (rc != 0) {
        fprintf(stderr, "cannot resolve %s: %s\n", host, gai_strerror(rc));
        return 1;
    }

    /* Connect: UCP's connection manager does the whole handshake. */
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep_params.sockaddr.addr    = server->ai_addr;
    ep_params.sockaddr.addrlen = server->ai_addrlen;
    ep_params.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb   = on_ep_error;
    ep_params.err_handler.arg  = NULL;
    status                     = ucp_ep_create(worker, &ep_params, &ep);
    freeaddrinfo(server);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_ep_create (connect): %s\n", ucs_status_string(status));
        return 1;
    }

    status = send_text(worker, ep, mode, message, 0);
    if (status != UCS_OK) {
        fprintf(stderr, "send: %s\n", ucs_status_string(status));
        close_ep(worker, ep);
        return 1;
    }
    printf("client sent: \"%s\"\n", message);

    /* Wait for the answer, so the server surely has the message before we
     * close the connection. */
    status = recv_text(worker, ep, mode, inbox, ack, 1);
    if (status != UCS_OK) {
        fprintf(stderr, "receive acknowledgement: %s\n", ucs_status_string(status));
        close_ep(worker, ep);
        return 1;
    }
    printf("client got answer: \"%s\"\n", ack);
    return (close_ep(worker, ep) == 0) ? 0 : 1;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "Usage: %s [-m tag|stream|am] [-p PORT] [-s TEXT] [SERVER_HOST]\n"
            "  without SERVER_HOST: run the server (port 0 picks a free port)\n"
            "  with SERVER_HOST:    connect to it and send TEXT\n",
            argv0);
}

int main(int argc, char **argv)
{
    const char *message = "Hello from the UCP client!";
    const char *host    = NULL;
    send_mode_t mode    = MODE_TAG;
    long port           = DEFAULT_PORT;
    ucp_params_t ctx_params;
    ucp_worker_params_t worker_params;
    ucp_am_handler_param_t am_param;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_config_t *config;
    am_inbox_t inbox;
    ucs_status_t status;
    int opt, ret = 1;

    while ((opt = getopt(argc, argv, "m:p:s:h")) != -1) {
        switch (opt) {
        case 'm':
            if (!strcmp(optarg, "tag")) {
                mode = MODE_TAG;
            } else if (!strcmp(optarg, "stream")) {
                mode = MODE_STREAM;
            } else if (!strcmp(optarg, "am")) {
                mode = MODE_AM;
            } else {
                usage(argv[0]);
                return 1;
            }
            break;
        case 'p':
            port = strtol(optarg, NULL, 10);
            if ((port < 0) || (port > 65535)) {
                fprintf(stderr, "bad port: %s\n", optarg);
                return 1;
            }
            break;
        case 's':
            message = optarg;
            if (strlen(message) >= MAX_TEXT) {
                fprintf(stderr, "the text must be shorter than %d bytes\n", MAX_TEXT);
                return 1;
            }
            break;
        default:
            usage(argv[0]);
            return (opt == 'h') ? 0 : 1;
        }
    }
    if (optind < argc) {
        host = argv[optind];
    }
    if ((host != NULL) && (port == 0)) {
        fprintf(stderr, "the client needs the server's port\n");
        return 1;
    }

    /* A context with the features this program uses, read from UCX_*
     * environment variables (UCX_TLS picks the transports). */
    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_config_read: %s\n", ucs_status_string(status));
        return 1;
    }
    memset(&ctx_params, 0, sizeof(ctx_params));
    ctx_params.field_mask = UCP_PARAM_FIELD_FEATURES;
    ctx_params.features   = (mode == MODE_TAG)    ? UCP_FEATURE_TAG :
                            (mode == MODE_STREAM) ? UCP_FEATURE_STREAM :
                                                    UCP_FEATURE_AM;
    status                = ucp_init(&ctx_params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_init: %s\n", ucs_status_string(status));
        return 1;
    }

    /* One worker, used by this thread only. */
    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status                    = ucp_worker_create(context, &worker_params, &worker);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_worker_create: %s\n", ucs_status_string(status));
        goto out_context;
    }

    /* In AM mode both sides receive: the server the text, the client the
     * answer. The handler is registered before any connection exists. */
    memset(&inbox, 0, sizeof(inbox));
    if (mode == MODE_AM) {
        am_param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                              UCP_AM_HANDLER_PARAM_FIELD_ARG;
        am_param.id  = (host == NULL) ? HELLO_AM_ID : ACK_AM_ID;
        am_param.cb  = on_am;
        am_param.arg = &inbox;
        status       = ucp_worker_set_am_recv_handler(worker, &am_param);
        if (status != UCS_OK) {
            fprintf(stderr, "ucp_worker_set_am_recv_handler: %s\n", ucs_status_string(status));
            goto out_worker;
        }
    }

    if (host == NULL) {
        ret = run_server(worker, mode, (uint16_t)port, &inbox);
    } else {
        ret = run_client(worker, mode, host, (uint16_t)port, message, &inbox);
    }

out_worker:
    ucp_worker_destroy(worker);
out_context:
    ucp_cleanup(context);
    return ret;
}
