/*
 * Tag matching: MPI_ANY_SOURCE/MPI_ANY_TAG on the expected and unexpected
 * paths, probe and matched probe (MPI_Mprobe/MPI_Mrecv, MPI_Improbe/
 * MPI_Imrecv), synchronous send, cancel of a receive, truncation.
 */
#include "rt_mpi.h"

#define SMALL 24
#define LARGE (300 * 1024) /* rendezvous in every UCX-like library */

/* A message from 'src' with 'tag' of 'len' bytes. */
static uint64_t msg_seed(int src, int tag, size_t len)
{
    return rt_seed(src, 0, ((uint64_t)tag << 24) ^ len);
}

static void *make_msg(int tag, size_t len)
{
    void *buf = rt_malloc(len);

    rt_fill(buf, len, msg_seed(g_rank, tag, len));
    return buf;
}

static void check_msg(const void *buf, const MPI_Status *st, size_t len, const char *what)
{
    int count;

    RT_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    RT_CHECK((size_t)count == len, "%s: %d bytes from %d tag %d, expected %zu", what, count,
             st->MPI_SOURCE, st->MPI_TAG, len);
    RT_CHECK_DATA(buf, len, msg_seed(st->MPI_SOURCE, st->MPI_TAG, len), what);
}

/*
 * Every rank but 0 sends one message to rank 0 with a tag of its own; rank 0
 * takes them with MPI_ANY_SOURCE/MPI_ANY_TAG, posted before the messages
 * come (expected) or after they arrived (unexpected).
 */
