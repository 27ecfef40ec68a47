/* libuct_noentry.so: a shared object in the module directory that is no uct
 * module (no entry point): refused with a message. */
extern "C" int noentry_marker()
{
    return 1;
}
