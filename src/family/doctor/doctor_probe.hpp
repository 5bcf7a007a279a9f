#pragma once
// What doctor measures with: the plan (copy size, rounds, budget), the host
// memcpy reference, and the probes every copy check reads: buffers and
// copies per device, case and method, all alive at once so the rounds
// (doctor_rounds) interleave them. The probes know nothing of checks: a
// check asks for kinds of probes (ProbeNeeds) and reads them.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "core/sweep.hpp"
#include "core/sysinfo.hpp"
#include "family/doctor/doctor_rounds.hpp"

namespace xb::doctor {

// How much doctor measures: the copy size, the first rounds, and the budget
// for more rounds while a verdict is unsettled (factor x the first rounds'
// time, at least floor_s; a FAIL measured again gets the same).
struct Plan {
  std::string depth = "default";  // quick, default, full
  Bytes size = 64ULL << 20;
  int iters = 5, warmup = 2;
  double budget_factor = 3, budget_floor_s = 1;
  Bytes d2d_size = 0;  // the d2d probes' (d2d_bytes); 0: chosen by doctor::run
  Budget budget() const { return {iters, warmup, budget_factor, budget_floor_s, 200}; }
};
Plan plan_of(bool quick, bool full);

// The d2d probes' size. On a device backend (`device_memory`) at least
// 256 MiB: a copy of the plan's size can sit in the GPU's L2 (--quick's
// 16 MiB source and destination fit the H200's 50-60 MB), and its figure is
// then not device memory's. Less where the device with the least free
// memory (`least_free`, 0: unknown) has not 8 times that free, never less
// than `plan_size`. The host backend's devices are host memory, where the
// plan's size is kept (its rows compare devices, not a datasheet).
Bytes d2d_bytes(Bytes plan_size, bool device_memory, Bytes least_free);

// The host memory reference: memcpy of `size` bytes split over `threads`
// cores, best of 5, GB/s (decimal).
double memcpy_reference(Bytes size, int threads);

// "CV 61 %, other processes used 1.7 of 2 cores": the noise of a measurement
// and the load around it.
std::string busy_text(double cv, const CpuLoad& load);

// One path doctor measures: a case between two ends (-1: host) by a method.
struct Path {
  std::string kase;  // h2d, d2h, d2d, p2p
  int src = -1, dst = -1;
  Method method = Method::dma;
  int device() const;         // the device whose link the path crosses
  std::string where() const;  // "h2d device 0 dma", "p2p 0->1 core"
};

// The kinds of probes a check reads; the run builds the union of what the
// checks asked have.
struct ProbeNeeds {
  bool copies = false;  // h2d, d2h, d2d per device and method
  bool p2p = false;     // every ordered pair of devices that reach each other, per method
  bool duplex = false;  // h2d and d2h at once per device (dma)
  bool near = false;    // h2d from a pinned buffer on the device's NUMA node (dma)
  ProbeNeeds& operator|=(const ProbeNeeds& o);
};

// Something a probe could not be set up for: a device (src), a pair (src,
// dst), or a device's near buffer; `error` says why.
struct Unmeasured {
  int src = -1, dst = -1;
  std::string error;
};

// A destination that held wrong data after the rounds: the first wrong byte
// and the probes that wrote it, in the order they were made.
struct WrongData {
  Bytes offset = 0;
  std::vector<std::string> writers;
};

class Probes {
 public:
  // Probes of `size` bytes, d2d's of `d2d_size` (0: `size`).
  Probes(Backend& be, Bytes size, Bytes d2d_size = 0)
      : be_(be), size_(size), d2d_size_(d2d_size ? d2d_size : size) {}

  // The copiers of every method the backend supports, then the buffers and
  // probes of `needs`. Per device: h2d, d2h, d2d by each method, h2d+d2h at
  // once, h2d from a buffer on the device's NUMA node; per ordered pair: p2p.
  void build(const ProbeNeeds& needs);

  // Every probe in interleaved rounds until the comparisons `cs` are
  // settled or the budget is spent, then every destination checked (what
  // went wrong: wrong_data()). Returns the rounds run and the load around.
  struct Measured {
    int rounds = 0;
    CpuLoad load;
  };
  Measured measure(const std::vector<const PairedCheck*>& cs, const Budget& budget,
                   const Progress& progress);

  const std::vector<Method>& methods() const { return methods_; }
  const std::deque<Probe>& all() const { return probes_; }
  // The single-copy probes, in the order they were made.
  const std::vector<std::pair<Path, Probe*>>& paths() const { return paths_; }
  Probe* find(const std::string& kase, int src, int dst, Method m) const;
  // h2d, d2h or d2d of a device.
  Probe* find_dev(const std::string& kase, int dev, Method m) const;
  Path path_of(const Probe& probe) const;
  const std::map<int, Probe*>& duplex() const { return duplex_; }  // by device
  const std::map<int, Probe*>& near() const { return near_; }      // by device

  const std::vector<Unmeasured>& failed_devices() const { return failed_devices_; }
  const std::vector<Unmeasured>& failed_pairs() const { return failed_pairs_; }
  const std::vector<Unmeasured>& no_near() const { return no_near_; }
  const std::vector<WrongData>& wrong_data() const { return wrong_data_; }

 private:
  Buffer& buffer(MemKind kind, int device, std::optional<std::uint64_t> seed, Bytes n = 0);
  Probe& probe(const std::string& label, Method m, std::vector<CopyOp> ops,
               std::vector<std::uint64_t> seeds);
  void path_probe(const Path& path, const CopyOp& op, std::uint64_t seed);
  void device_probes(int id, const ProbeNeeds& needs, std::map<int, Buffer*>& dev_src);
  void near_probe(int id, Buffer& dst, std::uint64_t seed);
  void pair_probes(const std::map<int, Buffer*>& dev_src);

  Backend& be_;
  Bytes size_, d2d_size_;
  std::vector<Method> methods_;
  std::map<Method, std::unique_ptr<Copier>> copiers_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::deque<Probe> probes_;                    // stable addresses
  std::vector<std::pair<Path, Probe*>> paths_;  // single-copy probes, in order
  std::map<int, Probe*> duplex_, near_;         // by device
  // destinations, the pattern they get and how many bytes of it
  std::map<const Buffer*, std::pair<std::uint64_t, Bytes>> checked_;
  std::vector<Unmeasured> failed_devices_, failed_pairs_, no_near_;
  std::vector<WrongData> wrong_data_;
};

}  // namespace xb::doctor
