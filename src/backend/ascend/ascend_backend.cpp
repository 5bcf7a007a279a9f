// The Ascend backend: NPUs, memory, streams, events and the dma copier, all
// through the AscendCL table opened at run time.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "backend/ascend/ascend_internal.hpp"
#include "backend/common/device_wait.hpp"
#include "backend/common/placement.hpp"
#include "coll/communicator.hpp"
#include "core/error.hpp"
#include "core/sysinfo.hpp"

namespace xb {
namespace ascend {

const AclApi& api() {
  const auto& l = acl();
  if (!l.api) throw RuntimeError(l.error);
  return *l.api;
}

void check(aclError e, const char* what) {
  if (e != kAclSuccess) throw RuntimeError(acl_error_text(what, e));
}

namespace {

// This thread's current NPU as set here (-1: none yet), and how many times
// this process called aclrtSetDevice on each NPU: each call adds a reference
// that one aclrtResetDevice takes back (AscendCL counts them; the NPU is
// released at zero), so finish_process() resets each NPU that many times.
thread_local int t_current = -1;
std::mutex g_opened_mu;
std::map<int, long> g_opened;
bool g_initialized = false;  // this process's aclInit succeeded (not 100002)

}  // namespace

void set_device(int device) {
  if (t_current == device) return;
  XB_ACL(aclrtSetDevice, device);
  t_current = device;
  std::lock_guard lock(g_opened_mu);
  ++g_opened[device];
}

void ensure_context() {
  if (t_current < 0) set_device(0);
}

void warn_on_error(aclError e, const char* what) {
  if (e != kAclSuccess)
    std::fprintf(stderr, "xferbench: warning: %s\n", acl_error_text(what, e).c_str());
}

void finish_process() {
  const AclApi* a = acl().api;
  if (!a) return;
  // An NPU that missed a deadline still holds the work the streams were
  // left with: its reset would wait for it (main ends the process instead).
  if (!device_hung().empty()) return;
  std::map<int, long> opened;
  {
    std::lock_guard lock(g_opened_mu);
    opened.swap(g_opened);
  }
  // Destroy streams and events, reset each NPU, then finalize (AscendCL's
  // order); never from a destructor or an atexit handler. One reset per
  // aclrtSetDevice call: the last one releases the NPU.
  for (const auto& [d, refs] : opened)
    for (long i = 0; i < refs; ++i)
      if (const aclError e = a->aclrtResetDevice(d); e != kAclSuccess) {
        warn_on_error(e, "aclrtResetDevice");
        break;
      }
  t_current = -1;
  if (g_initialized) {
    g_initialized = false;
    warn_on_error(a->aclFinalize(), "aclFinalize");
  }
}

int memcpy_kind(const Buffer& src, const Buffer& dst) {
  const bool s = src.kind() == MemKind::device, d = dst.kind() == MemKind::device;
  return s ? (d ? kDeviceToDevice : kDeviceToHost) : (d ? kHostToDevice : kHostToHost);
}

namespace {

// "4,5" -> {"4", "5"}; empty when unset.
std::vector<std::string> visible_devices() {
  std::vector<std::string> out;
  const char* v = std::getenv("ASCEND_RT_VISIBLE_DEVICES");
  std::string cur;
  for (const char* c = v ? v : "";; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (!*c) break;
    } else {
      cur += *c;
    }
  }
  return out;
}

class AscendBuffer final : public Buffer {
 public:
  using Buffer::Buffer;
  // Not freed once an NPU stopped answering: its queued work may still use
  // the memory (the process ends soon, device_wait.hpp).
  ~AscendBuffer() override {
    if (kind() != MemKind::pageable && !device_hung().empty()) return;
    if (kind() == MemKind::device)
      (void)api().aclrtFree(data());
    else if (kind() == MemKind::pinned)
      (void)api().aclrtFreeHost(data());
    else
      std::free(data());
  }
};

class AscendBackend final : public Backend {
 public:
  // Touches no NPU: a process sets only the NPUs it uses (each first
  // aclrtSetDevice makes a context, a stream and a scheduler on that NPU).
  AscendBackend() {
    std::uint32_t n = 0;
    XB_ACL(aclrtGetDeviceCount, &n);
    const auto visible = visible_devices();
    const char* soc = api().aclrtGetSocName ? api().aclrtGetSocName() : nullptr;
    for (int d = 0; d < static_cast<int>(n); ++d) {
      DeviceInfo info;
      info.id = d;
      info.name = fmt::format("NPU{} {}", d, soc && *soc ? soc : "Ascend");
      if (static_cast<std::size_t>(d) < visible.size())
        info.name += fmt::format(" (physical {})", visible[static_cast<std::size_t>(d)]);
      devices_.push_back(info);
    }
    peer_.resize(static_cast<std::size_t>(n) * n);
    has_peer_.resize(n);
  }

