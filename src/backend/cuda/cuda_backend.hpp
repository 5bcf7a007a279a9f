#pragma once
// The CUDA backend (built when nvcc and NCCL are found): GPUs as devices,
// copy engines as the `dma` method, SM copy kernels as the `core` method,
// CUDA IPC for device memory shared between processes, NCCL for collectives.
// No CUDA type appears outside backend/cuda/.
#include <memory>

#include "backend/backend.hpp"

namespace xb {

// Whether a GPU is usable here, and if not why ("CUDA driver version is
// insufficient ..." on machines with the toolkit but no driver).
BackendStatus probe_cuda();

// Throws UsageError when no GPU is usable.
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace xb
