/*
 * Derived datatypes through point-to-point and a collective: vector,
 * indexed and struct, small (eager) and large (rendezvous), sent as the
 * derived type and received contiguous, and the other way round. Runtimes
 * hand non-contiguous types to UCP as generic datatypes (pack/unpack
 * callbacks), so this checks that those run at every offset and that bytes
 * outside the type map are left alone.
 */
#include "rt_mpi.h"

enum { TAG = 11 };

/* Value of element i of the source array of rank r. */
static int ival(int r, int i)
{
    return r * 1000003 + i * 7 + 1;
}

/* Sends 'count' elements of 'type' from src to rank 0 of each pair (rank
 * r+1 sends to rank r, for even r), checked by the caller. */
static void exchange(void *sbuf, MPI_Datatype stype, int scount, void *rbuf, MPI_Datatype rtype,
                     int rcount, int blocking)
{
    MPI_Request req;
    MPI_Status st;

    if (g_rank % 2 == 1) {
        if (blocking) {
            RT_MPI(MPI_Send(sbuf, scount, stype, g_rank - 1, TAG, MPI_COMM_WORLD));
        } else {
            RT_MPI(MPI_Isend(sbuf, scount, stype, g_rank - 1, TAG, MPI_COMM_WORLD, &req));
            RT_MPI(MPI_Wait(&req, &st));
        }
    } else if (g_rank + 1 < g_size) {
        if (blocking) {
            RT_MPI(MPI_Recv(rbuf, rcount, rtype, g_rank + 1, TAG, MPI_COMM_WORLD, &st));
        } else {
            RT_MPI(MPI_Irecv(rbuf, rcount, rtype, g_rank + 1, TAG, MPI_COMM_WORLD, &req));
            RT_MPI(MPI_Wait(&req, &st));
        }
    }
}

static int is_receiver(void)
{
    return (g_rank % 2 == 0) && (g_rank + 1 < g_size);
}

/* Vector of ints: blocks of 'blk' every 'stride' elements. */
static void test_vector(int count, int blk, int stride, int blocking)
{
    int n_strided = count * stride, n_packed = count * blk;
    int *strided = rt_malloc(sizeof(int) * (size_t)n_strided);
    int *packed  = rt_malloc(sizeof(int) * (size_t)n_packed);
    int peer     = g_rank + 1, i, j;
    MPI_Datatype vec;

    RT_MPI(MPI_Type_vector(count, blk, stride, MPI_INT, &vec));
    RT_MPI(MPI_Type_commit(&vec));

    /* vector -> contiguous */
    for (i = 0; i < n_strided; ++i) {
        strided[i] = ival(g_rank, i);
    }
    memset(packed, 0, sizeof(int) * (size_t)n_packed);
    exchange(strided, vec, 1, packed, MPI_INT, n_packed, blocking);
    if (is_receiver()) {
        for (i = 0; i < count; ++i) {
            for (j = 0; j < blk; ++j) {
                RT_CHECK(packed[i * blk + j] == ival(peer, i * stride + j),
                         "vector->contig: block %d element %d is %d", i, j, packed[i * blk + j]);
            }
        }
    }

    /* contiguous -> vector: the gaps between blocks must stay untouched */
    for (i = 0; i < n_packed; ++i) {
        packed[i] = ival(g_rank, i);
    }
    for (i = 0; i < n_strided; ++i) {
        strided[i] = -1;
    }
    exchange(packed, MPI_INT, n_packed, strided, vec, 1, blocking);
    if (is_receiver()) {
        for (i = 0; i < count; ++i) {
            for (j = 0; j < stride; ++j) {
                int want = (j < blk) ? ival(peer, i * blk + j) : -1;
                RT_CHECK(strided[i * stride + j] == want,
                         "contig->vector: block %d slot %d is %d, expected %d", i, j,
                         strided[i * stride + j], want);
            }
        }
    }
    RT_MPI(MPI_Type_free(&vec));
    free(strided);
    free(packed);
    RT_STEP("vector %dx%d stride %d (%zu bytes), %s", count, blk, stride,
            (size_t)n_packed * sizeof(int), blocking ? "blocking" : "non-blocking");
}