  std::string name() const override { return "ascend"; }
  const std::vector<DeviceInfo>& devices() const override { return devices_; }
  Capabilities capabilities() const override {
    Capabilities c;
    c.backend = name();
    c.devices = static_cast<int>(devices_.size());
    return c;
  }
  Support method_support(Method m) const override {
    if (m == Method::dma) return Support::yes();
    return Support::no(
        "core copies need device kernels (Ascend C vector cores moving data through the "
        "on-chip buffer); this version has none: use --method dma");
  }
  // Probed and enabled on first use, both directions of the pair at once
  // (aclrtDeviceEnablePeerAccess is one-directional, from the current NPU).
  Support peer_access(int src, int dst) const override {
    check_device(src);
    check_device(dst);
    if (src == dst) return Support::yes();
    std::lock_guard lock(peer_mu_);
    const std::size_t n = devices_.size();
    if (!peer_[pair_index(src, dst, n)]) {
      peer_[pair_index(src, dst, n)] = enable_peer(src, dst);
      peer_[pair_index(dst, src, n)] = enable_peer(dst, src);
    }
    return *peer_[pair_index(src, dst, n)];
  }
  // What AscendCL says joins the pair (aclrtGetDevicesTopo), as npu-smi
  // info -t topo names it: doctor and fleet hold each pair against the
  // pairs of its own class.
  std::string link_type(int a, int b) const override {
    if (a == b) return "X";
    if (!peer_access(a, b).ok) return "no peer access";
    return link_class(a, b);
  }
  Bytes free_memory(MemKind kind, int device) const override {
    if (kind != MemKind::device) return available_memory();
    check_device(device);
    set_device(device);
    std::size_t free = 0, total = 0;
    XB_ACL(aclrtGetMemInfo, kAclHbmMem, &free, &total);
    return free;
  }
  std::unique_ptr<Buffer> allocate(MemKind kind, int device, Bytes size) override {
    void* p = nullptr;
    if (kind == MemKind::device) {
      check_device(device);
      set_device(device);
      // Memory of an NPU with a peer path: Huawei's p2p policy, for every
      // buffer of it, whatever runs first (the Ascend review's N6).
      const aclError e = api().aclrtMalloc(
          &p, size, has_peer_path(device) ? kAclMallocHugeFirstP2p : kAclMallocHugeFirst);
      if (e != kAclSuccess)
        throw RuntimeError(acl_error_text(
            fmt::format("aclrtMalloc of {} on NPU{}", format_capacity(size), device).c_str(), e));
      return std::make_unique<AscendBuffer>(kind, device, size, p);
    }
    if (kind == MemKind::pinned) {
      ensure_context();
      const aclError e = api().aclrtMallocHost(&p, size);
      if (e != kAclSuccess)
        throw RuntimeError(
            acl_error_text(fmt::format("aclrtMallocHost of {}", format_capacity(size)).c_str(), e));
      return std::make_unique<AscendBuffer>(kind, -1, size, p);
    }
    return std::make_unique<AscendBuffer>(kind, -1, size, alloc_pageable(size));
  }
  void write(Buffer& dst, Bytes offset, std::span<const std::byte> src) override {
    check_range(dst, offset, src.size(), "write");
    if (dst.device() >= 0) set_device(dst.device());
    XB_ACL(aclrtMemcpy, static_cast<std::byte*>(dst.data()) + offset, dst.size() - offset,
           src.data(), src.size(), dst.kind() == MemKind::device ? kHostToDevice : kHostToHost);
  }
  void read(const Buffer& src, Bytes offset, std::span<std::byte> dst) override {
    check_range(src, offset, dst.size(), "read");
    if (src.device() >= 0) set_device(src.device());
    XB_ACL(aclrtMemcpy, dst.data(), dst.size(), static_cast<const std::byte*>(src.data()) + offset,
           dst.size(), src.kind() == MemKind::device ? kDeviceToHost : kHostToHost);
  }
  std::unique_ptr<Stream> create_stream(int device, const CopierOptions&) override {
    check_device(device);
    return std::make_unique<AscendStream>(device);
  }
  std::unique_ptr<Event> create_event() override { return make_event(); }
  std::unique_ptr<Copier> copier(Method m, const CopierOptions&) override {
    if (m != Method::dma) throw NotSupported(method_support(m).reason);
    return make_dma_copier();
  }
  std::unique_ptr<Communicator> communicator(Runtime& rt) override {
    return make_hccl_communicator(rt, *this);
  }
  Support communicator_fits(Runtime& rt) override {
    // The name says "(physical N)" under ASCEND_RT_VISIBLE_DEVICES.
    return one_device_per_rank(
        rt, static_cast<int>(devices().size()), "HCCL", "NPU",
        [this](int d) { return devices()[static_cast<std::size_t>(d)].name; });
  }

