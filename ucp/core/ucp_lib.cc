/* The UCP API is built by the UCP core issue; this keeps the library linkable. */
namespace ucp {
extern const char library_name[];
const char library_name[] = "ucp";
}
