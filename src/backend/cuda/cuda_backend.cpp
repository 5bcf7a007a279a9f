// The CUDA backend: devices, memory, streams, events and IPC.
#include <cublas_v2.h>
#include <fmt/format.h>
#include <nccl.h>
#include <sys/mman.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "backend/common/device_wait.hpp"
#include "backend/common/hwloc_util.hpp"
#include "backend/common/last_error.hpp"
#include "backend/common/nccl_rules.hpp"
#include "backend/common/nvlink.hpp"
#include "backend/common/pcie_sysfs.hpp"
#include "backend/cuda/cuda_internal.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "coll/fused.hpp"
#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "core/test_seam.hpp"

namespace xb {
namespace cuda {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw RuntimeError(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

void set_device(int device) { XB_CUDA(cudaSetDevice(device)); }

// ---- buffers ------------------------------------------------------------------

CudaBuffer::~CudaBuffer() {
  // A device past its deadline may still use the memory, and a free would
  // wait for it: the process ends soon, without it (device_wait.hpp).
  if (owner_ != Owner::heap && owner_ != Owner::borrowed && !device_hung().empty()) return;
  switch (owner_) {  // errors here cannot be reported; the context may be gone
    case Owner::cuda_malloc:
      (void)cudaFree(data());
      break;
    case Owner::cuda_host:
      (void)cudaFreeHost(data());
      break;
    case Owner::heap:
      std::free(data());
      break;
    case Owner::ipc:
      (void)cudaIpcCloseMemHandle(data());
      break;
    case Owner::registered:
      (void)cudaHostUnregister(data());
      munmap(data(), size());
      break;
    case Owner::borrowed:
      break;
  }
}

// ---- events -------------------------------------------------------------------

cudaEvent_t EventApi::create(int device) {
  set_device(device);
  cudaEvent_t e = nullptr;
  XB_CUDA(cudaEventCreate(&e));
  return e;
}

void EventApi::destroy(cudaEvent_t e) noexcept { (void)cudaEventDestroy(e); }

void CudaEvent::synchronize() {
  if (!event_.get()) throw RuntimeError("event synchronized before it was recorded");
  wait_with_deadline([this] { return query(); }, device_timeout_from_env(),
                     fmt::format("GPU{}'s work", event_.device()));
}

bool CudaEvent::query() {
  if (!event_.get()) return false;
  // NotReady stays in the thread's last-error slot otherwise
  const cudaError_t e = query_clearing_not_ready([&] { return cudaEventQuery(event_.get()); },
                                                 cudaGetLastError, cudaErrorNotReady);
  if (e == cudaErrorNotReady) return false;
  XB_CUDA(e);
  return true;
}

double CudaEvent::elapsed_us_since(const Event& start) const {
  const auto* s = dynamic_cast<const CudaEvent*>(&start);
  if (!s || !s->event_.get() || !event_.get())
    throw RuntimeError("elapsed time of an unrecorded event");
  if (s->event_.device() != event_.device())
    throw RuntimeError("elapsed time between events of two GPUs");
  float ms = 0;
  XB_CUDA(cudaEventElapsedTime(&ms, s->event_.get(), event_.get()));
  return static_cast<double>(ms) * 1000.0;
}

// ---- streams ------------------------------------------------------------------

CudaStream::CudaStream(int device) : device_(device) {
  set_device(device);
  XB_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  if (stream_) (void)cudaStreamDestroy(stream_);
}

void CudaStream::copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off, Bytes n) {
  check_range(src, src_off, n, "copy");
  check_range(dst, dst_off, n, "copy");
  set_device(device_);
  XB_CUDA(cudaMemcpyAsync(static_cast<std::byte*>(dst.data()) + dst_off,
                          static_cast<const std::byte*>(src.data()) + src_off, n, cudaMemcpyDefault,
                          stream_));
}

void CudaStream::record(Event& event) {
  auto* e = dynamic_cast<CudaEvent*>(&event);
  if (!e) throw RuntimeError("event of another backend recorded on a CUDA stream");
  XB_CUDA(cudaEventRecord(e->on(device_), stream_));
}

void stall_for_test(cudaStream_t s, const char* where) {
  if (!test_stall(where)) return;
  static volatile int* never = [] {  // [0] never set; [1] the latch's timeout mark
    void* p = nullptr;
    XB_CUDA(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
    auto* f = static_cast<volatile int*>(p);
    f[0] = 0;
    f[1] = 0;
    return f;
  }();
  XB_CUDA(launch_latch(s, never, 600'000'000'000ULL));  // ten minutes, then it lets go
}

void CudaStream::synchronize() {
  wait_with_deadline([this] { return stream_done(stream_); }, device_timeout_from_env(),
                     fmt::format("GPU{}'s stream", device_));
}

bool stream_done(cudaStream_t s) {
  const cudaError_t e = query_clearing_not_ready([&] { return cudaStreamQuery(s); },
                                                 cudaGetLastError, cudaErrorNotReady);
  if (e == cudaErrorNotReady) return false;
  XB_CUDA(e);
  return true;
}

// ---- the backend --------------------------------------------------------------

CudaBackend::CudaBackend() {
  int n = 0;
  XB_CUDA(cudaGetDeviceCount(&n));
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    XB_CUDA(cudaGetDeviceProperties(&p, d));
    char bus[32] = {};
    XB_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    int khz = 0, sms = 0;
    XB_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d));
    XB_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
    GpuInfo g;
    g.pci = bus;
    for (auto& c : g.pci) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    g.sms = sms;
    g.max_tile = static_cast<int>(p.sharedMemPerBlockOptin);
    g.info.id = d;
    g.info.pci_bus_id = nvml_bus_id(bus);
    unsigned char uuid[16];
    for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(p.uuid.bytes[i]);
    g.info.uuid = nvml_uuid(uuid);
    g.model = p.name;
    g.info.memory = p.totalGlobalMem;
    g.info.clock_hz = khz * 1e3;
    g.info.cores = sms;
    gpus_.push_back(g);
  }
  read_numa(gpus_);
  for (auto& g : gpus_) {
    g.info.name = g.info.numa >= 0 ? fmt::format("GPU{} {} ({}, NUMA {})", g.info.id, g.model,
                                                 g.pci, g.info.numa)
                                   : fmt::format("GPU{} {} ({})", g.info.id, g.model, g.pci);
    devices_.push_back(g.info);
  }
  // Which pairs may copy directly; access is enabled on first use, so a rank
  // creates contexts only on the GPUs it touches.
  peer_ = peer_matrix(n, [](int s, int d) {
    int can = 0;
    XB_CUDA(cudaDeviceCanAccessPeer(&can, s, d));
    return can ? Support::yes()
               : Support::no(fmt::format(
                     "cudaDeviceCanAccessPeer({}, {}) = 0 (no NVLink or PCIe peer path)", s, d));
  });
  peer_enabled_.assign(peer_.size(), false);
}

void CudaBackend::enable_peer(int src, int dst) {
  const std::size_t i = pair_index(src, dst, gpus_.size());
  if (src == dst || peer_enabled_[i] || !peer_[i].ok) return;
  set_device(src);
  const cudaError_t e = cudaDeviceEnablePeerAccess(dst, 0);
  if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    throw RuntimeError(
        fmt::format("cudaDeviceEnablePeerAccess({} -> {}): {}", src, dst, cudaGetErrorString(e)));
  }
  (void)cudaGetLastError();
  peer_enabled_[i] = true;
}

const GpuInfo& CudaBackend::gpu(int device) const {
  check_device(device);
  return gpus_[static_cast<std::size_t>(device)];
}

void CudaBackend::check_device(int device) const {
  check_device_index(device, gpus_.size(), name(), "GPU");
}

Capabilities CudaBackend::capabilities() const {
  Capabilities c;
  c.backend = name();
  c.devices = static_cast<int>(devices_.size());
  c.device_ipc = true;
  return c;
}

Support CudaBackend::method_support(Method) const { return Support::yes(); }

Support CudaBackend::peer_access(int src, int dst) const {
  check_device(src);
  check_device(dst);
  return peer_[pair_index(src, dst, gpus_.size())];
}

std::string CudaBackend::link_type(int a, int b) const {
  check_device(a);
  check_device(b);
  return topology().links[pair_index(a, b, gpus_.size())];
}

const Topology& CudaBackend::topology() const {
  std::call_once(topo_once_, [this] { topo_ = read_topology(gpus_); });
  return topo_;
}

Bytes CudaBackend::free_memory(MemKind kind, int device) const {
  if (kind != MemKind::device) return available_memory();
  check_device(device);
  set_device(device);
  std::size_t free = 0, total = 0;
  XB_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

std::unique_ptr<Buffer> CudaBackend::allocate(MemKind kind, int device, Bytes size) {
  void* p = nullptr;
  switch (kind) {
    case MemKind::device: {
      check_device(device);
      check_device_answers(fmt::format("an allocation on GPU{}", device));
      set_device(device);
      const cudaError_t e = cudaMalloc(&p, size);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw RuntimeError(fmt::format("cudaMalloc of {} on GPU{}: {}", format_capacity(size),
                                       device, cudaGetErrorString(e)));
      }
      return std::make_unique<CudaBuffer>(kind, device, size, p, CudaBuffer::Owner::cuda_malloc);
    }
    case MemKind::pinned: {
      const cudaError_t e = cudaHostAlloc(&p, size, cudaHostAllocPortable | cudaHostAllocMapped);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw RuntimeError(
            fmt::format("cudaHostAlloc of {}: {}", format_capacity(size), cudaGetErrorString(e)));
      }
      return std::make_unique<CudaBuffer>(kind, -1, size, p, CudaBuffer::Owner::cuda_host);
    }
    case MemKind::pageable:
      return std::make_unique<CudaBuffer>(kind, -1, size, alloc_pageable(size),
                                          CudaBuffer::Owner::heap);
  }
  throw RuntimeError("unknown memory kind");
}

