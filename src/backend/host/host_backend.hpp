#pragma once
// The host backend: devices are NUMA nodes found by hwloc; device memory is
// bound to its node; host memory is pinned (mlock) or pageable. The `dma`
// method is an asynchronous copy engine (per-device worker threads fed by a
// submission queue); the `core` method copies on the issuing cores through a
// small staging tile. XFERBENCH_HOST_DEVICES=N exposes N devices spread over
// the real nodes so p2p paths can be exercised on one-node machines.
#include <memory>

#include "backend/backend.hpp"

namespace xb {

std::unique_ptr<Backend> make_host_backend();

}  // namespace xb
