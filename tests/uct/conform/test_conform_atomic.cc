/*
 * Conformance: atomics. Every operation the attributes list, 32 and 64
 * bits, posted and fetching, leaves exactly the expected value in the
 * peer's word (32-bit operations use the low half of the operand and touch
 * no neighbouring byte) and fetches exactly the old value; a compare-swap
 * that does not match leaves the word alone. An operation the attributes
 * do not list is refused with an error and changes nothing.
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <cstring>

namespace {

using namespace test::conform;
using test::counted_comp;
using uct::atomic_op;

constexpr atomic_op ALL_OPS[] = {atomic_op::ADD, atomic_op::AND,  atomic_op::OR,
                                 atomic_op::XOR, atomic_op::SWAP, atomic_op::CSWAP};

const char *op_name(atomic_op op)
{
    static const char *names[] = {"ADD", "AND", "OR", "XOR", "SWAP", "CSWAP"};
    return names[unsigned(op)];
}

/* The new value of a `size`-byte word `old` after `op`. */
uint64_t apply(atomic_op op, unsigned size, uint64_t old, uint64_t value, uint64_t compare)
{
    const uint64_t mask = (size == 4) ? 0xffffffffull : ~0ull;
    old &= mask;
    value &= mask;
    switch (op) {
    case atomic_op::ADD:
        return (old + value) & mask;
    case atomic_op::AND:
        return old & value;
    case atomic_op::OR:
        return old | value;
    case atomic_op::XOR:
        return old ^ value;
    case atomic_op::SWAP:
        return value;
    default:
        return (old == (compare & mask)) ? value : old;
    }
}

class atomic_checker {
public:
    atomic_checker(pair &p, unsigned size) :
        p_(p), size_(size), region_(p.expose(64, 5)), shadow_(pattern(region_.desc.length, 5))
    {
        /* The word sits between bytes the operation must not touch. */
        offset_ = 16 + ((size == 4) ? 4 : 0);
    }

    /* One operation from `old`; fetch or post. */
    void run(atomic_op op, bool fetch, uint64_t old, uint64_t value, uint64_t compare)
    {
        INFO((fetch ? "fetch " : "post ")
             << op_name(op) << " " << size_ * 8 << " bits, old 0x" << std::hex << old << " value 0x"
             << value << " compare 0x" << compare);
        set_word(old);
        counted_comp comp;
        uint64_t result     = 0xcccccccccccccccc;
        ucs_status_t status = p_.retry([&] {
            return issue(op, fetch, value, compare, &result, &comp);
        });
        const bool promised = (status == UCS_INPROGRESS);
        CHECK(p_.complete(status, comp) == UCS_OK);
        CHECK(comp.fired == (promised ? 1 : 0));
        REQUIRE(p_.flush_ep() == UCS_OK);
        if (fetch) {
            const uint64_t expect = (size_ == 4) ? (0xcccccccc00000000ull | (old & 0xffffffff)) :
                                                   old;
            uint64_t got          = result;
            if (size_ == 4) {
                /* Only the low 4 bytes (host order) are the result. */
                uint32_t low;
                std::memcpy(&low, &result, sizeof(low));
                uint32_t high;
                std::memcpy(&high, reinterpret_cast<uint8_t *>(&result) + 4, sizeof(high));
                got = (uint64_t(high) << 32) | low;
            }
            CHECK(got == expect);
        }
        write_expected(apply(op, size_, old, value, compare));
        check_region();
    }

    /* An operation the attributes do not list: refused, nothing changes. */
    void run_unlisted(atomic_op op, bool fetch)
    {
        INFO("unlisted " << (fetch ? "fetch " : "post ") << op_name(op) << " " << size_ * 8
                         << " bits");
        set_word(0x1234);
        counted_comp comp;
        uint64_t result     = 0;
        ucs_status_t status = issue(op, fetch, 0xff, 0x1234, &result, &comp);
        bool refused        = is_error(status) || is_error(p_.complete(status, comp)) ||
                       is_error(p_.flush_ep());
        CHECK(refused);
        check_region();
    }

private:
    ucs_status_t issue(atomic_op op, bool fetch, uint64_t value, uint64_t compare, uint64_t *result,
                       counted_comp *comp)
    {
        const uint64_t addr = region_.desc.address + offset_;
        return fetch ? p_.ep().atomic_fetch(op, size_, value, compare, result, addr, region_.rkey(),
                                            comp) :
                       p_.ep().atomic_post(op, size_, value, addr, region_.rkey());
    }

    void set_word(uint64_t value)
    {
        write_expected(value);
        std::vector<uint8_t> bytes(shadow_.begin() + long(offset_),
                                   shadow_.begin() + long(offset_ + size_));
        REQUIRE(p_.peer().write(region_.desc.address + offset_, bytes));
    }

    void write_expected(uint64_t value)
    {
        if (size_ == 4) {
            uint32_t v = uint32_t(value);
            std::memcpy(shadow_.data() + offset_, &v, sizeof(v));
        } else {
            std::memcpy(shadow_.data() + offset_, &value, sizeof(value));
        }
    }

    void check_region()
    {
        std::vector<uint8_t> now;
        REQUIRE(p_.peer().read(region_.desc.address, region_.desc.length, &now));
        CHECK(differ(now, shadow_) == "");
    }

    pair &p_;
    unsigned size_;
    pair::remote_region region_;
    std::vector<uint8_t> shadow_;
    size_t offset_;
};

void atomics(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    const uct::iface_attr &a = p.attr();
    if ((a.atomic32_post | a.atomic32_fetch | a.atomic64_post | a.atomic64_fetch) == 0) {
        WARN(p.name() << ": skipped: the iface attributes list no atomic operation "
                         "(atomic32/64 post and fetch are empty)");
        return;
    }
    for (unsigned size : {4u, 8u}) {
        const uint64_t post  = (size == 4) ? a.atomic32_post : a.atomic64_post;
        const uint64_t fetch = (size == 4) ? a.atomic32_fetch : a.atomic64_fetch;
        atomic_checker check(p, size);
        /* High bits set in the old value and operand: a 32-bit operation
         * must ignore the operand's upper half; carries must not leak. */
        const uint64_t old   = 0xfedcba98f0f0f0f0ull;
        const uint64_t value = 0xa5a5a5a50f0f0f1full;
        for (atomic_op op : ALL_OPS) {
            for (bool fetching : {false, true}) {
                const uint64_t set = fetching ? fetch : post;
                if (!(set & uct::atomic_op_bit(op))) {
                    check.run_unlisted(op, fetching);
                    continue;
                }
                check.run(op, fetching, old, value, 0);
                if (op == atomic_op::CSWAP) {
                    /* Matches only in the low half for 32 bits. */
                    check.run(op, fetching, old, value, old ^ 0xffffffff00000000ull);
                    check.run(op, fetching, old, value, old + 1);
                }
            }
        }
    }
}

} // namespace

CONFORM_TEST_CASE("atomics listed in the attributes compute exact results", atomics)
