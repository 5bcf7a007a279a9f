// The Ascend backend: NPUs, memory, streams, events and the dma copier, all
// through the AscendCL table opened at run time.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>

#include "backend/ascend/ascend_internal.hpp"
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

// This thread's current NPU as set here (-1: none yet), and every NPU this
// process set, which finish_process() resets.
thread_local int t_current = -1;
std::mutex g_opened_mu;
std::set<int> g_opened;
bool g_initialized = false;  // this process's aclInit succeeded (not 100002)

}  // namespace

void set_device(int device) {
  if (t_current == device) return;
  XB_ACL(aclrtSetDevice, device);
  t_current = device;
  std::lock_guard lock(g_opened_mu);
  g_opened.insert(device);
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
  std::set<int> opened;
  {
    std::lock_guard lock(g_opened_mu);
    opened.swap(g_opened);
  }
  // Destroy streams and events, reset each NPU, then finalize (AscendCL's
  // order); never from a destructor or an atexit handler.
  for (int d : opened) warn_on_error(a->aclrtResetDevice(d), "aclrtResetDevice");
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

bool pageable(const Buffer& b) { return b.kind() == MemKind::pageable; }

// aclrtMemcpyAsync takes 64-byte aligned addresses.
bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

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
  ~AscendBuffer() override {
    if (kind() == MemKind::device)
      (void)api().aclrtFree(data());
    else if (kind() == MemKind::pinned)
      (void)api().aclrtFreeHost(data());
    else
      std::free(data());
  }
};

class AscendEvent final : public Event {
 public:
  // The event, created on `device` (re-created if it lived on another).
  aclrtEvent on(int device) { return event_.on(device); }
  void synchronize() override {
    if (!event_.get()) throw RuntimeError("event synchronized before it was recorded");
    XB_ACL(aclrtSynchronizeEvent, event_.get());
  }
  bool query() override {
    if (!event_.get()) return false;
    int status = 0;
    XB_ACL(aclrtQueryEventStatus, event_.get(), &status);
    return status == kAclEventComplete;
  }
  double elapsed_us_since(const Event& start) const override {
    const auto* s = dynamic_cast<const AscendEvent*>(&start);
    if (!s || !s->event_.get() || !event_.get())
      throw RuntimeError("elapsed time of an unrecorded event");
    float ms = 0;
    XB_ACL(aclrtEventElapsedTime, &ms, s->event_.get(), event_.get());
    return static_cast<double>(ms) * 1000.0;
  }

 private:
  DeviceEventHandle<EventApi> event_;
};

// Runtime copies on one stream per op, bracketed by events. No kernel can
// hold the streams back here, so concurrent ops start as they are issued.
class DmaCopier final : public Copier {
 public:
  Method method() const override { return Method::dma; }
  CopyTiming run(std::span<const CopyOp> ops) override {
    check_ops(ops);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto& lane = lanes_.at(i, executing_device(ops[i]));
      lane.stream->record(lane.start);
      lane.stream->copy_async(*ops[i].src, 0, *ops[i].dst, 0, ops[i].bytes);
      lane.stream->record(lane.end);
    }
    return lanes_.timing(ops.size());
  }

 private:
  Lanes<AscendStream, AscendEvent> lanes_;
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
    p2p_.assign(n, false);
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
  std::string link_type(int a, int b) const override {
    if (a == b) return "X";
    const Support& s = peer_access(a, b);
    return s.ok ? "peer access (HCCS or PCIe; CANN does not say which)" : "no peer access";
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
      // Memory of an NPU that copies to or from a peer: Huawei's p2p policy.
      const bool p2p = [&] {
        std::lock_guard lock(peer_mu_);
        return p2p_[static_cast<std::size_t>(device)];
      }();
      const aclError e =
          api().aclrtMalloc(&p, size, p2p ? kAclMallocHugeFirstP2p : kAclMallocHugeFirst);
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
  std::unique_ptr<Event> create_event() override { return std::make_unique<AscendEvent>(); }
  std::unique_ptr<Copier> copier(Method m, const CopierOptions&) override {
    if (m != Method::dma) throw NotSupported(method_support(m).reason);
    return std::make_unique<DmaCopier>();
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
    p2p_[static_cast<std::size_t>(src)] = true;
    return Support::yes();
  }

  std::vector<DeviceInfo> devices_;
  mutable std::mutex peer_mu_;
  mutable std::vector<std::optional<Support>> peer_;  // pair_index order, probed on use
  mutable std::vector<bool> p2p_;                     // NPU has a peer enabled
};

}  // namespace

