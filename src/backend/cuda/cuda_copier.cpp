// The CUDA backend's copier: each op on its own stream, queued behind a
// latch kernel so all ops start together (nvbandwidth's method), timed with
// events around the copy. `dma` = cudaMemcpyAsync (copy engines); `core` =
// SM copy kernels, direct or staged through shared memory, the device's
// resident blocks shared among the legs it executes (copy_blocks_per_leg).
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <map>

#include "backend/common/device_common.hpp"
#include "backend/common/device_wait.hpp"
#include "backend/cuda/cuda_internal.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "core/error.hpp"

namespace xb::cuda {
namespace {

constexpr unsigned long long kLatchTimeoutNs = 10'000'000'000ULL;  // never hang

using CudaLanes = Lanes<CudaStream, CudaEvent>;

class CudaCopier final : public Copier {
 public:
  CudaCopier(CudaBackend& backend, Method m, const CopierOptions& opts)
      : backend_(backend), method_(m), opts_(opts) {
    void* p = nullptr;
    XB_CUDA(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
    flag_ = static_cast<int*>(p);
    flag_[0] = 0;
    flag_[1] = 0;
  }
  ~CudaCopier() override {
    lanes_.clear();
    // A device past its deadline may still read the flag (device_wait.hpp).
    if (flag_ && device_hung().empty()) (void)cudaFreeHost(const_cast<int*>(flag_));
  }

  Method method() const override { return method_; }

  CopyTiming run(std::span<const CopyOp> ops) override {
    // Everything that may block or fail runs before any latch spins.
    check_ops(ops);
    std::map<int, int> legs;  // ops per executing device: SM kernels share its SMs
    for (const CopyOp& op : ops) ++legs[executing_device(op)];
    bool latch = true;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const CopyOp& op = ops[i];
      const bool pageable =
          op.src->kind() == MemKind::pageable || op.dst->kind() == MemKind::pageable;
      if (pageable && method_ == Method::core)
        throw NotSupported(
            "core (SM kernel) copies need pinned host memory: kernels cannot address pageable "
            "memory (use --host-mem pinned)");
      // A pageable cudaMemcpyAsync may block the caller until it is done: no latch.
      latch = latch && !pageable;
      const int dev = executing_device(op);
      prepare(dev);
      for (const Buffer* b : {op.src, static_cast<const Buffer*>(op.dst)})
        if (b->kind() == MemKind::device && b->device() != dev)
          backend_.enable_peer(dev, b->device());
      lanes_.at(i, dev);
    }
    if (method_ == Method::core) check_coresident(legs);
    flag_[0] = 0;
    flag_[1] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    // Without the latch each copy starts as it is issued (and a pageable
    // one may return only when done): the batch is timed on the host.
    const auto issued = std::chrono::steady_clock::now();
    try {
      for (std::size_t i = 0; i < ops.size(); ++i)
        enqueue(lanes_[i], ops[i], latch, legs[executing_device(ops[i])]);
    } catch (...) {
      release();  // never leave a latch spinning
      throw;
    }
    release();
    CopyTiming t = lanes_.timing(ops.size(), latch ? std::nullopt : std::optional(issued));
    if (flag_[1])
      throw RuntimeError("the start latch timed out: copies were queued for more than 10 s");
    return t;
  }

 private:
  void enqueue(CudaLanes::Lane& lane, const CopyOp& op, bool latch, int legs) {
    const cudaStream_t s = lane.stream->get();
    const int dev = lane.stream->device();
    set_device(dev);
    if (latch) XB_CUDA(launch_latch(s, flag_, kLatchTimeoutNs));
    stall_for_test(s, "copy");
    lane.stream->record(lane.start);
    if (method_ == Method::dma)
      XB_CUDA(cudaMemcpyAsync(op.dst->data(), op.src->data(), op.bytes, cudaMemcpyDefault, s));
    else
      XB_CUDA(
          launch_copy(s, op.dst->data(), op.src->data(), op.bytes, blocks(dev, legs), opts_.tile));
    lane.stream->record(lane.end);
  }

  void release() {
    __atomic_store_n(&flag_[0], 1, __ATOMIC_SEQ_CST);  // every queued copy starts now
  }

  // Kernels loaded and the tile allowed on a device before its first latch
  // (with lazy loading, a first launch behind a spinning latch could wait on
  // it), and how many copy blocks the device keeps resident.
  void prepare(int device) {
    if (resident_.count(device)) return;
    set_device(device);
    XB_CUDA(preload_kernels());
    int per_sm = 0;
    if (method_ == Method::core) {
      if (opts_.tile) XB_CUDA(allow_tile(opts_.tile));
      XB_CUDA(copy_blocks_per_sm(opts_.tile, &per_sm));
    }
    resident_[device] = resident_blocks(per_sm, backend_.gpu(device).sms,
                                        std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
  }

  int blocks(int device, int legs) const {
    return copy_blocks_per_leg(backend_.gpu(device).sms, legs, resident_.at(device), opts_.threads);
  }

  // SM-kernel copies that start together must all be resident at once, or
  // the later ones' times include the earlier ones' runs: waived, not timed.
  void check_coresident(const std::map<int, int>& legs) const {
    for (const auto& [dev, n] : legs)
      if (!copy_legs_coresident(n, blocks(dev, n), resident_.at(dev)))
        throw NotSupported(fmt::format(
            "{} SM copies at once on GPU{} need {} blocks each, and it keeps {} resident: they "
            "would run one after another (a smaller --threads fits)",
            n, dev, blocks(dev, n), resident_.at(dev)));
  }

  CudaBackend& backend_;
  Method method_;
  CopierOptions opts_;
  volatile int* flag_ = nullptr;  // host-mapped: [0] start latch, [1] latch timed out
  CudaLanes lanes_;
  std::map<int, int> resident_;  // prepared devices: the copy blocks each keeps resident
};

}  // namespace

Support copier_fits(const CudaBackend& backend, Method m, const CopierOptions& opts) {
  if (opts.threads < 0) return Support::no("--threads must be positive");
  if (m != Method::core || opts.tile == 0) return Support::yes();
  for (const auto& d : backend.devices()) {
    const auto max = static_cast<Bytes>(backend.gpu(d.id).max_tile);
    if (opts.tile % 16 != 0 || opts.tile > max)
      return Support::no(fmt::format(
          "--tile {} does not fit GPU{}: a multiple of 16 up to {} bytes of shared memory per "
          "block, or 0 for direct copies",
          opts.tile, d.id, max));
  }
  return Support::yes();
}

std::unique_ptr<Copier> make_copier(CudaBackend& backend, Method m, const CopierOptions& opts) {
  if (const Support s = copier_fits(backend, m, opts); !s.ok) throw UsageError(s.reason);
  return std::make_unique<CudaCopier>(backend, m, opts);
}

}  // namespace xb::cuda
