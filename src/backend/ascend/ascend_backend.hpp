#pragma once
// The Ascend backend: NPUs through CANN's runtime (AscendCL) and HCCL,
// both opened with dlopen at run time (backend/ascend/acl_api.hpp), so the
// binary builds and runs without CANN. `dma` = runtime copies on streams
// (the SDMA engines); `core` needs device kernels and is not offered.
#include <memory>

#include "backend/backend.hpp"

namespace xb {

// Whether CANN loads and sees an NPU here, and if not why.
BackendStatus probe_ascend();

// Throws UsageError when the backend is unavailable.
std::unique_ptr<Backend> make_ascend_backend();

// Resets the NPUs this process set and finalizes AscendCL if this process
// initialized it; after every Ascend backend, stream and buffer is gone.
void finish_ascend();

}  // namespace xb
