#pragma once
// What the device backends (cuda, ascend) share, free of vendor types: the
// vendor code passes its handles and calls in as template arguments or
// callbacks (vendor types stay inside backend/<vendor>/).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.hpp"

namespace xb {

// Throws UsageError "device 3 out of range: the cuda backend has 2 GPUs"
// unless 0 <= device < count; `unit` names one device ("GPU", "NPU").
void check_device_index(int device, std::size_t count, const std::string& backend,
                        const char* unit);

// Where the pair (a, b) sits in a row-major n x n matrix.
constexpr std::size_t pair_index(int a, int b, std::size_t n) {
  return static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b);
}

// The row-major n x n peer-access matrix: a device reaches itself; every
// other pair is answered by `probe(src, dst)`, called in row order.
std::vector<Support> peer_matrix(int n, const std::function<Support(int src, int dst)>& probe);

// Blocks of a persistent (spinning) kernel that can be resident at once:
// `per_sm` (the occupancy API's answer for its block size and shared
// memory) times the SMs this context may use. An MPS client whose
// environment sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (`mps_percentage`,
// null when unset) gets that share of `sms`, rounded down, at least one; a
// value that is not a number in (0, 100] is ignored, as a limit MPS would
// refuse. A limit set only in the MPS control daemon cannot be read by a
// client: the kernels' watchdog is the guard there.
int resident_blocks(int per_sm, int sms, const char* mps_percentage);

// A device runtime's probe that failed, read: `absence` when its error
// means "no device" (CUDA's NoDevice, InsufficientDriver), and then only
// while `driver_dir` (/proc/driver/nvidia/gpus) lists no device either.
// Any other failure, or one where the driver lists devices, is `broken`:
// the hardware is there and its runtime refuses it (fabric manager down,
// driver mismatch, a GPU wedged by an Xid), which must read as an error,
// not as "no GPU" (the CUDA review's N7).
// `unit` names one device ("GPU"). With `node_prefix`, only the entries
// named prefix + number count (Ascend's /dev/davinciN nodes).
BackendStatus failed_probe(const std::string& backend, const char* unit, const std::string& error,
                           bool absence, const std::string& driver_dir,
                           const std::string& node_prefix = "");

// Thread blocks of one leg of a batch of SM-kernel copies that start
// together (Copier::run). `threads` > 0 (--threads): that many, as asked.
// One leg on its device: 2 x `sms` (two waves' worth, the single-copy
// default). `legs` > 1 on one device: the kernels only run at once if all
// their blocks are resident together, so the device's resident blocks
// (`resident`: the occupancy API's blocks per SM x SMs, resident_blocks),
// at most 2 x sms, are shared evenly, at least one block each. A larger
// grid per leg would leave one leg's blocks queued behind another's (a
// kernel's blocks take chunks statically, so they all exit near its end):
// the later leg's time would include the earlier one's run. Examples at
// 132 SMs: two legs of a kernel with 2 blocks per SM get 132 each, one
// block per SM (a 227 KiB tile) 66 each, three legs at 2 per SM 88 each.
// `resident` 0 (unknown) counts as 2 x sms.
int copy_blocks_per_leg(int sms, int legs, int resident, int threads);

// Whether `legs` copies of `blocks` blocks each fit on a device that keeps
// `resident` blocks at once (0: unknown, taken as fitting): an explicit
// --threads can ask for more, and the legs would then run one after another.
bool copy_legs_coresident(int legs, int blocks, int resident);

// Pageable host memory for a device backend's buffer of `size` bytes: whole
// pages (core/memory.hpp), zero-filled so they are faulted in outside timing.
// Throws RuntimeError when out of memory. Release it with std::free.
void* alloc_pageable(Bytes size);

// A runtime event handle, created on the device of the stream it is first
// recorded on and created again when recorded on another. `Api` supplies
//   using Handle = ...;                      // the vendor's event handle
//   static Handle create(int device);        // selects the device; throws
//   static void destroy(Handle) noexcept;    // errors cannot be reported
template <class Api>
class DeviceEventHandle {
 public:
  using Handle = typename Api::Handle;
  DeviceEventHandle() = default;
  ~DeviceEventHandle() {
    if (handle_) Api::destroy(handle_);
  }
  DeviceEventHandle(const DeviceEventHandle&) = delete;
  DeviceEventHandle& operator=(const DeviceEventHandle&) = delete;

  Handle get() const { return handle_; }  // null until the first on()
  int device() const { return device_; }

  // The handle, created on `device` (re-created if it lived on another).
  Handle on(int device) {
    if (handle_ && device_ == device) return handle_;
    if (handle_) Api::destroy(handle_);
    handle_ = nullptr;
    handle_ = Api::create(device);
    device_ = device;
    return handle_;
  }

 private:
  Handle handle_ = nullptr;
  int device_ = -1;
};

// A device copier's lanes: one stream per op, with the events around its
// copy. `StreamT(int device)` is a Stream, `EventT` an Event of one backend.
template <class StreamT, class EventT>
class Lanes {
 public:
  struct Lane {  // not movable: the events own runtime handles
    EventT start, end;
    // Declared last, destroyed first: the reverse of creation. The order
    // does not wait for anything: cudaStreamDestroy returns at once and
    // releases the stream when its queued work is done, and an event
    // destroyed while pending is released when it completes (CUDA runtime
    // API docs), so pending records stay safe either way.
    std::unique_ptr<StreamT> stream;
  };

  // Lane i, its stream on `device` (created, or created again when it was
  // on another device).
  Lane& at(std::size_t i, int device) {
    while (lanes_.size() <= i) lanes_.push_back(std::make_unique<Lane>());
    Lane& lane = *lanes_[i];
    if (!lane.stream || lane.stream->device() != device) {
      lane.stream.reset();  // the old stream goes first, from its own device
      lane.stream = std::make_unique<StreamT>(device);
    }
    return lane;
  }
  Lane& operator[](std::size_t i) { return *lanes_[i]; }
  void clear() { lanes_.clear(); }

  // Waits for the first n lanes: each op's time from its start to its end
  // event, the batch's that of the longest op: right where the ops were
  // held to one start. Where they start as they are issued (`issued`: the
  // host's clock before the first was), the batch's time is the host's
  // span from then to the last completion, never less than the longest op.
  CopyTiming timing(std::size_t n,
                    std::optional<std::chrono::steady_clock::time_point> issued = {}) {
    CopyTiming t;
    for (std::size_t i = 0; i < n; ++i) {
      lanes_[i]->end.synchronize();
      t.op_us.push_back(lanes_[i]->end.elapsed_us_since(lanes_[i]->start));
      t.batch_us = std::max(t.batch_us, t.op_us.back());
    }
    if (issued && n > 1)
      t.batch_us = std::max(t.batch_us, std::chrono::duration<double, std::micro>(
                                            std::chrono::steady_clock::now() - *issued)
                                            .count());
    return t;
  }

 private:
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace xb
