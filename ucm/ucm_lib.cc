/* Placeholder translation unit until the hooks land (issue 2, ucm part). */
namespace ucm {
extern const char library_name[];
const char library_name[] = "ucm";
}
