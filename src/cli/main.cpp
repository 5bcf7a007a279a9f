// Exit codes: 0 ok, 1 a benchmark failed or a check mismatched, 2 bad usage.
#include <cstdio>
#include <exception>

#include "cli/cli.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  try {
    return xb::cli::run(argc, argv);
  } catch (const xb::UsageError& e) {
    std::fprintf(stderr, "xferbench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xferbench: error: %s\n", e.what());
    return 1;
  }
}