void CudaBackend::write(Buffer& dst, Bytes offset, std::span<const std::byte> src) {
  check_range(dst, offset, src.size(), "write");
  check_device_answers("a write to GPU memory");
  if (dst.device() >= 0) set_device(dst.device());
  XB_CUDA(cudaMemcpy(static_cast<std::byte*>(dst.data()) + offset, src.data(), src.size(),
                     cudaMemcpyDefault));
  // From pageable memory cudaMemcpy may return before the DMA has landed,
  // and the copiers' non-blocking streams do not wait for it: wait here.
  if (dst.kind() == MemKind::device) XB_CUDA(cudaDeviceSynchronize());
}

void CudaBackend::read(const Buffer& src, Bytes offset, std::span<std::byte> dst) {
  check_range(src, offset, dst.size(), "read");
  check_device_answers("a read of GPU memory");
  if (src.device() >= 0) set_device(src.device());
  XB_CUDA(cudaMemcpy(dst.data(), static_cast<const std::byte*>(src.data()) + offset, dst.size(),
                     cudaMemcpyDefault));
}

std::unique_ptr<Stream> CudaBackend::create_stream(int device, const CopierOptions&) {
  check_device(device);
  return std::make_unique<CudaStream>(device);
}

std::unique_ptr<Event> CudaBackend::create_event() { return std::make_unique<CudaEvent>(); }

