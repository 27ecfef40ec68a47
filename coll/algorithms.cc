/*
 * The schedules of the collectives. Ranks are often taken relative to the
 * root (v = rank - root mod size) so that trees hang from it. Every rank of
 * a team builds the same number of rounds for a collective, empty ones
 * included, because messages are named by their round.
 *
 * Reductions keep operand order: the lower ranks' partial result is `lo`
 * (reduce.h), so both partners of an exchange compute the same bits.
 */
#include "algorithms.h"

#include <algorithm>
#include <cstring>

namespace coll {

namespace {

unsigned ceil_log2(unsigned n)
{
    unsigned k = 0;
    while ((1u << k) < n) {
        ++k;
    }
    return k;
}

/* count elements cut into n nearly equal blocks (the last ones may be short
 * or empty): block i is elements [offset(i), offset(i) + length(i)). */
struct blocks {
    size_t count;
    size_t per;

    blocks(size_t count_, unsigned n) : count(count_), per((count_ + n - 1) / n) {}
    size_t offset(unsigned i) const { return std::min(size_t(i) * per, count); }
    size_t length(unsigned i) const { return std::min(per, count - offset(i)); }
};

/* The segments of a pipelined algorithm: blocks of the segment size
 * (UCX_COLL_PIPELINE_SEGMENT, at least one element), the last one short;
 * at most 2^30 of them, as rounds are numbered in 32 bits. */
struct segments : blocks {
    unsigned n;

