#pragma once
// MPI return codes as RuntimeError, and counts that must fit MPI's int.
// Internal to the MPI-backed parts (runtime/, coll/).
#include <fmt/format.h>
#include <mpi.h>

#include <cstddef>
#include <limits>

#include "core/error.hpp"

namespace xb {

inline void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RuntimeError(fmt::format("{} failed: {}", what, msg));
}

inline int mpi_count(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw RuntimeError("MPI counts are limited to 2^31-1 elements");
  return static_cast<int>(n);
}

}  // namespace xb