aclrtEvent EventApi::create(int device) {
  set_device(device);
  aclrtEvent e = nullptr;
  XB_ACL(aclrtCreateEvent, &e);
  return e;
}

void EventApi::destroy(aclrtEvent e) noexcept { (void)api().aclrtDestroyEvent(e); }

// ---- streams ----------------------------------------------------------------

AscendStream::AscendStream(int device) : device_(device) {
  set_device(device);
  XB_ACL(aclrtCreateStream, &stream_);
}

// Synchronized and destroyed from its own NPU, as AscendCL requires.
AscendStream::~AscendStream() {
  if (!stream_) return;
  try {
    set_device(device_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xferbench: warning: %s\n", e.what());
  }
  warn_on_error(api().aclrtSynchronizeStream(stream_), "aclrtSynchronizeStream");
  warn_on_error(api().aclrtDestroyStream(stream_), "aclrtDestroyStream");
}

void AscendStream::copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off,
                              Bytes n) {
  check_range(src, src_off, n, "copy");
  check_range(dst, dst_off, n, "copy");
  set_device(device_);
  auto* d = static_cast<std::byte*>(dst.data()) + dst_off;
  const auto* s = static_cast<const std::byte*>(src.data()) + src_off;
  // aclrtMemcpyAsync takes page-locked memory from the runtime, 64-byte
  // aligned addresses and at least one device side; anything else is
  // copied synchronously, in stream order.
  const bool async = !pageable(src) && !pageable(dst) && aligned(d) && aligned(s) &&
                     (src.kind() == MemKind::device || dst.kind() == MemKind::device);
  if (async) {
    XB_ACL(aclrtMemcpyAsync, d, dst.size() - dst_off, s, n, memcpy_kind(src, dst), stream_);
  } else {
    XB_ACL(aclrtSynchronizeStream, stream_);
    XB_ACL(aclrtMemcpy, d, dst.size() - dst_off, s, n, memcpy_kind(src, dst));
  }
}

// Work on a stream is issued with the stream's NPU current (107003 otherwise).
void AscendStream::record(Event& event) {
  auto* e = dynamic_cast<AscendEvent*>(&event);
  if (!e) throw RuntimeError("event of another backend recorded on an Ascend stream");
  set_device(device_);
  XB_ACL(aclrtRecordEvent, e->on(device_), stream_);
}

void AscendStream::synchronize() { XB_ACL(aclrtSynchronizeStream, stream_); }

}  // namespace ascend

BackendStatus probe_ascend() {
  static const BackendStatus status = []() -> BackendStatus {
    const auto& l = ascend::acl();
    if (!l.api) return {"ascend", false, l.error};
    const ascend::aclError init = l.api->aclInit(nullptr);
    if (init != ascend::kAclSuccess && init != ascend::kAclRepeatInitialize)
      return {"ascend", false, ascend::acl_error_text("aclInit", init)};
    // Finalized by finish_backends() at the end of main, never at exit:
    // AscendCL must not be finalized from destructors or exit handlers.
    ascend::g_initialized = init == ascend::kAclSuccess;
    std::uint32_t n = 0;
    if (const ascend::aclError e = l.api->aclrtGetDeviceCount(&n); e != ascend::kAclSuccess)
      return {"ascend", false, ascend::acl_error_text("aclrtGetDeviceCount", e)};
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