    explicit segments(const call &c) : blocks(c.args.count, 1)
    {
        constexpr size_t most = size_t(1) << 30;
        per = std::max({size_t(1), c.segment / c.esize, (count + most - 1) / most});
        n   = unsigned((count + per - 1) / per);
    }
};

/* A pipeline along a chain of n ranks: the rank at position `pos` (0 is
 * the chain's head) receives segment s from pos - 1 in round s + pos - 1
 * and passes it to pos + 1 in round s + pos: nseg + n - 2 rounds. The
 * rounds do not wait for their sends (schedule.h), so the head posts all
 * its segments at once and every other rank moves on as soon as a segment
 * came: segments are in flight on every link at once, and a rank passes
 * on segment s while s + 1 comes in. The buffers sent from must not change
 * until the collective ends. each_round(rd, in, out) adds the round's
 * receive of segment `in` and send of segment `out` (-1: none). */
template <typename F>
void chain_pipeline(task &t, unsigned n, unsigned pos, unsigned nseg, F &&each_round)
{
    if ((n < 2) || (nseg == 0)) {
        return;
    }
    auto segment = [nseg](int64_t s) { return ((s >= 0) && (s < nseg)) ? s : -1; };
    for (int64_t r = 0; r < int64_t(nseg) + n - 2; ++r) {
        round &rd         = t.add_round();
        rd.detached_sends = true;
        each_round(rd, (pos > 0) ? segment(r + 1 - pos) : -1,
                   (pos + 1 < n) ? segment(r - pos) : -1);
    }
}

uint8_t *at(const void *base, size_t bytes)
{
    return static_cast<uint8_t *>(const_cast<void *>(base)) + bytes;
}

/* A rank relative to the root, and back. */
struct rooted {
    unsigned n, root;
    unsigned rel(unsigned rank) const { return (rank + n - root) % n; }
    unsigned real(unsigned v) const { return (v + root) % n; }
};

/* ---- barrier ------------------------------------------------------------ */

/* Dissemination: in round k every rank tells rank + 2^k and hears from
 * rank - 2^k; after ceil(log2 n) rounds each has heard from all. */
void barrier_dissemination(task &t, const call &c)
{
    for (unsigned dist = 1; dist < c.size; dist <<= 1) {
        round &rd = t.add_round();
        t.send(rd, (c.rank + dist) % c.size, nullptr, 0);
        t.recv(rd, (c.rank + c.size - dist) % c.size, nullptr, 0);
    }
}

/* Radix-k dissemination: in the round of distance d (1, k, k^2, ...) every
 * rank tells rank + j d and hears from rank - j d (0 < j < k, j d < n, so
 * no peer twice); having heard from the k^i ranks behind each of those, it
 * has heard from k^(i+1) after the round: ceil(log_k n) rounds. */
void barrier_knomial(task &t, const call &c)
{
    for (uint64_t d = 1; d < c.size; d *= c.radix) {
        round &rd = t.add_round();
        for (uint64_t j = 1; (j < c.radix) && (j * d < c.size); ++j) {
            const unsigned dist = unsigned(j * d);
            t.send(rd, (c.rank + dist) % c.size, nullptr, 0);
            t.recv(rd, (c.rank + c.size - dist) % c.size, nullptr, 0);
        }
    }
}

/* ---- bcast -------------------------------------------------------------- */

/* Binomial tree: in the round of mask m, ranks below m send to v + m. */
void bcast_binomial(task &t, const call &c)
{
    const rooted rt{c.size, c.args.root};
    const unsigned v   = rt.rel(c.rank);
    const size_t bytes = c.args.count * c.esize;
    for (unsigned mask = 1; mask < c.size; mask <<= 1) {
        round &rd = t.add_round();
        if ((v < mask) && (v + mask < c.size)) {
            t.send(rd, rt.real(v + mask), c.args.rbuf, bytes);
        } else if ((v >= mask) && (v < 2 * mask)) {
            t.recv(rd, rt.real(v - mask), c.args.rbuf, bytes);
        }
    }
}

/* Knomial tree: in the round of distance d (1, k, k^2, ...; k is the radix,
 * UCX_COLL_KNOMIAL_RADIX), the ranks below d that have the message send it
 * to v + j d (0 < j < k); a rank in [d, k d) hears from v mod d. log_k(n)
 * rounds instead of log2(n), each root sending up to k - 1 messages at once. */
void bcast_knomial(task &t, const call &c)
{
    const rooted rt{c.size, c.args.root};
    const unsigned v   = rt.rel(c.rank);
    const size_t bytes = c.args.count * c.esize;
    for (uint64_t d = 1; d < c.size; d *= c.radix) {
        round &rd = t.add_round();
        if (v < d) {
            for (uint64_t j = 1; (j < c.radix) && (v + j * d < c.size); ++j) {
                t.send(rd, rt.real(unsigned(v + j * d)), c.args.rbuf, bytes);
            }
        } else if (v < c.radix * d) {
            t.recv(rd, rt.real(unsigned(v % d)), c.args.rbuf, bytes);
        }
    }
}

/* Van de Geijn: a binomial scatter of n blocks, then a ring allgather of
 * them: about 2x the message on every link instead of log2(n)x. */
void bcast_scatter_allgather(task &t, const call &c)
{
    const unsigned n = c.size;
    const rooted rt{n, c.args.root};
    const unsigned v = rt.rel(c.rank);
    const blocks b(c.args.count, n);
    const size_t es = c.esize;
    void *buf       = c.args.rbuf;
    for (unsigned k = ceil_log2(n); k-- > 0;) {
        const unsigned mask = 1u << k;
        round &rd           = t.add_round();
        if ((v % (2 * mask) == 0) && (v + mask < n)) {
            const unsigned lo = v + mask, hi = std::min(v + 2 * mask, n);
            t.send(rd, rt.real(lo), at(buf, b.offset(lo) * es),
                   (b.offset(hi - 1) + b.length(hi - 1) - b.offset(lo)) * es);
        } else if (v % (2 * mask) == mask) {
            const unsigned hi = std::min(v + mask, n);
            t.recv(rd, rt.real(v - mask), at(buf, b.offset(v) * es),
                   (b.offset(hi - 1) + b.length(hi - 1) - b.offset(v)) * es);
        }
    }
    const unsigned right = rt.real((v + 1) % n), left = rt.real((v + n - 1) % n);
    for (unsigned s = 0; s + 1 < n; ++s) {
        round &rd         = t.add_round();
        const unsigned sb = (v + n - s) % n, rb = (v + 2 * n - s - 1) % n;
        t.send(rd, right, at(buf, b.offset(sb) * es), b.length(sb) * es);
        t.recv(rd, left, at(buf, b.offset(rb) * es), b.length(rb) * es);
    }
}

/* Pipelined chain (Open MPI's "pipeline"): the segments move down the
 * chain root, root + 1, ... (chain_pipeline), received straight into the
 * buffer and passed on from there. */
void bcast_pipeline(task &t, const call &c)
{
    const rooted rt{c.size, c.args.root};
    const unsigned v = rt.rel(c.rank);
    const segments seg(c);
    const size_t es = c.esize;
    uint8_t *buf    = static_cast<uint8_t *>(c.args.rbuf);
    chain_pipeline(t, c.size, v, seg.n, [&](round &rd, int64_t in, int64_t out) {
        if (in >= 0) {
            t.recv(rd, rt.real(v - 1), buf + seg.offset(unsigned(in)) * es,
                   seg.length(unsigned(in)) * es);
        }
        if (out >= 0) {
            t.send(rd, rt.real(v + 1), buf + seg.offset(unsigned(out)) * es,
                   seg.length(unsigned(out)) * es);
        }
    });
}

/* ---- reduce ------------------------------------------------------------- */

/* Pipelined chain toward the root: the last rank (relative to the root)
 * heads the chain; every other rank adds its input to each segment's
 * partial, as the lower operand, and passes it on, so the root gets
 * x0 op (x1 op (... op x(n-1))) per element, in ranks relative to it. A
 * partial comes into its place in a scratch copy of the message and is
 * reduced there in the round it came; it leaves from there in the next
 * round (the send is not waited for, so the place is not reused). The
 * root takes each partial into one segment of scratch and reduces it into
 * its output. */
void reduce_pipeline(task &t, const call &c)
{
    const unsigned n = c.size;
    const rooted rt{n, c.args.root};
    const unsigned v = rt.rel(c.rank);
    const segments seg(c);
    const size_t es = c.esize;
    const bool root = (v == 0), head = (v + 1 == n);
    const uint8_t *input = static_cast<const uint8_t *>((root && c.in_place) ? c.args.rbuf :
                                                                               c.args.sbuf);
    uint8_t *out         = static_cast<uint8_t *>(c.args.rbuf);
    if (n == 1) {
        if (input != out) {
            std::memcpy(out, input, c.args.count * es);
        }
        return;
    }
    uint8_t *partials = head ? nullptr : t.make_scratch(root ? seg.per * es : c.args.count * es);
    auto offset       = [&](int64_t s) { return seg.offset(unsigned(s)) * es; };
    auto slot         = [&](int64_t s) { return root ? partials : partials + offset(s); };
    chain_pipeline(t, n, n - 1 - v, seg.n, [&](round &rd, int64_t in, int64_t fwd) {
        if (fwd >= 0) {
            t.send(rd, rt.real(v - 1), head ? input + offset(fwd) : slot(fwd),
                   seg.length(unsigned(fwd)) * es);
        }
        if (in >= 0) {
            const size_t length = seg.length(unsigned(in));
            t.recv(rd, rt.real(v + 1), slot(in), length * es);
            rd.after = step::reduce(c.reduce, root ? out + offset(in) : slot(in),
                                    input + offset(in), slot(in), length);
        }
    });
}

/* Binomial tree toward the root: in the round of mask m a rank with bit m
 * sends its partial result to v - m and is done; the others take v + m's. */
void reduce_binomial(task &t, const call &c)
{
    const rooted rt{c.size, c.args.root};
    const unsigned v   = rt.rel(c.rank);
    const size_t count = c.args.count, bytes = count * c.esize;
    const bool root         = (v == 0);
    const bool has_children = (c.size > 1) && ((v & 1) == 0) && (v + 1 < c.size);
    uint8_t *scratch        = t.make_scratch((has_children && !root) ? 2 * bytes : bytes);
    uint8_t *tmp            = scratch;
    const void *input       = (root && c.in_place) ? c.args.rbuf : c.args.sbuf;
    void *acc               = root ? c.args.rbuf : (has_children ? scratch + bytes : nullptr);
    if ((acc != nullptr) && (acc != input)) {
        std::memcpy(acc, input, bytes);
    }
    const reduce_fn fn = c.reduce;
    for (unsigned mask = 1; mask < c.size; mask <<= 1) {
        round &rd = t.add_round();
        if (v & mask) {
            t.send(rd, rt.real(v - mask), has_children ? acc : input, bytes);
            break;
        }
        if (v + mask < c.size) {
            t.recv(rd, rt.real(v + mask), tmp, bytes);
            rd.after = step::reduce(fn, acc, acc, tmp, count);
        }
    }
}

/* Knomial tree toward the root, the mirror of bcast_knomial: in the round
 * of distance d a rank whose base-k digit at d is j > 0 sends its partial
 * result to v - j d and is done; one whose digit is 0 takes its children's
 * (v + j d) at once, then adds them in rank order, one per round (rounds
 * that carry only a reduction, on every rank still in the tree, so that
 * rounds keep the same numbers everywhere). */
void reduce_knomial(task &t, const call &c)
{
    const unsigned k = c.radix;
    const rooted rt{c.size, c.args.root};
    const unsigned v   = rt.rel(c.rank);
    const size_t count = c.args.count, bytes = count * c.esize;
    const bool root         = (v == 0);
    const bool has_children = (c.size > 1) && ((v % k) == 0) && (v + 1 < c.size);
    /* k - 1 children's partials, and the accumulator of an inner rank. */
    uint8_t *tmp      = t.make_scratch((k - 1 + ((has_children && !root) ? 1 : 0)) * bytes);
    const void *input = (root && c.in_place) ? c.args.rbuf : c.args.sbuf;
    void *acc         = root ? c.args.rbuf : (has_children ? tmp + (k - 1) * bytes : nullptr);
    if ((acc != nullptr) && (acc != input)) {
        std::memcpy(acc, input, bytes);
    }
    const reduce_fn fn = c.reduce;
    for (uint64_t d = 1; d < c.size; d *= k) {
        round &rd            = t.add_round();
        const unsigned digit = unsigned((v / d) % k);
        if (digit != 0) {
            t.send(rd, rt.real(unsigned(v - digit * d)), has_children ? acc : input, bytes);
            break;
        }
        unsigned children = 0;
        while ((children + 1 < k) && (v + (children + 1) * d < c.size)) {
            ++children;
            t.recv(rd, rt.real(unsigned(v + children * d)), tmp + (children - 1) * bytes, bytes);
        }
        if (children > 0) {
            rd.after = step::reduce(fn, acc, acc, tmp, count);
        }
        for (unsigned j = 2; j < k; ++j) {
            round &sr = t.add_round();
            if (j <= children) {
                sr.after = step::reduce(fn, acc, acc, tmp + (j - 1) * bytes, count);
            }
        }
    }
}

/* ---- allreduce ---------------------------------------------------------- */

/* The fold of recursive doubling, Rabenseifner and the knomial allreduce
 * onto p of the n ranks (p >= n / 2; the largest power of two p <= n for
 * the first two): the first 2(n - p) ranks pair up (even into odd) before,
 * and the odd ones hand the result back after; the others and the odd ones
 * take part as ranks 0..p-1, in the order of their ranks (libfabric's coll
 * provider does the same). */
struct fold {
    unsigned p;
    unsigned rem;
    int nr; /* the rank among p; -1: an even rank of the pairs */

