// gemm-ar's fused GEMM + AllReduce on NVIDIA GPUs (after pto-isa's GEMM+AllReduce example):
// cuBLAS GEMMs in waves of tile rows on a compute stream, and the communication of
// coll/fused.hpp's plan either in a persistent comm kernel (sm) or in copy
// engine copies plus a reduce kernel (ce), through windows of device memory
// shared with CUDA IPC. Every phase is timed with device events.
#include <cublas_v2.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backend/common/device_common.hpp"
#include "backend/common/last_error.hpp"
#include "backend/common/placement.hpp"
#include "backend/cuda/cuda_internal.hpp"
#include "backend/cuda/fused_kernels.hpp"
#include "coll/fp16.hpp"
#include "coll/fused.hpp"
#include "core/error.hpp"
#include "runtime/runtime.hpp"

namespace xb::cuda {
namespace {

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(fmt::format("{}: {}", what, cublasGetStatusString(s)));
}
#define XB_BLAS(call) check_blas((call), #call)

constexpr std::size_t kBlasWorkspace = 32u << 20;  // fixed: cuBLAS never allocates mid-phase

// Device memory of this operator (cudaMalloc; freed on destruction).
struct DeviceMem {
  void* p = nullptr;
  DeviceMem() = default;
  explicit DeviceMem(std::size_t n) {
    XB_CUDA(cudaMalloc(&p, std::max<std::size_t>(n, 16)));
    XB_CUDA(cudaMemset(p, 0, std::max<std::size_t>(n, 16)));
  }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  DeviceMem(DeviceMem&& o) noexcept : p(o.p) { o.p = nullptr; }
  DeviceMem& operator=(DeviceMem&& o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  ~DeviceMem() {
    if (p) (void)cudaFree(p);
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::half:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

int compute_major(int device) {
  int major = 0;
  XB_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major;
}

bool communicates(FusedPhase p) { return p != FusedPhase::compute; }

// The dynamic shared memory each comm block asks for: on the sm engine just
// over half an SM's (so one block per SM), none on ce.
std::size_t comm_smem(CudaBackend& be, int dev, CommEngine engine) {
  if (engine != CommEngine::sm) return 0;
  int per_sm = 0;
  XB_CUDA(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  const int cap = be.gpu(dev).max_tile;  // the opt-in maximum per block
  return static_cast<std::size_t>(std::min(per_sm / 2 + 1024, cap > 0 ? cap : per_sm / 2));
}

class CudaFused final : public FusedGemmAllReduce {
 public:
  CudaFused(CudaBackend& be, Runtime& rt, const FusedConfig& cfg)
      : be_(be), rt_(rt), cfg_(cfg), dev_(rt.local_rank() % static_cast<int>(be.devices().size())) {
    set_device(dev_);
    // Every rank must cut the same waves (the plan's no-deadlock order), so
    // the wave size comes from the smallest GPU of all ranks.
    const int sms = static_cast<int>(rt.min(be.gpu(dev_).sms));
    plan_ =
        make_fused_plan(cfg, rt.rank(), cfg.engine == CommEngine::sm ? sms - cfg.comm_blocks : sms,
                        cfg.engine == CommEngine::sm);
    const Tiling& t = plan_.t;
    esize_ = dtype_size(cfg.dtype);
    A_ = DeviceMem(static_cast<std::size_t>(t.Mp * t.shape.K) * esize_);
    B_ = DeviceMem(static_cast<std::size_t>(t.shape.K * t.Np) * esize_);
    C_ = DeviceMem(static_cast<std::size_t>(t.Mp * t.Np) * sizeof(float));
    wave_ready_ = DeviceMem(static_cast<std::size_t>(plan_.waves) * sizeof(unsigned));
    stuck_ = DeviceMem(sizeof(FusedStuck));
    items_ = DeviceMem(plan_.items.size() * sizeof(FusedItem));
    offsets_ = DeviceMem(plan_.offsets.size() * sizeof(std::int32_t));
    XB_CUDA(cudaMemcpy(items_.p, plan_.items.data(), plan_.items.size() * sizeof(FusedItem),
                       cudaMemcpyHostToDevice));
    XB_CUDA(cudaMemcpy(offsets_.p, plan_.offsets.data(),
                       plan_.offsets.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice));
    workspace_ = DeviceMem(kBlasWorkspace);

    // The window, zeroed, shared with every rank through CUDA IPC.
    window_ = be.allocate(MemKind::device, dev_, plan_.window.bytes);
    XB_CUDA(cudaMemset(window_->data(), 0, plan_.window.bytes));
    XB_CUDA(cudaDeviceSynchronize());
    const auto handles = rt.allgather(be.export_buffer(*window_));
    const auto places = rt.allgather(be.gpu(dev_).pci);  // one host: the PCI address names the GPU
    for (int r = 0; r < rt.size(); ++r) {
      std::byte* base = nullptr;
      if (r == rt.rank()) {
        base = static_cast<std::byte*>(window_->data());
      } else {
        peers_.push_back(
            be.import_buffer(handles[static_cast<std::size_t>(r)], dev_, plan_.window.bytes));
        base = static_cast<std::byte*>(peers_.back()->data());
      }
      args_.stage[r] = reinterpret_cast<float*>(base + plan_.window.stage);
      args_.out[r] = reinterpret_cast<float*>(base + plan_.window.output);
      args_.arrival[r] = reinterpret_cast<unsigned*>(base + plan_.window.arrival);
      args_.done[r] = reinterpret_cast<unsigned*>(base + plan_.window.done);
      if (places[static_cast<std::size_t>(r)] == places[static_cast<std::size_t>(rt.rank())])
        ++sharing_;
    }
    args_.items = items_.as<FusedItem>();
    args_.offsets = offsets_.as<std::int32_t>();
    args_.rank = rt.rank();
    args_.nranks = rt.size();
    args_.tiles_n = t.tiles_n;
    args_.Np = t.Np;
    args_.base_m = t.shape.base_m;
    args_.base_n = t.shape.base_n;
    args_.comm_sub_m = t.shape.comm_sub_m;
    args_.subtiles = t.subtiles;
    args_.stage_slot = plan_.owned_rows_max() * t.shape.base_m * t.Np;
    args_.C = C_.as<float>();
    args_.wave_ready = wave_ready_.as<unsigned>();
    args_.drop_tile = static_cast<std::int32_t>(cfg.drop_tile);
    args_.timeout_ns = static_cast<unsigned long long>(cfg.watchdog_s * 1e9);
    args_.stuck = stuck_.as<FusedStuck>();

    // The comm streams at the highest priority: their blocks are dispatched
    // ahead of queued GEMM blocks instead of after a wave drains.
    int least = 0, greatest = 0;
    XB_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    XB_CUDA(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    for (cudaStream_t* s : {&comm_, &gather_})
      XB_CUDA(cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, greatest));
    for (cudaEvent_t* e : {&start_, &compute_end_, &comm_end_}) XB_CUDA(cudaEventCreate(e));
    wave_done_.resize(static_cast<std::size_t>(plan_.waves));
    for (auto& e : wave_done_) XB_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    blas_ = make_blas();
    // sm: the waves are planned for the SMs the comm blocks leave; cuBLAS is
    // told so, or its persistent kernels size each wave for the whole GPU and
    // the displaced CTAs run as a second round (review finding 3). The GEMM
    // alone (the compute phase: the unfused reference and the sweep's
    // compute-alone) runs on a second handle with every SM (review N8).
    if (cfg.engine == CommEngine::sm) {
      XB_BLAS(cublasSetSmCountTarget(blas_, be.gpu(dev_).sms - cfg.comm_blocks));
      blas_alone_ = make_blas();
    }
    XB_CUDA(preload_fused_kernels());
    // sm: one comm block per SM. Pending comm blocks would otherwise pile
    // onto the first SMs the GEMM frees (6 or so to an SM, by registers), so
    // --comm-blocks would not mean SMs (review finding 3). A block asking for
    // just over half an SM's shared memory cannot share an SM with another.
    comm_smem_ = comm_smem(be, dev_, cfg.engine);
    if (comm_smem_ > 0) XB_CUDA(reserve_fused_comm_smem(comm_smem_));
    rt.barrier();  // every window zeroed before any rank writes into it
  }

  ~CudaFused() override {
    (void)cudaSetDevice(dev_);
    (void)cudaDeviceSynchronize();
    for (cublasHandle_t h : {blas_, blas_alone_})
      if (h) (void)cublasDestroy(h);
    for (auto& e : wave_done_) (void)cudaEventDestroy(e);
    for (cudaEvent_t e : {start_, compute_end_, comm_end_})
      if (e) (void)cudaEventDestroy(e);
    for (cudaStream_t s : {compute_, comm_, gather_})
      if (s) (void)cudaStreamDestroy(s);
  }

  void poison(bool product) override {
    set_device(dev_);
    const Tiling& t = plan_.t;
    const int me = rt_.rank();
    XB_CUDA(cudaMemset(args_.stage[me], 0xFF,
                       static_cast<std::size_t>(t.nranks * args_.stage_slot) * sizeof(float)));
    XB_CUDA(cudaMemset(args_.out[me], 0xFF, static_cast<std::size_t>(t.Mp * t.Np) * sizeof(float)));
    if (product)
      XB_CUDA(cudaMemset(C_.p, 0xFF, static_cast<std::size_t>(t.Mp * t.Np) * sizeof(float)));
    XB_CUDA(cudaDeviceSynchronize());
    rt_.barrier();  // every window poisoned before any rank writes into another's
  }

  void close() override {
    set_device(dev_);
    XB_CUDA(cudaDeviceSynchronize());
    peers_.clear();  // cudaIpcCloseMemHandle of every import
    rt_.barrier();   // every rank has closed its imports of this window
    window_.reset();
  }

  void set_inputs(const std::vector<float>& A, const std::vector<float>& B) override {
    set_device(dev_);
    upload(A, A_);
    upload(B, B_);
    // cudaMemcpy from pageable memory may return before the data landed, and
    // the non-blocking compute stream does not wait for the legacy stream.
    XB_CUDA(cudaDeviceSynchronize());
    for (cublasHandle_t h : {blas_, blas_alone_})  // loads cuBLAS's kernels before any timed phase
      if (h) gemm_waves(false, h);
    XB_CUDA(cudaStreamSynchronize(compute_));
  }

  FusedTimes run(FusedPhase phase) override {
    set_device(dev_);
    if (communicates(phase)) ++epoch_;
    args_.epoch = epoch_;
    args_.done_target = done_target(epoch_, plan_.t);
    rt_.barrier(Runtime::Wait::spin);  // the timed phase starts together
    XB_CUDA(cudaMemsetAsync(stuck_.p, 0, sizeof(FusedStuck), compute_));
    XB_CUDA(cudaEventRecord(start_, compute_));
    const bool signal = phase == FusedPhase::sequential || phase == FusedPhase::pipelined;
    if (phase != FusedPhase::comm) {
      gemm_waves(signal, phase == FusedPhase::compute && blas_alone_ ? blas_alone_ : blas_);
      XB_CUDA(cudaEventRecord(compute_end_, compute_));
    }
    switch (phase) {
      case FusedPhase::compute:
        break;
      case FusedPhase::comm:
      case FusedPhase::interference:
        enqueue_comm(Trigger::prefilled);
        break;
      case FusedPhase::sequential:
        enqueue_comm(Trigger::compute_end);
        break;
      case FusedPhase::pipelined:
        enqueue_comm(Trigger::waves);
        break;
    }
    wait(phase);
    FusedStuck stuck;
    XB_CUDA(cudaMemcpy(&stuck, stuck_.p, sizeof stuck, cudaMemcpyDeviceToHost));
    if (stuck.what != FusedStuck::none) throw RuntimeError(describe(stuck, cfg_.watchdog_s));
    FusedTimes t;
    if (phase != FusedPhase::comm) t.compute_us = elapsed(compute_end_);
    if (communicates(phase)) t.comm_us = elapsed(comm_end_);
    t.total_us = std::max(t.compute_us, t.comm_us);
    return t;
  }

  std::vector<float> output() override {
    set_device(dev_);
    std::vector<float> out(static_cast<std::size_t>(plan_.t.Mp * plan_.t.Np));
    XB_CUDA(cudaMemcpy(out.data(), args_.out[rt_.rank()], out.size() * sizeof(float),
                       cudaMemcpyDeviceToHost));
    return out;
  }

  const FusedPlan& plan() const override { return plan_; }

  std::string placement() const override {
    std::string s = fmt::format("GPU{} ({})", dev_, be_.gpu(dev_).model);
    if (sharing_ > 1)
      s += fmt::format(
          ", shared by {} ranks: they time-share it, so compute and comm of one "
          "rank also compete with the other ranks'",
          sharing_);
    return s;
  }

 private:
  enum class Trigger { prefilled, compute_end, waves };

  void upload(const std::vector<float>& v, DeviceMem& dst) {
    std::vector<std::uint16_t> h;
    const void* src = v.data();
    if (cfg_.dtype != DType::float32) {
      h.resize(v.size());
      for (std::size_t i = 0; i < v.size(); ++i)
        h[i] = cfg_.dtype == DType::half ? float_to_half(v[i]) : float_to_bf16(v[i]);
      src = h.data();
    }
    XB_CUDA(cudaMemcpy(dst.p, src, v.size() * esize_, cudaMemcpyHostToDevice));
  }

  // Row-major C = A x B is column-major C^T = B^T x A^T: cuBLAS gets B first.
  cublasHandle_t make_blas() {
    cublasHandle_t h = nullptr;
    XB_BLAS(cublasCreate(&h));
    XB_BLAS(cublasSetStream(h, compute_));
    XB_BLAS(cublasSetWorkspace(h, workspace_.p, kBlasWorkspace));  // one stream: never at once
    return h;
  }

  void gemm_waves(bool signal, cublasHandle_t blas) {
    const Tiling& t = plan_.t;
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t type = cuda_type(cfg_.dtype);
    for (int w = 0; w < plan_.waves; ++w) {
      const std::int64_t r0 = plan_.wave_first_row(w) * t.shape.base_m;
      const auto rows = static_cast<int>(plan_.wave_row_count(w) * t.shape.base_m);
      const auto* a = A_.as<const std::byte>() + static_cast<std::size_t>(r0 * t.shape.K) * esize_;
      XB_BLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(t.Np), rows,
                           static_cast<int>(t.shape.K), &one, B_.p, type, static_cast<int>(t.Np), a,
                           type, static_cast<int>(t.shape.K), &zero, C_.as<float>() + r0 * t.Np,
                           CUDA_R_32F, static_cast<int>(t.Np), CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT));
      if (!signal) continue;
      if (cfg_.engine == CommEngine::sm)
        XB_CUDA(launch_set_flags(compute_, wave_ready_.as<unsigned>() + w, 1, epoch_));
      else
        XB_CUDA(cudaEventRecord(wave_done_[static_cast<std::size_t>(w)], compute_));
    }
  }

  void enqueue_comm(Trigger trigger) {
    const cudaEvent_t from = trigger == Trigger::compute_end ? compute_end_ : start_;
    XB_CUDA(cudaStreamWaitEvent(comm_, from));
    if (cfg_.engine == CommEngine::sm) {
      if (trigger == Trigger::prefilled)
        XB_CUDA(launch_set_flags(comm_, wave_ready_.as<unsigned>(), plan_.waves, epoch_));
      XB_CUDA(launch_fused_comm(comm_, args_, plan_.comm_blocks, comm_smem_));
      XB_CUDA(cudaEventRecord(comm_end_, comm_));
      return;
    }
    // ce: copy engines push each finished tile row to its owner and bump
    // its counters; the reduce kernel on the gather stream does the
    // gathers. The copies are queued first, so a gather stream that shares
    // a hardware queue with the copy stream cannot hold them back.
    const Tiling& t = plan_.t;
    const std::int64_t row_elems = t.shape.base_m * t.Np;
    for (int w = 0; w < plan_.waves; ++w) {
      if (trigger == Trigger::waves)
        XB_CUDA(cudaStreamWaitEvent(comm_, wave_done_[static_cast<std::size_t>(w)]));
      const std::int64_t first = plan_.wave_first_row(w), rows = plan_.wave_row_count(w);
      for (std::int64_t row = first; row < first + rows; ++row) {
        const int owner = static_cast<int>(row % t.nranks);
        float* dst =
            args_.stage[owner] + rt_.rank() * args_.stage_slot + row / t.nranks * row_elems;
        XB_CUDA(cudaMemcpyAsync(dst, C_.as<float>() + row * row_elems,
                                static_cast<std::size_t>(row_elems) * sizeof(float),
                                cudaMemcpyDeviceToDevice, comm_));
      }
      XB_CUDA(launch_arrive_rows(comm_, args_, first, rows));
    }
    XB_CUDA(cudaStreamWaitEvent(gather_, from));
    XB_CUDA(launch_fused_comm(gather_, args_, plan_.comm_blocks));
    XB_CUDA(cudaEventRecord(comm_end_, gather_));
  }

  // Waits for the phase's last event; a device that stops answering past
  // the watchdog (a kernel stuck without its own deadline) is an error too.
  void wait(FusedPhase phase) {
    const cudaEvent_t last = communicates(phase) ? comm_end_ : compute_end_;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(2 * cfg_.watchdog_s + 60);
    for (cudaEvent_t e : {compute_end_, last}) {
      if (phase == FusedPhase::comm && e == compute_end_) continue;
      while (true) {
        // NotReady must not reach the next launch's error check
        const cudaError_t q = query_clearing_not_ready([&] { return cudaEventQuery(e); },
                                                       cudaGetLastError, cudaErrorNotReady);
        if (q == cudaSuccess) break;
        if (q != cudaErrorNotReady) XB_CUDA(q);
        if (std::chrono::steady_clock::now() > deadline)
          throw RuntimeError(
              fmt::format("watchdog: GPU{} did not finish the fused phase within {:.0f} s", dev_,
                          2 * cfg_.watchdog_s + 60));
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    if (phase != FusedPhase::compute) XB_CUDA(cudaStreamSynchronize(comm_));
  }

  double elapsed(cudaEvent_t end) const {
    float ms = 0;
    XB_CUDA(cudaEventElapsedTime(&ms, start_, end));
    return static_cast<double>(ms) * 1000.0;
  }

  CudaBackend& be_;
  Runtime& rt_;
  FusedConfig cfg_;
  int dev_;
  FusedPlan plan_;
  std::size_t esize_ = 4;
  DeviceMem A_, B_, C_, wave_ready_, stuck_, items_, offsets_, workspace_;
  std::unique_ptr<Buffer> window_;
  std::vector<std::unique_ptr<Buffer>> peers_;
  int sharing_ = 0;  // ranks on this GPU, this one included
  FusedArgs args_;
  unsigned epoch_ = 0;
  cudaStream_t compute_ = nullptr, comm_ = nullptr, gather_ = nullptr;
  cudaEvent_t start_ = nullptr, compute_end_ = nullptr, comm_end_ = nullptr;
  std::vector<cudaEvent_t> wave_done_;
  cublasHandle_t blas_ = nullptr, blas_alone_ = nullptr;  // sm: blas_ on the SMs comm leaves
  std::size_t comm_smem_ = 0;  // sm: dynamic shared memory per comm block (one per SM)
};

}  // namespace

namespace {

// What fused_fits asks of the device itself: peer atomics, resident comm
// blocks, bf16, memory. Makes CUDA calls, which may throw.
Support device_fits(CudaBackend& be, Runtime& rt, const FusedConfig& cfg, int dev) {
  const int gpus = static_cast<int>(be.devices().size());
  const GpuInfo& g = be.gpu(dev);
  // Peers on other GPUs are written and counted through P2P: this GPU must
  // reach each of them with native atomics (else two sources adding to one
  // counter could lose an update).
  for (int r = 0; r < std::min(cfg.nranks, gpus); ++r) {
    const int peer = r % gpus;
    if (peer == dev) continue;
    int access = 0, atomics = 0;
    XB_CUDA(cudaDeviceCanAccessPeer(&access, dev, peer));
    if (access)
      XB_CUDA(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, dev, peer));
    if (!access || !atomics)
      return Support::no(fmt::format(
          "gemm-ar on cuda needs peer access with native atomics between GPU{} and GPU{}, which "
          "this machine does not give: run the ranks on one GPU, or --backend host",
          dev, peer));
  }
  // Review finding 12: every comm block spins on work other blocks
  // publish, so all of them must be resident at once. Under MPS or an
  // SM-limited context fewer may fit than the SM count says.
  set_device(dev);
  const std::size_t smem = comm_smem(be, dev, cfg.engine);
  if (smem > 0) XB_CUDA(reserve_fused_comm_smem(smem));
  int per_sm = 0, sms = 0;
  XB_CUDA(fused_comm_blocks_per_sm(&per_sm, smem));
  XB_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int resident =
      resident_blocks(per_sm, sms, std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
  if (cfg.comm_blocks > resident)
    return Support::no(fmt::format(
        "--comm-blocks {}: GPU{} keeps at most {} comm blocks resident at once ({} per SM x the "
        "SMs this context may use), and blocks that wait behind spinning ones would stall the "
        "run: lower --comm-blocks",
        cfg.comm_blocks, dev, resident, per_sm));
  if (cfg.dtype == DType::bf16 && compute_major(dev) < 8)
    return Support::no(
        fmt::format("--dtype bf16: GPU{} ({}) has no bf16 GEMM (before sm_80)", dev, g.model));
  const FusedPlan p = make_fused_plan(cfg, rt.rank(), g.sms, cfg.engine == CommEngine::sm);
  const Tiling& t = p.t;
  const auto need =
      p.window.bytes +
      static_cast<Bytes>(t.Mp * t.shape.K + t.shape.K * t.Np) * dtype_size(cfg.dtype) +
      static_cast<Bytes>(t.Mp * t.Np) * sizeof(float) + kBlasWorkspace;
  const Bytes free = be.free_memory(MemKind::device, dev);
  if (free && need > free)
    return Support::no(fmt::format("the shape needs {} on GPU{}, {} is free", format_capacity(need),
                                   dev, format_capacity(free)));
  return Support::yes();
}

}  // namespace

Support fused_fits(CudaBackend& be, Runtime& rt, const FusedConfig& cfg) {
  if (!rt.single_host())
    return Support::no(
        "gemm-ar on cuda shares device windows through CUDA IPC: all ranks on one host");
  if (cfg.nranks > kFusedMaxRanks)
    return Support::no(fmt::format("gemm-ar on cuda takes at most {} ranks", kFusedMaxRanks));
  if (cfg.dtype != DType::half && cfg.dtype != DType::bf16 && cfg.dtype != DType::float32)
    return Support::no(fmt::format("--dtype {}: the fused GEMM takes half, bf16 or float inputs",
                                   to_string(cfg.dtype)));
  if (cfg.shape.base_n % 4 != 0)
    return Support::no(fmt::format(
        "--base-n {}: the comm kernel moves 16-byte vectors, so base-n must be a multiple of 4",
        cfg.shape.base_n));
  const int dev = rt.local_rank() % static_cast<int>(be.devices().size());
  const GpuInfo& g = be.gpu(dev);
  if (cfg.comm_blocks >= g.sms)
    return Support::no(fmt::format(
        "--comm-blocks {}: GPU{} ({}) has {} SMs, and the GEMM needs at least one of them",
        cfg.comm_blocks, dev, g.model, g.sms));
  // Any failure, a CUDA error too, is this rank's answer to the caller's
  // rt.agree (review N9): an exception escaping here would end this rank
  // alone, without its message, and leave the others waiting in agree.
  try {
    return device_fits(be, rt, cfg, dev);
  } catch (const std::exception& e) {
    return Support::no(e.what());
  }
}

std::unique_ptr<FusedGemmAllReduce> make_fused(CudaBackend& be, Runtime& rt,
                                               const FusedConfig& cfg) {
  return std::make_unique<CudaFused>(be, rt, cfg);
}

}  // namespace xb::cuda