 private:
  void check_device(int device) const {
    check_device_index(device, devices_.size(), name(), "NPU");
  }
  // One direction, src -> dst, from src. An error of the probe (products
  // without p2p answer ACL_ERROR_RT_FEATURE_NOT_SUPPORT) means no peer.
  Support enable_peer(int src, int dst) const {
    std::int32_t can = 0;
    if (const aclError e = api().aclrtDeviceCanAccessPeer(&can, src, dst); e != kAclSuccess)
      return Support::no(acl_error_text("aclrtDeviceCanAccessPeer", e));
    if (!can)
      return Support::no(fmt::format(
          "aclrtDeviceCanAccessPeer({}, {}) = 0 (no HCCS or PCIe peer path)", src, dst));
    set_device(src);
    if (const aclError e = api().aclrtDeviceEnablePeerAccess(dst, 0); e != kAclSuccess)
      return Support::no(acl_error_text("aclrtDeviceEnablePeerAccess", e));
    return Support::yes();
  }
  // Whether the NPU can reach any other one (asked once; no NPU is set).
  bool has_peer_path(int device) const {
    std::lock_guard lock(peer_mu_);
    auto& known = has_peer_[static_cast<std::size_t>(device)];
    if (!known) {
      known = false;
      for (int other = 0; other < static_cast<int>(devices_.size()) && !*known; ++other) {
        std::int32_t can = 0;
        known = other != device &&
                api().aclrtDeviceCanAccessPeer(&can, device, other) == kAclSuccess && can;
      }
    }
    return *known;
  }
  std::string link_class(int a, int b) const {
    const auto topo = api().aclrtGetDevicesTopo;
    if (!topo) return "peer access (link unknown: this CANN has no aclrtGetDevicesTopo)";
    std::uint64_t v = 0;
    if (const aclError e = topo(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b), &v);
        e != kAclSuccess)
      return "peer access (link unknown: " + acl_error_text("aclrtGetDevicesTopo", e) + ")";
    return topology_name(v);
  }

  std::vector<DeviceInfo> devices_;
  mutable std::mutex peer_mu_;
  mutable std::vector<std::optional<Support>> peer_;   // pair_index order, probed on use
  mutable std::vector<std::optional<bool>> has_peer_;  // per NPU, asked on first allocation
};

}  // namespace

}  // namespace ascend

BackendStatus probe_ascend() {
  static const BackendStatus status = []() -> BackendStatus {
    const auto& l = ascend::acl();
    if (!l.api) return {"ascend", false, l.error};
    // A runtime that loads and then fails, where the driver has NPU device
    // nodes, is a broken NPU (an error), never "no NPU".
    const auto failed = [](const std::string& why) {
      return failed_probe("ascend", "NPU", why, true, "/dev", "davinci");
    };
    const ascend::aclError init = l.api->aclInit(nullptr);
    if (init != ascend::kAclSuccess && init != ascend::kAclRepeatInitialize)
      return failed(ascend::acl_error_text("aclInit", init));
    // Finalized by finish_backends() at the end of main, never at exit:
    // AscendCL must not be finalized from destructors or exit handlers.
    ascend::g_initialized = init == ascend::kAclSuccess;
    std::uint32_t n = 0;
    if (const ascend::aclError e = l.api->aclrtGetDeviceCount(&n); e != ascend::kAclSuccess)
      return failed(ascend::acl_error_text("aclrtGetDeviceCount", e));
    if (n == 0) {
      const char* vis = std::getenv("ASCEND_RT_VISIBLE_DEVICES");
      return {"ascend", false,
              vis ? fmt::format("no NPU visible (ASCEND_RT_VISIBLE_DEVICES={})", vis)
                  : std::string("no NPU found")};
    }
    return {"ascend", true, ""};
  }();
  return status;
}

void finish_ascend() { ascend::finish_process(); }

std::unique_ptr<Backend> make_ascend_backend() {
  const BackendStatus s = probe_ascend();
  if (!s.available)
    throw UsageError(fmt::format("backend 'ascend' is not available: {}", s.reason));
  return std::make_unique<ascend::AscendBackend>();
}

}  // namespace xb