std::unique_ptr<Copier> CudaBackend::copier(Method m, const CopierOptions& opts) {
  return make_copier(*this, m, opts);
}

Support CudaBackend::copier_fits(Method m, const CopierOptions& opts) const {
  return cuda::copier_fits(*this, m, opts);
}

std::unique_ptr<Buffer> CudaBackend::allocate_pinned_near(int device, Bytes size) {
  check_device(device);
  const int numa = gpu(device).info.numa;
  if (numa < 0) throw NotSupported(fmt::format("GPU{}'s NUMA node is unknown (hwloc)", device));
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw RuntimeError(fmt::format("mmap of {} failed", format_size(size)));
  {
    Hwloc topo(false);
    hwloc_nodeset_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_only(set, static_cast<unsigned>(numa));
    const int rc = hwloc_set_area_membind(topo.get(), p, size, set, HWLOC_MEMBIND_BIND,
                                          HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
    hwloc_bitmap_free(set);
    if (rc != 0) {
      munmap(p, size);
      throw NotSupported(fmt::format("cannot bind memory to NUMA node {}", numa));
    }
  }
  std::memset(p, 0, size);  // the pages land on the node now
  if (const cudaError_t e = cudaHostRegister(p, size, cudaHostRegisterPortable); e != cudaSuccess) {
    (void)cudaGetLastError();  // the caller may go on (doctor's numa check): no stale error
    munmap(p, size);
    check(e, "cudaHostRegister");
  }
  return std::make_unique<CudaBuffer>(MemKind::pinned, -1, size, p, CudaBuffer::Owner::registered);
}

// The libraries as loaded: the driver's and runtime's versions, NCCL's and
// cuBLAS's own (not the headers').
std::vector<std::pair<std::string, std::string>> CudaBackend::software() const {
  std::vector<std::pair<std::string, std::string>> out;
  const auto cuda_version = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  std::ifstream release("/sys/module/nvidia/version");  // the kernel driver's own release
  if (std::string r; std::getline(release, r) && !r.empty()) out.emplace_back("nvidia_driver", r);
  int v = 0;  // the CUDA API level the driver offers (13.0), not its release
  if (cudaDriverGetVersion(&v) == cudaSuccess) out.emplace_back("cuda_driver_api", cuda_version(v));
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) out.emplace_back("cuda_runtime", cuda_version(v));
  if (ncclGetVersion(&v) == ncclSuccess) out.emplace_back("nccl", nccl_version_name(v));
  // What xferbench was built against, beside what runs (the features follow the latter).
  out.emplace_back("nccl_headers", nccl_version_name(NCCL_VERSION_CODE));
  out.emplace_back("cuda_runtime_headers", cuda_version(CUDART_VERSION));
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    out.emplace_back("cublas", fmt::format("{}.{}.{}", major, minor, patch));
  return out;
}

