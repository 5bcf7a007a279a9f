#pragma once
// Choosing a backend by name: the one place that knows every backend (its
// own folder, so the vendor folders depend on backend/ and not back).
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace xb {

// Backends compiled into this binary, in `auto` preference order.
std::vector<BackendStatus> probe_backends();

// The one backend `name` names, as probe_backends() lists it (none for a name it does not
// list): a run that names its backend loads no other vendor's runtime (`--backend host`
// starts without CUDA's libraries, which cost a tenth of a second to load).
std::vector<BackendStatus> probe_backend(const std::string& name);

// "host", "auto" (first available). Throws UsageError for an unknown or
// unavailable name, with the reason.
std::unique_ptr<Backend> make_backend(const std::string& name);

// The end of the process's use of the vendor runtimes, once every backend
// object is gone: Ascend resets the NPUs the process set and finalizes
// AscendCL (which must not happen in a destructor or an exit handler).
void finish_backends();

}  // namespace xb