    fold(unsigned n, unsigned r) : fold(n, r, largest_power_of_two(n)) {}

    fold(unsigned n, unsigned r, unsigned p_) :
        p(p_), rem(n - p_), nr((r < 2 * rem) ? ((r & 1) ? int(r / 2) : -1) : int(r - rem))
    {
    }

    static unsigned largest_power_of_two(unsigned n)
    {
        unsigned p = 1;
        while (p * 2 <= n) {
            p *= 2;
        }
        return p;
    }

    unsigned real(unsigned x) const { return (x < rem) ? 2 * x + 1 : x + rem; }

    /* The first round: an even rank sends `input`, the odd one reduces it
     * with its own into acc. True when this rank wrote acc. */
    bool add_fold_round(task &t, const call &c, unsigned r, const void *input, void *acc,
                        uint8_t *tmp) const
    {
        if (rem == 0) {
            return false;
        }
        const size_t bytes = c.args.count * c.esize;
        round &rd          = t.add_round();
        if (r >= 2 * rem) {
            return false;
        }
        if ((r & 1) == 0) {
            t.send(rd, r + 1, input, bytes);
            return false;
        }
        t.recv(rd, r - 1, tmp, bytes);
        rd.after = step::reduce(c.reduce, acc, tmp, input, c.args.count);
        return true;
    }

