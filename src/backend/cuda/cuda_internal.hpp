#pragma once
// Internal to backend/cuda: the concrete backend, buffers, streams, events
// and the copier. Only cuda_*.cpp and nccl_communicator.cpp include this.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backend/common/device_common.hpp"
#include "backend/cuda/cuda_backend.hpp"

namespace xb::cuda {

// Throws RuntimeError "what: <CUDA error string> (<name>)" unless e is success.
void check(cudaError_t e, const char* what);
#define XB_CUDA(call) ::xb::cuda::check((call), #call)

void set_device(int device);

// Whether the stream's work is done (cudaStreamQuery; NotReady cleared from
// the thread's error slot); throws on an error.
bool stream_done(cudaStream_t s);

// The test seam XFERBENCH_TEST_STALL (core/test_seam.hpp): when it names
// `where` ("copy", "nccl"), queues on `s` a kernel that spins for ten
// minutes, so that the wait after it meets its deadline.
void stall_for_test(cudaStream_t s, const char* where);

class CudaBuffer final : public Buffer {
 public:
  // registered: mmap + cudaHostRegister; borrowed: another buffer's memory, not freed here
  enum class Owner { cuda_malloc, cuda_host, heap, ipc, registered, borrowed };
  CudaBuffer(MemKind kind, int device, Bytes size, void* data, Owner owner)
      : Buffer(kind, device, size, data), owner_(owner) {}
  ~CudaBuffer() override;

 private:
  Owner owner_;
};

struct EventApi {
  using Handle = cudaEvent_t;
  static cudaEvent_t create(int device);
  static void destroy(cudaEvent_t e) noexcept;
};

class CudaEvent final : public Event {
 public:
  void synchronize() override;
  bool query() override;
  double elapsed_us_since(const Event& start) const override;
  // The event, created on `device` (re-created if it lived on another).
  cudaEvent_t on(int device) { return event_.on(device); }

 private:
  DeviceEventHandle<EventApi> event_;
};

class CudaStream final : public Stream {
 public:
  explicit CudaStream(int device);
  ~CudaStream() override;
  int device() const override { return device_; }
  void copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off, Bytes n) override;
  void record(Event& event) override;
  void synchronize() override;
  cudaStream_t get() const { return stream_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

struct GpuInfo {
  DeviceInfo info;
  std::string model;  // "NVIDIA H200"
  std::string pci;    // "0000:17:00.0"
  int sms = 0;
  int max_tile = 0;  // opt-in shared memory per block, bytes
};

// What read_topology finds: the link types between GPUs in nvidia-smi
// topo's vocabulary, and each GPU's active NVLinks.
struct Topology {
  std::vector<std::string> links;  // row-major GPU x GPU
  std::vector<int> nvlinks;        // per GPU: its active NVLinks (NVML; 0 without NVML or NVLink)
};

class CudaBackend final : public Backend {
 public:
  CudaBackend();
  std::string name() const override { return "cuda"; }
  const std::vector<DeviceInfo>& devices() const override { return devices_; }
  Capabilities capabilities() const override;
  Support method_support(Method m) const override;
  Support peer_access(int src, int dst) const override;
  std::string link_type(int a, int b) const override;
  Bytes free_memory(MemKind kind, int device) const override;
  std::unique_ptr<Buffer> allocate(MemKind kind, int device, Bytes size) override;
  void write(Buffer& dst, Bytes offset, std::span<const std::byte> src) override;
  void read(const Buffer& src, Bytes offset, std::span<std::byte> dst) override;
  std::unique_ptr<Stream> create_stream(int device, const CopierOptions& opts) override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Copier> copier(Method m, const CopierOptions& opts) override;
  Support copier_fits(Method m, const CopierOptions& opts) const override;
  Support communicator_fits(Runtime& rt) override;
  std::string export_buffer(const Buffer& buf) override;
  std::unique_ptr<Buffer> import_buffer(const std::string& handle, int device, Bytes size) override;
  // NCCL over the runtime's ranks, one GPU per rank (the host-local rank
  // modulo the visible GPUs); the unique id is broadcast through the runtime.
  std::unique_ptr<Communicator> communicator(Runtime& rt) override;
  // gemm-ar's fused operator (cuda_fused.cpp): one GPU per local rank
  // (modulo the GPUs), several ranks on one GPU allowed.
  Support fused_fits(Runtime& rt, const FusedConfig& cfg) override;
  // PCIe link from sysfs (by the GPU's PCI address), memory clock and bus
  // width from CUDA attributes.
  LinkFacts link_facts(int device) const override;
  std::vector<std::pair<std::string, std::string>> software() const override;
  ClockHolds clock_holds(int device) const override;
  // mmap'd memory bound to the GPU's NUMA node (hwloc), page-locked with
  // cudaHostRegister.
  std::unique_ptr<Buffer> allocate_pinned_near(int device, Bytes size) override;
  std::unique_ptr<FusedGemmAllReduce> fused_gemm_allreduce(Runtime& rt,
                                                           const FusedConfig& cfg) override;

  const GpuInfo& gpu(int device) const;
  // Enables src's access to dst's memory once (a no-op for src == dst).
  void enable_peer(int src, int dst);

 private:
  void check_device(int device) const;
  std::vector<GpuInfo> gpus_;
  std::vector<DeviceInfo> devices_;
  std::vector<Support> peer_;  // row-major src x dst
  std::vector<bool> peer_enabled_;
  const Topology& topology() const;  // read once, on first use
  std::mutex exports_mu_;
  // What this process exported, by address: its handle and device. An
  // export drops the entries whose memory was freed and replaces the one of
  // its own address, so it holds at most the live exported allocations.
  struct Export {
    std::string handle;
    int device = -1;
  };
  std::map<void*, Export> exports_;
  mutable std::once_flag topo_once_;
  mutable Topology topo_;
};

std::unique_ptr<Copier> make_copier(CudaBackend& backend, Method m, const CopierOptions& opts);
Support fused_fits(CudaBackend& backend, Runtime& rt, const FusedConfig& cfg);
std::unique_ptr<FusedGemmAllReduce> make_fused(CudaBackend& backend, Runtime& rt,
                                               const FusedConfig& cfg);
// Whether make_copier would take these options (the --tile limits of every GPU).
Support copier_fits(const CudaBackend& backend, Method m, const CopierOptions& opts);

// Fills each GPU's nearest NUMA node (hwloc).
void read_numa(std::vector<GpuInfo>& gpus);
// NVLink counts from NVML when its library loads at run time, else the PCIe
// path hwloc sees. Slow (NVML start-up): the backend reads it once, when
// `topo` or doctor first asks.
Topology read_topology(const std::vector<GpuInfo>& gpus);
// Its clock-hold counters now (NVML's violation status).
ClockHolds clock_holds(const GpuInfo& gpu);

}  // namespace xb::cuda