/* Indexed: irregular block lengths and displacements, 'reps' copies of the
 * type back to back (count > 1 exercises the extent). */
static void test_indexed(int nblocks, int reps)
{
    int *lens  = rt_malloc(sizeof(int) * (size_t)nblocks);
    int *disps = rt_malloc(sizeof(int) * (size_t)nblocks);
    int *src, *dst, extent_elems, total = 0, i, b, r, k;
    MPI_Datatype idx;
    MPI_Aint lb, extent;

    for (b = 0, k = 0; b < nblocks; ++b) {
        lens[b]  = 1 + (b * 5) % 13;
        disps[b] = k + (b % 3); /* gaps of 0..2 elements */
        k        = disps[b] + lens[b];
        total += lens[b];
    }
    extent_elems = k;
    RT_MPI(MPI_Type_indexed(nblocks, lens, disps, MPI_INT, &idx));
    RT_MPI(MPI_Type_commit(&idx));
    RT_MPI(MPI_Type_get_extent(idx, &lb, &extent));
    RT_CHECK(extent == (MPI_Aint)(extent_elems * sizeof(int)), "indexed extent %ld", (long)extent);

    src = rt_malloc(sizeof(int) * (size_t)extent_elems * (size_t)reps);
    dst = rt_malloc(sizeof(int) * (size_t)extent_elems * (size_t)reps);
    for (i = 0; i < extent_elems * reps; ++i) {
        src[i] = ival(g_rank, i);
        dst[i] = -1;
    }
    /* indexed on both sides */
    exchange(src, idx, reps, dst, idx, reps, 0);
    if (is_receiver()) {
        for (r = 0; r < reps; ++r) {
            int *row = dst + r * extent_elems, in_block = 0;
            for (i = 0, b = 0; i < extent_elems; ++i) {
                int want;
                while (b < nblocks && i >= disps[b] + lens[b]) {
                    ++b;
                }
                in_block = (b < nblocks) && (i >= disps[b]);
                want     = in_block ? ival(g_rank + 1, r * extent_elems + i) : -1;
                RT_CHECK(row[i] == want, "indexed: copy %d element %d is %d, expected %d", r, i,
                         row[i], want);
            }
        }
    }
    RT_MPI(MPI_Type_free(&idx));
    free(lens);
    free(disps);
    free(src);
    free(dst);
    RT_STEP("indexed, %d blocks x %d copies (%zu bytes)", nblocks, reps,
            (size_t)total * (size_t)reps * sizeof(int));
}

/* A struct with holes: the padding is not in the type map and must not be
 * written by the receive. */
struct particle {
    int id;
    double pos[3];
    char tag[3];
    /* padding up to the alignment of double */
    long charge;
};

