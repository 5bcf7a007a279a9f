// The CUDA backend's copier: each op on its own stream, queued behind a
// latch kernel so all ops start together (nvbandwidth's method), timed with
// events around the copy. `dma` = cudaMemcpyAsync (copy engines); `core` =
// SM copy kernels, direct or staged through shared memory.
#include <fmt/format.h>

#include <algorithm>

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
    flag_[0] = 0;
    flag_[1] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    try {
      for (std::size_t i = 0; i < ops.size(); ++i) enqueue(lanes_[i], ops[i], latch);
    } catch (...) {
      release();  // never leave a latch spinning
      throw;
    }
    release();
    CopyTiming t = lanes_.timing(ops.size());
    if (flag_[1])
      throw RuntimeError("the start latch timed out: copies were queued for more than 10 s");
    return t;
  }

 private:
  void enqueue(CudaLanes::Lane& lane, const CopyOp& op, bool latch) {
    const cudaStream_t s = lane.stream->get();
    const int dev = lane.stream->device();
    set_device(dev);
    if (latch) XB_CUDA(launch_latch(s, flag_, kLatchTimeoutNs));
    stall_for_test(s, "copy");
    lane.stream->record(lane.start);
    if (method_ == Method::dma)
      XB_CUDA(cudaMemcpyAsync(op.dst->data(), op.src->data(), op.bytes, cudaMemcpyDefault, s));
    else
      XB_CUDA(launch_copy(s, op.dst->data(), op.src->data(), op.bytes, blocks(dev), opts_.tile));
    lane.stream->record(lane.end);
  }

  void release() {
    __atomic_store_n(&flag_[0], 1, __ATOMIC_SEQ_CST);  // every queued copy starts now
  }

  // Kernels loaded and the tile allowed on a device before its first latch:
  // with lazy loading, a first launch behind a spinning latch could wait on it.
  void prepare(int device) {
    if (std::find(ready_.begin(), ready_.end(), device) != ready_.end()) return;
    set_device(device);
    XB_CUDA(preload_kernels());
    if (method_ == Method::core && opts_.tile) XB_CUDA(allow_tile(opts_.tile));
    ready_.push_back(device);
  }

  int blocks(int device) const {
    return opts_.threads > 0 ? opts_.threads : 2 * backend_.gpu(device).sms;
  }

  CudaBackend& backend_;
  Method method_;
  CopierOptions opts_;
  volatile int* flag_ = nullptr;  // host-mapped: [0] start latch, [1] latch timed out
  CudaLanes lanes_;
  std::vector<int> ready_;
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
