/*
 * ucp_client_server: an echo server that serves several clients at once.
 *
 *   server:  ucp_client_server [-p PORT] [-c CLIENTS]
 *   client:  ucp_client_server [-p PORT] [-n MESSAGES] SERVER_HOST
 *
 * The server listens with ucp_listener_create (PORT 0: any free port, printed
 * on start); its connection handler queues each connection request and the
 * main loop accepts it with ucp_ep_create. Every client sends MESSAGES
 * fixed-size messages over the UCP byte stream, and the server sends each
 * one back on the same endpoint; the client checks every echo. The last
 * message is marked, after which both sides close the endpoint. The server
 * exits after CLIENTS clients (0: never). Any failure exits 1.
 */
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_PORT 13338
#define MAX_CLIENTS  64 /* connected at the same time */

/* One message; fixed size, so that a stream receive knows how much to wait for. */
typedef struct {
    uint32_t seq;  /* 0, 1, ... */
    uint32_t last; /* 1 on the client's last message */
    char text[56];
} echo_msg_t;

/* The server's state for one connected client. */
typedef struct {
    ucp_ep_h ep;
    int id;
    echo_msg_t msg;            /* the message being received */
    ucs_status_ptr_t recv_req; /* the receive in flight, or NULL */
    ucs_status_t error;        /* set by the endpoint's error handler */
} client_t;

/* Connection requests the listener handed us, not accepted yet. */
static ucp_conn_request_h pending[MAX_CLIENTS];
static int num_pending;
static ucp_listener_h listener;

static ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t request)
{
    ucs_status_t status;

    if (request == NULL) {
        return UCS_OK;
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

static int close_ep(ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    ucs_status_t status       = wait_request(worker, ucp_ep_close_nbx(ep, &param));

    /* The peer may close at the same moment; that is fine. */
    if ((status != UCS_OK) && (status != UCS_ERR_CONNECTION_RESET) &&
        (status != UCS_ERR_ENDPOINT_TIMEOUT)) {
        fprintf(stderr, "ucp_ep_close_nbx: %s\n", ucs_status_string(status));
        return -1;
    }
    return 0;
}

/* Runs inside ucp_worker_progress: only queue the request. */
static void on_connection(ucp_conn_request_h conn_request, void *arg)
{
    (void)arg;
    if (num_pending < MAX_CLIENTS) {
        pending[num_pending++] = conn_request;
    } else {
        ucp_listener_reject(listener, conn_request); /* too busy */
    }
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    ((client_t *)arg)->error = status;
}

/* Post a receive for the client's next whole message. */
static ucs_status_t post_recv(client_t *client)
{
    ucp_request_param_t param;
    size_t length;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
    client->recv_req   = ucp_stream_recv_nbx(client->ep, &client->msg, sizeof(client->msg), &length,
                                             &param);
    if (UCS_PTR_IS_ERR(client->recv_req)) {
        return UCS_PTR_STATUS(client->recv_req);
    }
    return UCS_OK; /* NULL: the data was there already */
}

/* Handle what the client sent, if it has arrived. Returns 1 when the client
 * is finished (its last message echoed, or an error), 0 to keep going. */
static int serve_client(ucp_worker_h worker, client_t *client, int *failures)
{
    ucp_request_param_t param = {0};
    ucs_status_t status       = UCS_OK;

    if (client->recv_req != NULL) {
        status = ucp_request_check_status(client->recv_req);
        if (status == UCS_INPROGRESS) {
            return 0;
        }
        ucp_request_free(client->recv_req);
        client->recv_req = NULL;
    }
    if (status == UCS_OK) {
        /* Echo the message back on the same endpoint. */
        status = wait_request(worker, ucp_stream_send_nbx(client->ep, &client->msg,
                                                          sizeof(client->msg), &param));
    }
    if (status != UCS_OK) {
        fprintf(stderr, "server: client %d failed: %s\n", client->id, ucs_status_string(status));
        ++*failures;
        close_ep(worker, client->ep);
        return 1;
    }
    printf("server: client %d message %u: \"%.*s\" echoed\n", client->id, client->msg.seq,
           (int)sizeof(client->msg.text), client->msg.text);
    if (client->msg.last) {
        printf("server: client %d done\n", client->id);
        if (close_ep(worker, client->ep) != 0) {
            ++*failures;
        }
        return 1;
    }
    if (post_recv(client) != UCS_OK) {
        fprintf(stderr, "server: receive from client %d failed\n", client->id);
        ++*failures;
        close_ep(worker, client->ep);
        return 1;
    }
    return 0;
}

static int run_server(ucp_worker_h worker, uint16_t port, int max_clients)
{
    static client_t clients[MAX_CLIENTS];
    int num_clients = 0, served = 0, failures = 0, next_id = 0, i;
    struct sockaddr_in addr;
    ucp_listener_params_t lparams;
    ucp_listener_attr_t lattr;
    ucp_ep_params_t ep_params;
    ucs_status_t status;

    memset(&addr, 0, sizeof(addr));
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port        = htons(port);
    memset(&lparams, 0, sizeof(lparams));
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr    = (const struct sockaddr *)&addr;
    lparams.sockaddr.addrlen = sizeof(addr);
    lparams.conn_handler.cb  = on_connection;
    status                   = ucp_listener_create(worker, &lparams, &listener);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_listener_create: %s\n", ucs_status_string(status));
        return 1;
    }
    lattr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    if (ucp_listener_query(listener, &lattr) != UCS_OK) {
        fprintf(stderr, "ucp_listener_query failed\n");
        ucp_listener_destroy(listener);
        return 1;
    }
    printf("server listening on port %u\n",
           ntohs(((struct sockaddr_in *)&lattr.sockaddr)->sin_port));
    fflush(stdout);

    while ((max_clients == 0) || (served < max_clients)) {
        ucp_worker_progress(worker);

        /* Accept the queued connections while there is a free slot. A
         * slot never moves: its address is the error handler's argument. */
        while ((num_pending > 0) && (num_clients < MAX_CLIENTS)) {
            client_t *client = &clients[0];

            while (client->ep != NULL) {
                ++client;
            }
            memset(client, 0, sizeof(*client));
            client->id = next_id++;
            memset(&ep_params, 0, sizeof(ep_params));
            ep_params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep_params.conn_request    = pending[--num_pending];
            ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
            ep_params.err_handler.cb  = on_ep_error;
            ep_params.err_handler.arg = client;
            status                    = ucp_ep_create(worker, &ep_params, &client->ep);
            if (status != UCS_OK) {
                fprintf(stderr, "server: cannot accept client %d: %s\n", client->id,
                        ucs_status_string(status));
                client->ep = NULL;
                ++failures;
                ++served;
            } else if (post_recv(client) != UCS_OK) {
                fprintf(stderr, "server: cannot receive from client %d\n", client->id);
                close_ep(worker, client->ep);
                client->ep = NULL;
                ++failures;
                ++served;
            } else {
                printf("server: client %d connected\n", client->id);
                ++num_clients;
            }
        }

        /* Serve every connected client. */
        for (i = 0; i < MAX_CLIENTS; ++i) {
            if (clients[i].ep != NULL && serve_client(worker, &clients[i], &failures)) {
                clients[i].ep = NULL; /* closed: the slot is free again */
                --num_clients;
                ++served;
            }
        }
    }

    ucp_listener_destroy(listener);
    printf("server: served %d clients, %d failed\n", served, failures);
    return (failures == 0) ? 0 : 1;
}

static int run_client(ucp_worker_h worker, const char *host, uint16_t port, int num_messages)
{
    struct addrinfo hints, *server;
    ucp_ep_params_t ep_params;
    ucp_request_param_t param;
    echo_msg_t msg, echo;
    char port_text[8];
    ucs_status_t status;
    size_t length;
    ucp_ep_h ep;
    int i, rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port_text, sizeof(port_text), "%u", port);
    rc = getaddrinfo(host, port_text, &hints, &server);
    if (rc != 0) {
        fprintf(stderr, "cannot resolve %s: %s\n", host, gai_strerror(rc));
        return 1;
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep_params.sockaddr.addr    = server->ai_addr;
    ep_params.sockaddr.addrlen = server->ai_addrlen;
    ep_params.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
    status                     = ucp_ep_create(worker, &ep_params, &ep);
    freeaddrinfo(server);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_ep_create (connect): %s\n", ucs_status_string(status));
        return 1;
    }

    for (i = 0; i < num_messages; ++i) {
        memset(&msg, 0, sizeof(msg));
        msg.seq  = (uint32_t)i;
        msg.last = (i == num_messages - 1);
        snprintf(msg.text, sizeof(msg.text), "message %d from process %d", i, (int)getpid());

        memset(&param, 0, sizeof(param));
        status = wait_request(worker, ucp_stream_send_nbx(ep, &msg, sizeof(msg), &param));
        if (status == UCS_OK) {
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
            status             = wait_request(worker,
                                              ucp_stream_recv_nbx(ep, &echo, sizeof(echo), &length, &param));
        }
        if (status != UCS_OK) {
            fprintf(stderr, "client: message %d: %s\n", i, ucs_status_string(status));
            close_ep(worker, ep);
            return 1;
        }
        if (memcmp(&msg, &echo, sizeof(msg)) != 0) {
            fprintf(stderr, "client: echo of message %d differs\n", i);
            close_ep(worker, ep);
            return 1;
        }
    }
    printf("client: %d messages echoed correctly\n", num_messages);
    return (close_ep(worker, ep) == 0) ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *host = NULL;
    long port = DEFAULT_PORT, max_clients = 0, num_messages = 10;
    ucp_params_t ctx_params;
    ucp_worker_params_t worker_params;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_config_t *config;
    ucs_status_t status;
    int opt, ret = 1;

    while ((opt = getopt(argc, argv, "p:c:n:h")) != -1) {
        switch (opt) {
        case 'p':
            port = strtol(optarg, NULL, 10);
            break;
        case 'c':
            max_clients = strtol(optarg, NULL, 10);
            break;
        case 'n':
            num_messages = strtol(optarg, NULL, 10);
            break;
        default:
            fprintf(stderr, "Usage: %s [-p PORT] [-c CLIENTS] [-n MESSAGES] [SERVER_HOST]\n",
                    argv[0]);
            return (opt == 'h') ? 0 : 1;
        }
    }
    if ((port < 0) || (port > 65535) || (max_clients < 0) || (num_messages < 1) ||
        (num_messages > 1000000)) {
        fprintf(stderr, "bad port, client count or message count\n");
        return 1;
    }
    if (optind < argc) {
        host = argv[optind];
    }

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_config_read: %s\n", ucs_status_string(status));
        return 1;
    }
    memset(&ctx_params, 0, sizeof(ctx_params));
    ctx_params.field_mask = UCP_PARAM_FIELD_FEATURES;
    ctx_params.features   = UCP_FEATURE_STREAM;
    status                = ucp_init(&ctx_params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_init: %s\n", ucs_status_string(status));
        return 1;
    }
    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status                    = ucp_worker_create(context, &worker_params, &worker);
    if (status != UCS_OK) {
        fprintf(stderr, "ucp_worker_create: %s\n", ucs_status_string(status));
        ucp_cleanup(context);
        return 1;
    }

    if (host == NULL) {
        ret = run_server(worker, (uint16_t)port, (int)max_clients);
    } else {
        ret = run_client(worker, host, (uint16_t)port, (int)num_messages);
    }

    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return ret;
}