static void test_struct(int count)
{
    struct particle *src  = rt_malloc(sizeof(*src) * (size_t)count);
    struct particle *dst  = rt_malloc(sizeof(*dst) * (size_t)count);
    int lens[4]           = {1, 3, 3, 1};
    MPI_Aint disps[4]     = {offsetof(struct particle, id), offsetof(struct particle, pos),
                             offsetof(struct particle, tag), offsetof(struct particle, charge)};
    MPI_Datatype types[4] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_LONG};
    MPI_Datatype raw, type;
    int i, blocking;

    RT_MPI(MPI_Type_create_struct(4, lens, disps, types, &raw));
    RT_MPI(MPI_Type_create_resized(raw, 0, sizeof(struct particle), &type));
    RT_MPI(MPI_Type_commit(&type));

    for (blocking = 0; blocking < 2; ++blocking) {
        memset(src, 0x11, sizeof(*src) * (size_t)count);
        for (i = 0; i < count; ++i) {
            src[i].id     = ival(g_rank, i);
            src[i].pos[0] = i * 0.5;
            src[i].pos[1] = -i;
            src[i].pos[2] = g_rank + 0.25;
            src[i].tag[0] = (char)('a' + i % 26);
            src[i].tag[1] = (char)('A' + g_rank);
            src[i].tag[2] = (char)i;
            src[i].charge = (long)i * 31 - g_rank;
        }
        memset(dst, 0xEE, sizeof(*dst) * (size_t)count);
        exchange(src, type, count, dst, type, count, blocking);
        if (!is_receiver()) {
            continue;
        }
        for (i = 0; i < count; ++i) {
            const struct particle *p   = &dst[i];
            const unsigned char *bytes = (const unsigned char *)p;
            size_t hole_a              = offsetof(struct particle, id) + sizeof(int);
            size_t hole_b              = offsetof(struct particle, tag) + 3;

            RT_CHECK(p->id == ival(g_rank + 1, i), "struct %d: id %d", i, p->id);
            RT_CHECK(p->pos[0] == i * 0.5 && p->pos[1] == -i && p->pos[2] == g_rank + 1 + 0.25,
                     "struct %d: pos wrong", i);
            RT_CHECK(p->tag[0] == (char)('a' + i % 26) && p->tag[1] == (char)('A' + g_rank + 1) &&
                         p->tag[2] == (char)i,
                     "struct %d: tag wrong", i);
            RT_CHECK(p->charge == (long)i * 31 - (g_rank + 1), "struct %d: charge %ld", i,
                     p->charge);
            for (; hole_a < offsetof(struct particle, pos); ++hole_a) {
                RT_CHECK(bytes[hole_a] == 0xEE, "struct %d: padding after id written", i);
            }
            for (; hole_b < offsetof(struct particle, charge); ++hole_b) {
                RT_CHECK(bytes[hole_b] == 0xEE, "struct %d: padding after tag written", i);
            }
        }
    }
    RT_MPI(MPI_Type_free(&raw));
    RT_MPI(MPI_Type_free(&type));
    free(src);
    free(dst);
    RT_STEP("struct with holes, %d elements", count);
}

/* A collective with a derived type: broadcast of a vector from each root. */
static void test_bcast_vector(int count)
{
    int *buf = rt_malloc(sizeof(int) * 2 * (size_t)count);
    MPI_Datatype vec;
    int root, i;

    RT_MPI(MPI_Type_vector(count, 1, 2, MPI_INT, &vec));
    RT_MPI(MPI_Type_commit(&vec));
    for (root = 0; root < g_size; ++root) {
        for (i = 0; i < 2 * count; ++i) {
            buf[i] = (g_rank == root) ? ival(root, i) : -1;
        }
        RT_MPI(MPI_Bcast(buf, 1, vec, root, MPI_COMM_WORLD));
        for (i = 0; i < 2 * count; ++i) {
            int want = (i % 2 == 0 || g_rank == root) ? ival(root, i) : -1;
            RT_CHECK(buf[i] == want, "Bcast vector from %d: element %d is %d", root, i, buf[i]);
        }
    }
    RT_MPI(MPI_Type_free(&vec));
    free(buf);
    RT_STEP("Bcast of a vector, %d elements", count);
}

int main(int argc, char **argv)
{
    rt_mpi_init(&argc, &argv);

    test_vector(10, 3, 7, 1); /* 120 bytes: eager */
    test_vector(10, 3, 7, 0);
    test_vector(40000, 2, 5, 1); /* 320 KB: rendezvous */
    test_vector(40000, 2, 5, 0);
    test_vector(3, 200000, 200001, 1); /* few huge blocks: 2.4 MB */
    test_indexed(17, 1);
    test_indexed(500, 40); /* ~ 600 KB */
    test_struct(7);
    test_struct(20000); /* ~ 880 KB of type map data */
    test_bcast_vector(100);
    test_bcast_vector(200000);

    rt_mpi_finish("mpi_datatypes");
    return 0;
}
