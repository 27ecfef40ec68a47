#include "batch.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace perftest {

namespace {

/* argv without -b and its value ("-b FILE", "-bFILE"). */
std::vector<std::string> without_batch(int argc, char **argv)
{
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "-b") == 0) {
            ++i;
        } else if (std::strncmp(argv[i], "-b", 2) != 0) {
            args.push_back(argv[i]);
        }
    }
    return args;
}

} // namespace

bool read_batch(const cli &opts, int argc, char **argv, std::vector<test_spec> *stages)
{
    std::ifstream file(opts.batch_file);
    if (!file) {
        std::fprintf(stderr, "ucx_perftest: cannot read the batch file '%s': %s\n",
                     opts.batch_file.c_str(), std::strerror(errno));
        usage(stderr);
        return false;
    }
    const std::vector<std::string> base = without_batch(argc, argv);
    std::string line;
    for (unsigned number = 1; std::getline(file, line); ++number) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::vector<std::string> args{argv[0]};
        args.insert(args.end(), base.begin(), base.end());
        std::string word;
        if (!(words >> word)) {
            continue;
        }
        args.insert(args.end(), {"-t", word});
        while (words >> word) {
            args.push_back(word);
        }
        std::vector<char *> line_argv;
        for (std::string &a : args) {
            line_argv.push_back(a.data());
        }
        line_argv.push_back(nullptr);
        cli line_cli;
        int code;
        if (!parse_cli(int(args.size()), line_argv.data(), &line_cli, &code) ||
            !line_cli.batch_file.empty() || line_cli.sweep) {
            std::fprintf(stderr,
                         "ucx_perftest: the batch file '%s', line %u, is not a test "
                         "this tool can run%s\n",
                         opts.batch_file.c_str(), number,
                         line_cli.batch_file.empty() && !line_cli.sweep ?
                             " (see above)" :
                             ": no -b or --sweep in a batch file");
            return false;
        }
        stages->push_back(line_cli.spec);
    }
    if (stages->empty()) {
        std::fprintf(stderr, "ucx_perftest: the batch file '%s' names no test\n",
                     opts.batch_file.c_str());
        usage(stderr);
        return false;
    }
    return true;
}

} // namespace perftest