static void test_any_source_any_tag(size_t len, int unexpected)
{
    int tag      = 1000 + g_rank * 10 + unexpected;
    int seen[64] = {0};
    int i;

    RT_CHECK(g_size <= 64, "too many ranks");
    if (g_rank == 0) {
        MPI_Request *req     = rt_malloc(sizeof(*req) * (size_t)g_size);
        MPI_Status *st       = rt_malloc(sizeof(*st) * (size_t)g_size);
        unsigned char **bufs = rt_malloc(sizeof(*bufs) * (size_t)g_size);

        if (unexpected) {
            RT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* senders have started */
        }
        for (i = 0; i < g_size - 1; ++i) {
            bufs[i] = rt_malloc(len);
            RT_MPI(MPI_Irecv(bufs[i], (int)len, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                             MPI_COMM_WORLD, &req[i]));
        }
        if (!unexpected) {
            RT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* receives are posted */
        }
        RT_MPI(MPI_Waitall(g_size - 1, req, st));
        for (i = 0; i < g_size - 1; ++i) {
            int src = st[i].MPI_SOURCE;

            RT_CHECK(src > 0 && src < g_size, "ANY_SOURCE gave source %d", src);
            RT_CHECK(st[i].MPI_TAG == 1000 + src * 10 + unexpected,
                     "ANY_TAG gave tag %d for source %d", st[i].MPI_TAG, src);
            RT_CHECK(!seen[src], "source %d matched twice", src);
            seen[src] = 1;
            check_msg(bufs[i], &st[i], len, "ANY_SOURCE/ANY_TAG");
            free(bufs[i]);
        }
        free(req);
        free(st);
        free(bufs);
    } else {
        void *buf = make_msg(tag, len);
        MPI_Request req;

        if (!unexpected) {
            RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
        RT_MPI(MPI_Isend(buf, (int)len, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req));
        if (unexpected) {
            RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
        RT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        free(buf);
    }
    /* ANY_TAG would take the next round's messages otherwise. */
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    RT_STEP("ANY_SOURCE/ANY_TAG, %zu bytes, %s", len, unexpected ? "unexpected" : "expected");
}

/* Rank 0 takes the other ranks' messages with blocking and polling probes. */
static void test_probe(size_t len)
{
    int tag = 2000 + g_rank, i, flag;

    if (g_rank == 0) {
        for (i = 1; i < g_size; ++i) {
            MPI_Status st;
            int count;
            void *buf;

            if (i % 2) {
                RT_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            } else {
                do {
                    RT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
                } while (!flag);
            }
            RT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            RT_CHECK((size_t)count == len, "Probe: %d bytes, expected %zu", count, len);
            RT_CHECK(st.MPI_TAG == 2000 + st.MPI_SOURCE, "Probe: tag %d from %d", st.MPI_TAG,
                     st.MPI_SOURCE);
            buf = rt_malloc(len);
            RT_MPI(MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
            check_msg(buf, &st, len, "Probe then Recv");
            free(buf);
        }
    } else {
        void *buf = make_msg(tag, len);
        RT_MPI(MPI_Send(buf, (int)len, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
        free(buf);
    }
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    RT_STEP("Probe/Iprobe, %zu bytes", len);
}

/*
 * Matched probe: a message taken by MPI_Mprobe belongs to its handle, so a
 * receive posted afterwards with the same source and tag must get the next
 * message, and MPI_Mrecv the first one.
 */
static void test_mprobe(size_t len_first, size_t len_second)
{
    enum { TAG = 3000 };
    int i;

    if (g_rank == 0) {
        for (i = 1; i < g_size; ++i) {
            MPI_Message msg;
            MPI_Status st, st2;
            MPI_Request req;
            void *first, *second;
            int count, flag = 0;

            if (i % 2) {
                RT_MPI(MPI_Mprobe(i, TAG, MPI_COMM_WORLD, &msg, &st));
            } else {
                do {
                    RT_MPI(MPI_Improbe(i, TAG, MPI_COMM_WORLD, &flag, &msg, &st));
                } while (!flag);
            }
            RT_CHECK(st.MPI_SOURCE == i, "Mprobe source %d, expected %d", st.MPI_SOURCE, i);
            RT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            RT_CHECK((size_t)count == len_first,
                     "Mprobe: %d bytes, expected %zu "
                     "(not the first message?)",
                     count, len_first);

            second = rt_malloc(len_second);
            RT_MPI(MPI_Recv(second, (int)len_second, MPI_BYTE, i, TAG, MPI_COMM_WORLD, &st2));
            check_msg(second, &st2, len_second, "Recv after Mprobe (second message)");

            first = rt_malloc((size_t)count);
            if (i % 2) {
                RT_MPI(MPI_Mrecv(first, count, MPI_BYTE, &msg, &st));
            } else {
                RT_MPI(MPI_Imrecv(first, count, MPI_BYTE, &msg, &req));
                RT_MPI(MPI_Wait(&req, &st));
            }
            RT_CHECK(msg == MPI_MESSAGE_NULL, "message handle not released");
            check_msg(first, &st, len_first, "Mrecv (first message)");
            free(first);
            free(second);
        }
    } else {
        void *a = make_msg(TAG, len_first);
        void *b = make_msg(TAG, len_second);
        MPI_Request req[2];
        MPI_Status st[2];

        RT_MPI(MPI_Isend(a, (int)len_first, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &req[0]));
        RT_MPI(MPI_Isend(b, (int)len_second, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &req[1]));
        RT_MPI(MPI_Waitall(2, req, st));
        free(a);
        free(b);
    }
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    RT_STEP("Mprobe/Mrecv and Improbe/Imrecv, %zu then %zu bytes", len_first, len_second);
}

/*
 * A synchronous send completes only once the receive has matched: rank 1
 * polls its MPI_Issend many times before rank 0 posts the receive, and it
 * must still be pending then.
 */
static void test_ssend(size_t len)
{
    enum { TAG = 4000, GO_TAG = 4001, POLLS = 2000 };
    int flag, i, go = 0;

    if (g_rank == 1) {
        void *buf = make_msg(TAG, len);
        MPI_Request req;

        RT_MPI(MPI_Issend(buf, (int)len, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &req));
        for (i = 0; i < POLLS; ++i) {
            RT_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            RT_CHECK(!flag,
                     "Issend of %zu bytes completed before the receive "
                     "was posted",
                     len);
        }
        RT_MPI(MPI_Send(&go, 1, MPI_INT, 0, GO_TAG, MPI_COMM_WORLD));
        RT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        /* And the blocking form, just for its data. */
        RT_MPI(MPI_Ssend(buf, (int)len, MPI_BYTE, 0, TAG, MPI_COMM_WORLD));
        free(buf);
    } else if (g_rank == 0) {
        void *buf = rt_malloc(len);
        MPI_Status st;

        RT_MPI(MPI_Recv(&go, 1, MPI_INT, 1, GO_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (i = 0; i < 2; ++i) {
            memset(buf, 0, len);
            RT_MPI(MPI_Recv(buf, (int)len, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &st));
            check_msg(buf, &st, len, "Ssend");
        }
        free(buf);
    }
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    RT_STEP("Issend pending until matched, Ssend, %zu bytes", len);
}

/*
 * A cancelled receive reports cancelled and takes no message: the message
 * sent afterwards with the same tag lands in the next receive.
 */
static void test_cancel_recv(size_t len, int any_source)
{
    enum { TAG = 5000 };
    int cancelled = 0;

    if (g_rank == 0) {
        unsigned char *victim = rt_malloc(len), *buf = rt_malloc(len);
        MPI_Request req;
        MPI_Status st;

        memset(victim, 0xEE, len);
        RT_MPI(MPI_Irecv(victim, (int)len, MPI_BYTE, any_source ? MPI_ANY_SOURCE : 1, TAG,
                         MPI_COMM_WORLD, &req));
        RT_MPI(MPI_Cancel(&req));
        RT_MPI(MPI_Wait(&req, &st));
        RT_MPI(MPI_Test_cancelled(&st, &cancelled));
        RT_CHECK(cancelled, "receive was not cancelled");
        RT_CHECK(req == MPI_REQUEST_NULL, "request not freed by Wait");
        RT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* only now rank 1 sends */
        RT_MPI(MPI_Recv(buf, (int)len, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &st));
        check_msg(buf, &st, len, "receive after a cancelled one");
        RT_CHECK(victim[0] == 0xEE && victim[len - 1] == 0xEE,
                 "cancelled receive buffer was written");
        free(victim);
        free(buf);
    } else {
        RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (g_rank == 1) {
            void *buf = make_msg(TAG, len);
            RT_MPI(MPI_Send(buf, (int)len, MPI_BYTE, 0, TAG, MPI_COMM_WORLD));
            free(buf);
        }
    }
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    RT_STEP("Cancel of a %s receive, %zu bytes", any_source ? "ANY_SOURCE" : "specific", len);
}

/* A message longer than the receive is an MPI_ERR_TRUNCATE error, not a crash. */
static void test_truncate(size_t len)
{
    enum { TAG = 6000 };

    if (g_rank == 0) {
        size_t half        = len / 2;
        unsigned char *buf = rt_malloc(len);
        MPI_Status st;
        int rc, cls;

        RT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        memset(buf, 0xEE, len);
        rc = MPI_Recv(buf, (int)half, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &st);
        RT_CHECK(rc != MPI_SUCCESS, "truncated receive of %zu into %zu succeeded", len, half);
        RT_MPI(MPI_Error_class(rc, &cls));
        RT_CHECK(cls == MPI_ERR_TRUNCATE,
                 "truncation gave error class %d, expected "
                 "MPI_ERR_TRUNCATE (%d)",
                 cls, MPI_ERR_TRUNCATE);
        RT_CHECK(buf[half] == 0xEE, "wrote past the receive count");
        RT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
        free(buf);
    } else if (g_rank == 1) {
        void *buf = make_msg(TAG, len);
        RT_MPI(MPI_Send(buf, (int)len, MPI_BYTE, 0, TAG, MPI_COMM_WORLD));
        free(buf);
    }
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    RT_STEP("truncation of %zu bytes is MPI_ERR_TRUNCATE", len);
}

int main(int argc, char **argv)
{
    rt_mpi_init(&argc, &argv);

    test_any_source_any_tag(SMALL, 0);
    test_any_source_any_tag(SMALL, 1);
    test_any_source_any_tag(LARGE, 0);
    test_any_source_any_tag(LARGE, 1);
    test_probe(SMALL);
    test_probe(LARGE);
    test_mprobe(SMALL, LARGE);
    test_mprobe(LARGE, SMALL);
    test_ssend(SMALL);
    test_ssend(LARGE);
    test_cancel_recv(SMALL, 0);
    test_cancel_recv(LARGE, 1);
    test_truncate(100);
    test_truncate(LARGE);

    rt_mpi_finish("mpi_match");
    return 0;
}