LinkFacts CudaBackend::link_facts(int device) const {
  check_device(device);
  LinkFacts f = pcie_link_facts(gpu(device).pci);  // the GPU's link and its slot's maxima
  int clock = 0, bus = 0;
  if (cudaDeviceGetAttribute(&clock, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess) {
    f.mem_clock_khz = clock;
    f.mem_bus_bits = bus;
  }
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess) {
    f.arch_major = major;
    f.arch_minor = minor;
  }
  (void)cudaGetLastError();
  f.nvlink_links = topology().nvlinks[static_cast<std::size_t>(device)];
  f.source += ", CUDA attributes, NVML";
  return f;
}

ClockHolds CudaBackend::clock_holds(int device) const {
  check_device(device);
  return cuda::clock_holds(gpu(device));
}

Support CudaBackend::fused_fits(Runtime& rt, const FusedConfig& cfg) {
  return cuda::fused_fits(*this, rt, cfg);
}

std::unique_ptr<FusedGemmAllReduce> CudaBackend::fused_gemm_allreduce(Runtime& rt,
                                                                      const FusedConfig& cfg) {
  if (const Support s = fused_fits(rt, cfg); !s.ok) throw UsageError(s.reason);
  return make_fused(*this, rt, cfg);
}

namespace {

// Whether `p` is still the start of device memory (an exported buffer not
// yet freed). The query's error, if any, does not stay in the thread's slot.
bool still_device_memory(void* p) {
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e == cudaSuccess && a.type == cudaMemoryTypeDevice && a.devicePointer == p;
}

}  // namespace

std::string CudaBackend::export_buffer(const Buffer& buf) {
  if (buf.kind() != MemKind::device)
    throw NotSupported("only device memory is exported through CUDA IPC");
  set_device(buf.device());
  cudaIpcMemHandle_t h{};
  XB_CUDA(cudaIpcGetMemHandle(&h, buf.data()));
  std::string handle(reinterpret_cast<const char*>(&h), sizeof h);
  const std::lock_guard<std::mutex> lock(exports_mu_);
  // gemm-ar's sweep exports a fresh window per value: forget the freed ones
  std::erase_if(exports_, [](const auto& e) { return !still_device_memory(e.first); });
  exports_[buf.data()] = {handle, buf.device()};
  return handle;
}

std::unique_ptr<Buffer> CudaBackend::import_buffer(const std::string& handle, int device,
                                                   Bytes size) {
  check_device(device);
  cudaIpcMemHandle_t h{};
  if (handle.size() != sizeof h) throw RuntimeError("malformed CUDA IPC handle");
  std::memcpy(&h, handle.data(), sizeof h);
  {
    // A handle this process exported cannot be opened here (CUDA refuses
    // its own handles): the memory itself, on its own device, borrowed, with
    // peer access from `device` so a copy goes over NVLink, not the host.
    const std::lock_guard<std::mutex> lock(exports_mu_);
    for (const auto& [ptr, e] : exports_) {
      if (e.handle != handle) continue;
      if (e.device != device && peer_access(device, e.device).ok) enable_peer(device, e.device);
      return std::make_unique<CudaBuffer>(MemKind::device, e.device, size, ptr,
                                          CudaBuffer::Owner::borrowed);
    }
  }
  set_device(device);
  void* p = nullptr;
  XB_CUDA(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  return std::make_unique<CudaBuffer>(MemKind::device, device, size, p, CudaBuffer::Owner::ipc);
}

}  // namespace cuda

BackendStatus probe_cuda() {
  static const BackendStatus status = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) return BackendStatus{"cuda", true, "", false};
    if (e == cudaSuccess)  // the runtime says NoDevice rather than 0; kept for safety
      return failed_probe("cuda", "GPU", "no GPU found", true, "/proc/driver/nvidia/gpus");
    (void)cudaGetLastError();
    int runtime = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    std::string why = fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
    if (e == cudaErrorInsufficientDriver)
      why += fmt::format(": no NVIDIA driver here, or one older than CUDA {}.{} needs",
                         runtime / 1000, runtime % 1000 / 10);
    else if (e == cudaErrorNoDevice)
      if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES"))
        why += fmt::format(" (CUDA_VISIBLE_DEVICES={})", vis);
    if (e == cudaErrorSystemNotReady)
      why += ": on NVSwitch systems, is nvidia-fabricmanager running?";
    return failed_probe("cuda", "GPU", why,
                        e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver,
                        "/proc/driver/nvidia/gpus");
  }();
  return status;
}

std::unique_ptr<Backend> make_cuda_backend() {
  const BackendStatus s = probe_cuda();
  if (s.broken) throw RuntimeError(fmt::format("backend 'cuda' is not usable: {}", s.reason));
  if (!s.available) throw UsageError(fmt::format("backend 'cuda' is not available: {}", s.reason));
  return std::make_unique<cuda::CudaBackend>();
}

}  // namespace xb
