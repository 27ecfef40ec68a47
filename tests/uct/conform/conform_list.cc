#include "conform_list.h"

#ifndef UCT_CONFORM_TRANSPORTS
#error "UCT_CONFORM_TRANSPORTS comes from tests/uct/meson.build"
#endif

namespace test::conform {

const std::vector<transport_spec> &transports()
{
    static const std::vector<transport_spec> list = [] {
        std::vector<transport_spec> out;
        const std::string all = UCT_CONFORM_TRANSPORTS;
        size_t start          = 0;
        while (start <= all.size()) {
            size_t end = all.find(',', start);
            if (end == std::string::npos) {
                end = all.size();
            }
            std::string entry = all.substr(start, end - start);
            if (!entry.empty()) {
                size_t colon = entry.find(':');
                transport_spec spec{entry, entry.substr(0, colon), ""};
                if (colon != std::string::npos) {
                    spec.dev = entry.substr(colon + 1);
                }
                out.push_back(spec);
            }
            start = end + 1;
        }
        return out;
    }();
    return list;
}

void for_each_transport(const std::function<void(const transport_spec &)> &body)
{
    for (const transport_spec &spec : transports()) {
        DYNAMIC_SECTION(spec.entry) {
            body(spec);
        }
    }
}

} // namespace test::conform
