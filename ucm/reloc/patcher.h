/*
 * Redirects imported functions by rewriting relocation slots (PLT and GOT
 * entries) in every loaded object except libucm itself: calls made through
 * those slots land in the hooks, while libucm's own calls still reach the
 * real functions.
 *
 * The caller serialises patching (one installer at a time).
 */
#ifndef UCM_RELOC_PATCHER_H_
#define UCM_RELOC_PATCHER_H_

#include <cstddef>

namespace ucm::reloc {

struct symbol_patch {
    const char *symbol;
    void *hook;
};

struct patch_result {
    unsigned written; /* slots changed now */
    unsigned failed;  /* slots that could not be made writable */
};

/* Point every slot importing one of the symbols at its hook. Idempotent:
 * slots already pointing at the hook are left alone. */
patch_result patch_loaded_objects(const symbol_patch *patches, size_t count);

struct slot_census {
    unsigned total;      /* slots importing the symbol */
    unsigned mismatched; /* of those, slots not holding `expected` */
};

/* Inspect the slots importing symbol in every object but libucm. */
slot_census count_slots(const char *symbol, const void *expected);

} // namespace ucm::reloc

#endif
