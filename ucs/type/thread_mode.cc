#include <ucs/config/types.h>
#include <ucs/type/thread_mode.h>

extern "C" {
const char *ucs_thread_mode_names[] = {"single", "serialized", "multi"};
const char *ucs_async_mode_names[]  = {"signal", "thread_spinlock", "thread_mutex", "poll"};
}
