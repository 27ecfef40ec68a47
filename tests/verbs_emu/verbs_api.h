/*
 * The libibverbs API as the emulator defines it. Every declaration of the
 * public header gets default visibility, so our definitions of those
 * functions are exported (and win symbol lookup from LD_PRELOAD), while the
 * rest of the library is built with hidden visibility.
 */
#ifndef VERBS_EMU_VERBS_API_H
#define VERBS_EMU_VERBS_API_H

#pragma GCC visibility push(default)
#include <infiniband/verbs.h>
#pragma GCC visibility pop

/* Some API names are function-like macros in the header (they dispatch to
 * inline helpers); our definitions must not be macro-expanded. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_get_device_list

#endif
