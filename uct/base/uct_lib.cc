/* The transport layer is built by the transport issue; this keeps the library linkable. */
namespace uct {
extern const char library_name[];
const char library_name[] = "uct";
}