    /* The last round: the odd ranks of the pairs hand acc to the even. */
    void add_unfold_round(task &t, const call &c, unsigned r, void *acc) const
    {
        if (rem == 0) {
            return;
        }
        const size_t bytes = c.args.count * c.esize;
        round &rd          = t.add_round();
        if (r < 2 * rem) {
            if (r & 1) {
                t.send(rd, r - 1, acc, bytes);
            } else {
                t.recv(rd, r + 1, acc, bytes);
            }
        }
    }
};

/* Recursive doubling over the largest power of two p <= n; the first
 * 2(n - p) ranks fold in pairs first (even into odd) and get the result
 * back at the end (libfabric's coll provider does the same). */
void allreduce_recursive_doubling(task &t, const call &c)
{
    const unsigned r   = c.rank;
    const size_t count = c.args.count, bytes = count * c.esize;
    void *acc = c.args.rbuf;
    if (!c.in_place) {
        std::memcpy(acc, c.args.sbuf, bytes);
    }
    uint8_t *tmp       = t.make_scratch(bytes);
    const reduce_fn fn = c.reduce;
    const fold f(c.size, r);
    f.add_fold_round(t, c, r, acc, acc, tmp);
    for (unsigned mask = 1; mask < f.p; mask <<= 1) {
        round &rd = t.add_round();
        if (f.nr < 0) {
            continue;
        }
        const unsigned partner = unsigned(f.nr) ^ mask;
        t.send(rd, f.real(partner), acc, bytes);
        t.recv(rd, f.real(partner), tmp, bytes);
        rd.after = (partner < unsigned(f.nr)) ? step::reduce(fn, acc, tmp, acc, count) :
                                                step::reduce(fn, acc, acc, tmp, count);
    }
    f.add_unfold_round(t, c, r, acc);
}

/* Recursive k-ing (UCC's knomial allreduce): of p = m k^i ranks (k^i the
 * largest power of the radix k <= n, m = n / k^i < k), every rank
 * exchanges its partial result with the k - 1 others that differ from it
 * in one base-k digit, for i rounds, then with the m - 1 that differ in
 * the top digit (radix m); the other n - p < k^i ranks fold into the first
 * ones before and get the result back after. log_k(p) rounds (rounded up)
 * of k - 1 whole messages, instead of log2(p) of one. All members of a
 * group add the same partials in rank order, so every rank gets the same
 * bits. */
void allreduce_knomial(task &t, const call &c)
{
    const unsigned r = c.rank, k = c.radix;
    const size_t count = c.args.count, bytes = count * c.esize;
    void *acc = c.args.rbuf;
    if (!c.in_place) {
        std::memcpy(acc, c.args.sbuf, bytes);
    }
    unsigned top = 1;
    while (uint64_t(top) * k <= c.size) {
        top *= k;
    }
    /* The partials of the k - 1 peers of a round, in their order. */
    uint8_t *tmp       = t.make_scratch((k - 1) * bytes);
    const reduce_fn fn = c.reduce;
    const fold f(c.size, r, (c.size / top) * top);
    f.add_fold_round(t, c, r, acc, acc, tmp);
    unsigned q; /* the size of a round's groups: k, then m at the top */
    for (unsigned d = 1; d < f.p; d *= q) {
        q         = std::min(k, f.p / d);
        round &rd = t.add_round();
        if (f.nr < 0) {
            /* Not in the exchange: its rounds (q - 1 of them), empty. */
            for (unsigned j = 2; j < q; ++j) {
                t.add_round();
            }
            continue;
        }
        const unsigned nr = unsigned(f.nr), digit = (nr / d) % q, base = nr - digit * d;
        auto partial = [&](unsigned j) -> uint8_t * {
            return (j == digit) ? static_cast<uint8_t *>(acc) : tmp + (j - (j > digit)) * bytes;
        };
        for (unsigned j = 0; j < q; ++j) {
            if (j != digit) {
                t.send(rd, f.real(base + j * d), acc, bytes);
                t.recv(rd, f.real(base + j * d), partial(j), bytes);
            }
        }
        /* acc = P0 op P1 op ... op P(q-1), left to right, one reduction per
         * round (the rounds after the first carry only a reduction); the
         * sum of the peers below this rank gathers in tmp's first slot. */
        const void *sum = partial(0);
        for (unsigned j = 1; j < q; ++j) {
            round &sr = (j == 1) ? rd : t.add_round();
            void *dst = (j < digit) ? partial(0) : acc;
            sr.after  = step::reduce(fn, dst, sum, partial(j), count);
            sum       = dst;
        }
    }
    f.add_unfold_round(t, c, r, acc);
}

/* Rabenseifner: the fold of recursive doubling, then a reduce-scatter by
 * recursive halving and an allgather by recursive doubling among the
 * largest power of two p of ranks: 2 log2(p) rounds that each move half the
 * data of the one before, so about twice the message in all, in fewer
 * rounds than a ring. Each block is reduced along one tree and then copied
 * to all, so every rank gets the same bits. */
void allreduce_rabenseifner(task &t, const call &c)
{
    const unsigned r   = c.rank;
    const size_t count = c.args.count, es = c.esize, bytes = count * es;
    uint8_t *acc = static_cast<uint8_t *>(c.args.rbuf);
    /* The input is read where it is: the first reduction writes acc, so no
     * copy of the whole message into acc first (a quarter of the time of a
     * 1 MiB allreduce on two ranks). */
    const uint8_t *input = c.in_place ? acc : static_cast<const uint8_t *>(c.args.sbuf);
    uint8_t *tmp         = t.make_scratch(bytes);
    const reduce_fn fn   = c.reduce;
    const fold f(c.size, r);
    if ((c.size == 1) && (input != acc)) {
        std::memcpy(acc, input, bytes); /* one rank: nothing to reduce with */
    }
    /* Where this rank's partial result is. */
    const uint8_t *cur = f.add_fold_round(t, c, r, input, acc, tmp) ? acc : input;
    const int nr       = f.nr;
    const unsigned p2  = f.p;
    auto real          = [&f](unsigned x) { return f.real(x); };
    const blocks b(count, p2);
    auto offset_of   = [&](unsigned lo) { return b.offset(lo) * es; };
    auto range_bytes = [&](unsigned lo, unsigned hi) { return (b.offset(hi) - b.offset(lo)) * es; };
    /* Reduce-scatter: halve the range held, keeping the half of our bit;
     * the kept half's result goes to acc, read from cur. */
    unsigned lo = 0, hi = p2;
    for (unsigned mask = p2 / 2; mask >= 1; mask /= 2) {
        round &rd = t.add_round();
        if (nr < 0) {
            continue;
        }
        const unsigned partner = unsigned(nr) ^ mask;
        const unsigned mid     = lo + (hi - lo) / 2;
        const bool keep_low    = (unsigned(nr) & mask) == 0;
        const unsigned klo = keep_low ? lo : mid, khi = keep_low ? mid : hi;
        const unsigned slo = keep_low ? mid : lo, shi = keep_low ? hi : mid;
        t.send(rd, real(partner), cur + offset_of(slo), range_bytes(slo, shi));
        t.recv(rd, real(partner), tmp, range_bytes(klo, khi));
        uint8_t *kept       = acc + offset_of(klo);
        const uint8_t *mine = cur + offset_of(klo);
        const size_t kcount = b.offset(khi) - b.offset(klo);
        rd.after            = (partner < unsigned(nr)) ? step::reduce(fn, kept, tmp, mine, kcount) :
                                                         step::reduce(fn, kept, mine, tmp, kcount);
        cur                 = acc;
        lo                  = klo;
        hi                  = khi;
    }
    /* Allgather: double the range held, the partner's half straight into acc. */
    for (unsigned mask = 1; mask < p2; mask *= 2) {
        round &rd = t.add_round();
        if (nr < 0) {
            continue;
        }
        const unsigned partner = unsigned(nr) ^ mask;
        const unsigned base = unsigned(nr) & ~(mask - 1), pbase = partner & ~(mask - 1);
        t.send(rd, real(partner), acc + offset_of(base), range_bytes(base, base + mask));
        t.recv(rd, real(partner), acc + offset_of(pbase), range_bytes(pbase, pbase + mask));
    }
    f.add_unfold_round(t, c, r, acc);
}

/* The ring reduce-scatter over `work` (n blocks of b): after it, rank r
 * holds block (r + shift) mod n fully reduced. Each block is reduced once,
 * along the ring, so every rank ends up with the same bits. */
void ring_reduce_scatter(task &t, const call &c, uint8_t *work, const blocks &b, unsigned shift,
                         uint8_t *tmp)
{
    const unsigned n = c.size, r = c.rank;
    const unsigned right = (r + 1) % n, left = (r + n - 1) % n;
    const size_t es    = c.esize;
    const reduce_fn fn = c.reduce;
    for (unsigned s = 0; s + 1 < n; ++s) {
        round &rd         = t.add_round();
        const unsigned sb = (r + shift + 2 * n - s - 1) % n;
        const unsigned rb = (r + shift + 2 * n - s - 2) % n;
        t.send(rd, right, work + b.offset(sb) * es, b.length(sb) * es);
        t.recv(rd, left, tmp, b.length(rb) * es);
        uint8_t *dst = work + b.offset(rb) * es;
        rd.after     = step::reduce(fn, dst, tmp, dst, b.length(rb));
    }
}

/* The ring allgather of n blocks when rank r holds block (r + shift). */
void ring_allgather(task &t, const call &c, uint8_t *buf, const blocks &b, unsigned shift)
{
    const unsigned n = c.size, r = c.rank;
    const unsigned right = (r + 1) % n, left = (r + n - 1) % n;
    const size_t es = c.esize;
    for (unsigned s = 0; s + 1 < n; ++s) {
        round &rd         = t.add_round();
        const unsigned sb = (r + shift + n - s) % n, rb = (r + shift + 2 * n - s - 1) % n;
        t.send(rd, right, buf + b.offset(sb) * es, b.length(sb) * es);
        t.recv(rd, left, buf + b.offset(rb) * es, b.length(rb) * es);
    }
}

/* Reduce-scatter then allgather on a ring: each rank sends 2(n-1)/n of the
 * message instead of log2(n) whole ones. */
void allreduce_ring(task &t, const call &c)
{
    const size_t count = c.args.count;
    uint8_t *acc       = static_cast<uint8_t *>(c.args.rbuf);
    if (!c.in_place) {
        std::memcpy(acc, c.args.sbuf, count * c.esize);
    }
    const blocks b(count, c.size);
    uint8_t *tmp = t.make_scratch(b.per * c.esize);
    ring_reduce_scatter(t, c, acc, b, 1, tmp);
    ring_allgather(t, c, acc, b, 1);
}

/* ---- reduce_scatter ----------------------------------------------------- */

void reduce_scatter_ring(task &t, const call &c)
{
    const size_t count = c.args.count, bb = count * c.esize;
    uint8_t *scratch = t.make_scratch(bb + (c.in_place ? 0 : c.size * bb));
    uint8_t *tmp     = scratch;
    uint8_t *work    = c.in_place ? static_cast<uint8_t *>(c.args.rbuf) : scratch + bb;
    if (!c.in_place) {
        std::memcpy(work, c.args.sbuf, c.size * bb);
    }
    const blocks b(count * c.size, c.size); /* blocks of exactly count */
    ring_reduce_scatter(t, c, work, b, 0, tmp);
    round &rd = t.add_round();
    rd.after  = step::copy(c.args.rbuf, work + c.rank * bb, bb);
}

/* ---- allgather ---------------------------------------------------------- */

void allgather_ring(task &t, const call &c)
{
    const size_t bb = c.args.count * c.esize;
    uint8_t *out    = static_cast<uint8_t *>(c.args.rbuf);
    if (!c.in_place) {
        std::memcpy(out + c.rank * bb, c.args.sbuf, bb);
    }
    ring_allgather(t, c, out, blocks(c.args.count * c.size, c.size), 0);
}

/* Bruck: ceil(log2 n) rounds for any n. Rank r gathers the blocks of
 * r, r+1, ... in that order in a scratch buffer (round k: the first
 * min(2^k, n - 2^k) blocks it has go to r - 2^k, and as many come from
 * r + 2^k), then rotates them into place: fewer rounds than a ring for
 * small blocks. */
void allgather_bruck(task &t, const call &c)
{
    const unsigned n = c.size, r = c.rank;
    const size_t bb = c.args.count * c.esize;
    uint8_t *out    = static_cast<uint8_t *>(c.args.rbuf);
    uint8_t *tmp    = t.make_scratch(n * bb);
    std::memcpy(tmp, c.in_place ? out + r * bb : c.args.sbuf, bb);
    for (unsigned dist = 1; dist < n; dist <<= 1) {
        round &rd                 = t.add_round();
        const unsigned blocks_now = std::min(dist, n - dist);
        t.send(rd, (r + n - dist) % n, tmp, blocks_now * bb);
        t.recv(rd, (r + dist) % n, tmp + dist * bb, blocks_now * bb);
    }
    /* tmp[i] is rank (r + i) mod n's block. */
    round &first  = t.add_round();
    first.after   = step::copy(out + r * bb, tmp, (n - r) * bb);
    round &second = t.add_round();
    second.after  = step::copy(out, tmp + (n - r) * bb, r * bb);
}

/* ---- alltoall ----------------------------------------------------------- */

/* Pairwise exchange: in round s, send to rank + s and take from rank - s. */
void alltoall_pairwise(task &t, const call &c)
{
    const unsigned n = c.size, r = c.rank;
    const size_t bb   = c.args.count * c.esize;
    uint8_t *out      = static_cast<uint8_t *>(c.args.rbuf);
    const uint8_t *in = static_cast<const uint8_t *>(c.args.sbuf);
    if (c.in_place) {
        uint8_t *copy = t.make_scratch(n * bb);
        std::memcpy(copy, out, n * bb);
        in = copy;
    } else {
        std::memcpy(out + r * bb, in + r * bb, bb);
    }
    for (unsigned s = 1; s < n; ++s) {
        round &rd         = t.add_round();
        const unsigned to = (r + s) % n, from = (r + n - s) % n;
        t.send(rd, to, in + to * bb, bb);
        t.recv(rd, from, out + from * bb, bb);
    }
}

/* Bruck's packing: the blocks i (0 < i < n) whose bit `dist` is set, in
 * order, between the rotated array and a contiguous buffer. */
size_t bruck_blocks(unsigned n, unsigned dist)
{
    size_t k = 0;
    for (unsigned i = 1; i < n; ++i) {
        k += (i & dist) ? 1 : 0;
    }
    return k;
}

} // namespace

void bruck_pack(uint8_t *packed, const uint8_t *blocks, unsigned n, unsigned dist, size_t bb)
{
    for (unsigned i = 1; i < n; ++i) {
        if (i & dist) {
            std::memcpy(packed, blocks + i * bb, bb);
            packed += bb;
        }
    }
}

void bruck_unpack(uint8_t *blocks, const uint8_t *packed, unsigned n, unsigned dist, size_t bb)
{
    for (unsigned i = 1; i < n; ++i) {
        if (i & dist) {
            std::memcpy(blocks + i * bb, packed, bb);
            packed += bb;
        }
    }
}

namespace {

/* Bruck: ceil(log2 n) rounds instead of n - 1. The blocks are rotated so
 * that block i is for rank r + i; in round `dist` the blocks whose index
 * has that bit go, packed, to r + dist, and as many come from r - dist;
 * at the end block i came from rank r - i. Each block travels up to
 * log2(n) times: for small blocks. */
void alltoall_bruck(task &t, const call &c)
{
    const unsigned n = c.size, r = c.rank;
    const size_t bb   = c.args.count * c.esize;
    uint8_t *out      = static_cast<uint8_t *>(c.args.rbuf);
    const uint8_t *in = c.in_place ? out : static_cast<const uint8_t *>(c.args.sbuf);
    const size_t most = bruck_blocks(n, 1) + 1; /* no round moves more blocks */
    uint8_t *tmp      = t.make_scratch((n + 2 * most) * bb);
    uint8_t *packed = tmp + n * bb, *received = packed + most * bb;
    for (unsigned i = 0; i < n; ++i) {
        std::memcpy(tmp + i * bb, in + ((r + i) % n) * bb, bb);
    }
    if (n > 1) {
        bruck_pack(packed, tmp, n, 1, bb);
    }
    for (unsigned dist = 1; dist < n; dist <<= 1) {
        round &rd          = t.add_round();
        const size_t bytes = bruck_blocks(n, dist) * bb;
        t.send(rd, (r + dist) % n, packed, bytes);
        t.recv(rd, (r + n - dist) % n, received, bytes);
        rd.after.kind  = step::BRUCK_SHUFFLE;
        rd.after.dst   = tmp;
        rd.after.lo    = received;
        rd.after.hi    = packed;
        rd.after.count = bb;
        rd.after.ranks = n;
        rd.after.dist  = dist;
    }
    round &rd      = t.add_round();
    rd.after.kind  = step::BRUCK_ROTATE;
    rd.after.dst   = out;
    rd.after.lo    = tmp;
    rd.after.count = bb;
    rd.after.ranks = n;
    rd.after.rank  = r;
}

/* ---- scatter / gather --------------------------------------------------- */

/* Binomial: the root holds the blocks in rank order relative to itself;
 * each node receives its subtree's blocks and passes on the halves. */
void scatter_binomial(task &t, const call &c)
{
    const unsigned n = c.size;
    const rooted rt{n, c.args.root};
    const unsigned v    = rt.rel(c.rank);
    const size_t bb     = c.args.count * c.esize;
    const uint8_t *sbuf = static_cast<const uint8_t *>(c.args.sbuf);
    uint8_t *buf;
    if (v == 0) {
        if (c.args.root == 0) {
            buf = const_cast<uint8_t *>(sbuf);
        } else {
            buf = t.make_scratch(n * bb);
            for (unsigned i = 0; i < n; ++i) {
                std::memcpy(buf + i * bb, sbuf + rt.real(i) * bb, bb);
            }
        }
    } else {
        const unsigned lowbit = v & (~v + 1);
        buf                   = t.make_scratch(std::min(lowbit, n - v) * bb);
    }
    for (unsigned k = ceil_log2(n); k-- > 0;) {
        const unsigned mask = 1u << k;
        round &rd           = t.add_round();
        if ((v % (2 * mask) == 0) && (v + mask < n)) {
            t.send(rd, rt.real(v + mask), buf + mask * bb, std::min(mask, n - v - mask) * bb);
        } else if (v % (2 * mask) == mask) {
            t.recv(rd, rt.real(v - mask), buf, std::min(mask, n - v) * bb);
        }
    }
    round &rd = t.add_round();
    if (!((v == 0) && c.in_place)) {
        rd.after = step::copy(c.args.rbuf, buf, bb);
    }
}

/* Binomial: the reverse of the scatter; each node gathers its subtree's
 * blocks (in rank order relative to the root) and passes them up. */
void gather_binomial(task &t, const call &c)
{
    const unsigned n = c.size;
    const rooted rt{n, c.args.root};
    const unsigned v      = rt.rel(c.rank);
    const size_t bb       = c.args.count * c.esize;
    uint8_t *out          = static_cast<uint8_t *>(c.args.rbuf);
    const unsigned lowbit = (v == 0) ? n : (v & (~v + 1));
    const unsigned held   = std::min(lowbit, n - v);        /* blocks of my subtree */
    const bool direct     = (v == 0) && (c.args.root == 0); /* the root's order is rbuf's */
    uint8_t *buf          = direct ? out : t.make_scratch(held * bb);
    const void *mine      = ((v == 0) && c.in_place) ? out + c.args.root * bb : c.args.sbuf;
    if (buf != mine) {
        std::memmove(buf, mine, bb);
    }
    for (unsigned mask = 1; mask < n; mask <<= 1) {
        round &rd = t.add_round();
        if (v & mask) {
            t.send(rd, rt.real(v - mask), buf, held * bb);
            break;
        }
        if (v + mask < n) {
            t.recv(rd, rt.real(v + mask), buf + mask * bb, std::min(mask, n - v - mask) * bb);
        }
    }
    if ((v == 0) && !direct) {
        /* buf[i] is rank (root + i) mod n's block. */
        const unsigned root = c.args.root;
        round &first        = t.add_round();
        first.after         = step::copy(out + root * bb, buf, (n - root) * bb);
        round &second       = t.add_round();
        second.after        = step::copy(out, buf + (n - root) * bb, root * bb);
    }
}

/* Linear: every rank sends its block to the root in one round. */
void gather_linear(task &t, const call &c)
{
    const size_t bb     = c.args.count * c.esize;
    round &rd           = t.add_round();
    const unsigned root = c.args.root;
    if (c.rank != root) {
        t.send(rd, root, c.args.sbuf, bb);
        return;
    }
    uint8_t *out = static_cast<uint8_t *>(c.args.rbuf);
    if (!c.in_place) {
        std::memcpy(out + root * bb, c.args.sbuf, bb);
    }
    for (unsigned i = 0; i < c.size; ++i) {
        if (i != root) {
            t.recv(rd, i, out + i * bb, bb);
        }
    }
}

constexpr algorithm barrier_algs[]   = {{"dissemination", barrier_dissemination},
                                        {"knomial", barrier_knomial}};
constexpr algorithm bcast_algs[]     = {{"knomial", bcast_knomial},
                                        {"scatter_allgather", bcast_scatter_allgather},
                                        {"binomial", bcast_binomial},
                                        {"pipeline", bcast_pipeline}};
constexpr algorithm alltoall_algs[]  = {{"bruck", alltoall_bruck}, {"pairwise", alltoall_pairwise}};
constexpr algorithm allreduce_algs[] = {{"recursive_doubling", allreduce_recursive_doubling},
                                        {"rabenseifner", allreduce_rabenseifner},
                                        {"ring", allreduce_ring},
                                        {"knomial", allreduce_knomial}};
constexpr algorithm allgather_algs[] = {{"bruck", allgather_bruck}, {"ring", allgather_ring}};
constexpr algorithm reduce_scatter_algs[] = {{"ring", reduce_scatter_ring}};
constexpr algorithm reduce_algs[]         = {{"knomial", reduce_knomial},
                                             {"binomial", reduce_binomial},
                                             {"pipeline", reduce_pipeline}};
constexpr algorithm scatter_algs[]        = {{"binomial", scatter_binomial}};
constexpr algorithm gather_algs[] = {{"binomial", gather_binomial}, {"linear", gather_linear}};

constexpr const char *coll_names[UCP_COLL_LAST] = {
    "barrier",        "bcast",  "alltoall", "allreduce", "allgather",
    "reduce_scatter", "reduce", "scatter",  "gather",
};

} // namespace

std::span<const algorithm> algorithms_of(ucp_coll_type_t coll)
{
    switch (coll) {
    case UCP_COLL_BARRIER:
        return barrier_algs;
    case UCP_COLL_BCAST:
        return bcast_algs;
    case UCP_COLL_ALLTOALL:
        return alltoall_algs;
    case UCP_COLL_ALLREDUCE:
        return allreduce_algs;
    case UCP_COLL_ALLGATHER:
        return allgather_algs;
    case UCP_COLL_REDUCE_SCATTER:
        return reduce_scatter_algs;
    case UCP_COLL_REDUCE:
        return reduce_algs;
    case UCP_COLL_SCATTER:
        return scatter_algs;
    case UCP_COLL_GATHER:
        return gather_algs;
    default:
        return {};
    }
}

const char *coll_name(ucp_coll_type_t coll)
{
    return (unsigned(coll) < UCP_COLL_LAST) ? coll_names[coll] : "?";
}

void build_team_check(task &t, unsigned size, unsigned rank, uint64_t *check)
{
    /* check[0..1]: ours; check[2 + 2k ..]: round k's peer's. */
    unsigned k = 0;
    for (unsigned dist = 1; dist < size; dist <<= 1, ++k) {
        round &rd = t.add_round();
        t.send(rd, (rank + dist) % size, check, 2 * sizeof(uint64_t));
        uint64_t *theirs = check + 2 + 2 * k;
        t.recv(rd, (rank + size - dist) % size, theirs, 2 * sizeof(uint64_t));
        rd.after.kind = step::TEAM_CHECK;
        rd.after.lo   = check;
        rd.after.hi   = theirs;
    }
}

} // namespace coll
