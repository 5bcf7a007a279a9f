#pragma once
#include "runtime/runtime.hpp"

// The process-wide runtime of the MPI test binary.
xb::Runtime& test_runtime();
