#include <ucs/type/thread_mode.h>

extern "C" {
const char *ucs_thread_mode_names[] = {"single", "serialized", "multi"};
}
