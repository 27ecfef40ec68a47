/* The two mm components, registered when libuct loads. */
#include "mm_md.h"

namespace uct::mm {

namespace {

struct registrar {
    registrar()
    {
        static mm_component posix("posix", posix_backend());
        static mm_component sysv("sysv", sysv_backend());
        register_component(&posix);
        register_component(&sysv);
    }
};

const registrar registered;

} // namespace

} // namespace uct::mm
