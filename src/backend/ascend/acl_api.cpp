// Opening CANN's libraries at run time and binding the entry table.
#include "backend/ascend/acl_api.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace xb::ascend {
namespace {

std::vector<std::string> candidates(const char* lib) {
  std::vector<std::string> out;
  for (const char* var : {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"})
    if (const char* v = std::getenv(var); v && *v)
      out.push_back(fmt::format("{}/lib64/{}", v, lib));
  for (const char* dir :
       {"/usr/local/Ascend/ascend-toolkit/latest/lib64", "/usr/local/Ascend/latest/lib64"})
    out.push_back(fmt::format("{}/{}", dir, lib));
  out.emplace_back(lib);  // LD_LIBRARY_PATH and the loader's cache
  return out;
}

// The first candidate that opens; the error names every place tried, or,
// when a file is there but does not load (a library it needs is not on the
// loader's path, an unresolved symbol), the loader's own reason.
void* open_library(const char* lib, std::string& path, std::string& error) {
  std::string tried, unloadable;
  for (const auto& c : candidates(lib)) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      path = c;
      return h;
    }
    const char* why = dlerror();
    const bool has_dir = c.find('/') != std::string::npos;
    // For a plain name, the loader's "<lib>: cannot open shared object
    // file" means it found none; any other reason (a missing dependency
    // names that one) means it found the library and could not load it.
    const bool exists = has_dir ? access(c.c_str(), F_OK) == 0
                                : why && !(std::strncmp(why, lib, std::strlen(lib)) == 0 &&
                                           std::strstr(why, "cannot open shared object file"));
    if (exists && unloadable.empty()) unloadable = why ? why : "dlopen failed";
    if (has_dir) tried += (tried.empty() ? "" : ", ") + c;
  }
  error = unloadable.empty()
              ? fmt::format(
                    "{} not found (CANN is not installed, or set ASCEND_HOME_PATH / source "
                    "set_env.sh; tried {} and LD_LIBRARY_PATH)",
                    lib, tried)
              : fmt::format(
                    "{} is there but does not load: {} (source CANN's set_env.sh, which puts the "
                    "libraries it needs on LD_LIBRARY_PATH)",
                    lib, unloadable);
  return nullptr;
}

template <class F>
void bind(void* lib, const char* name, F& slot, std::string* missing) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  if (!slot && missing && missing->empty()) *missing = name;
}
#define XB_REQUIRED(sym) bind(lib, #sym, api->sym, &missing)
#define XB_OPTIONAL(sym) bind(lib, #sym, api->sym, nullptr)

template <class Api, class Bind>
Loaded<Api> load(const char* name, Bind bind_all) {
  Loaded<Api> out;
  void* lib = open_library(name, out.path, out.error);
  if (!lib) return out;
  static Api table{};  // one per Api type, filled once
  std::string missing = bind_all(lib, &table);
  if (!missing.empty()) {
    out.error = fmt::format("{} ({}) has no symbol {}: an older or incompatible CANN", name,
                            out.path, missing);
    return out;  // the library stays open: symbols may be in use elsewhere
  }
  out.api = &table;
  return out;
}

}  // namespace

const Loaded<AclApi>& acl() {
  static const Loaded<AclApi> loaded = load<AclApi>("libascendcl.so", [](void* lib, AclApi* api) {
    std::string missing;
    XB_REQUIRED(aclInit);
    XB_REQUIRED(aclFinalize);
    XB_REQUIRED(aclrtGetDeviceCount);
    XB_REQUIRED(aclrtSetDevice);
    XB_REQUIRED(aclrtResetDevice);
    XB_REQUIRED(aclrtMalloc);
    XB_REQUIRED(aclrtFree);
    XB_REQUIRED(aclrtMallocHost);
    XB_REQUIRED(aclrtFreeHost);
    XB_REQUIRED(aclrtMemcpy);
    XB_REQUIRED(aclrtMemcpyAsync);
    XB_REQUIRED(aclrtGetMemInfo);
    XB_REQUIRED(aclrtCreateStream);
    XB_REQUIRED(aclrtDestroyStream);
    XB_REQUIRED(aclrtSynchronizeStream);
    XB_REQUIRED(aclrtCreateEvent);
    XB_REQUIRED(aclrtDestroyEvent);
    XB_REQUIRED(aclrtRecordEvent);
    XB_REQUIRED(aclrtSynchronizeEvent);
    XB_REQUIRED(aclrtQueryEventStatus);
    XB_REQUIRED(aclrtEventElapsedTime);
    XB_REQUIRED(aclrtDeviceCanAccessPeer);
    XB_REQUIRED(aclrtDeviceEnablePeerAccess);
    XB_OPTIONAL(aclrtGetSocName);
    XB_OPTIONAL(aclGetRecentErrMsg);
    XB_OPTIONAL(aclrtGetDevicesTopo);
    XB_OPTIONAL(aclrtSynchronizeStreamWithTimeout);
    return missing;
  });
  return loaded;
}

const Loaded<HcclApi>& hccl() {
  static const Loaded<HcclApi> loaded = load<HcclApi>("libhccl.so", [](void* lib, HcclApi* api) {
    std::string missing;
    XB_REQUIRED(HcclGetRootInfo);
    XB_REQUIRED(HcclCommInitRootInfo);
    XB_REQUIRED(HcclCommDestroy);
    XB_REQUIRED(HcclAllReduce);
    XB_REQUIRED(HcclAllGather);
    XB_REQUIRED(HcclReduceScatter);
    XB_REQUIRED(HcclBroadcast);
    XB_REQUIRED(HcclReduce);
    XB_REQUIRED(HcclAlltoAll);
    XB_REQUIRED(HcclBatchSendRecv);
    XB_OPTIONAL(HcclGetErrorString);
    XB_OPTIONAL(HcclScatter);
    XB_OPTIONAL(HcclAlltoAllV);
    return missing;
  });
  return loaded;
}

std::string acl_error_text(const char* what, aclError e) {
  const AclApi* api = acl().api;
  const char* msg = api && api->aclGetRecentErrMsg ? api->aclGetRecentErrMsg() : nullptr;
  return msg && *msg ? fmt::format("{} failed: error {} ({})", what, e, msg)
                     : fmt::format("{} failed: error {}", what, e);
}

std::string topology_name(std::uint64_t value) {
  static constexpr std::pair<std::uint64_t, const char*> kClasses[] = {
      {kTopoHccs, "HCCS"},
      {kTopoPix, "PIX (one PCIe switch)"},
      {kTopoPib, "PIB (reserved)"},
      {kTopoPhb, "PHB (a PCIe host bridge)"},
      {kTopoSys, "SYS (across NUMA nodes, SMP)"},
      {kTopoSio, "SIO (the two dies of one chip)"},
      {kTopoHccsSw, "HCCS_SW (an HCCS switch)"},
  };
  for (const auto& [bit, name] : kClasses)
    if (value & bit) return name;
  return fmt::format("link {:#x} (a class unknown to this xferbench)", value);
}

}  // namespace xb::ascend
