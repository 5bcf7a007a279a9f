#pragma once
// The backend interface: devices, buffers, streams/events and copiers, with
// capability queries. Vendor types stay inside backend/<vendor>/.
// Optional operations answer with Support::no(reason) or throw NotSupported.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/registry.hpp"
#include "core/units.hpp"

namespace xb {

class Communicator;        // coll/communicator.hpp
class FusedGemmAllReduce;  // coll/fused.hpp
struct FusedConfig;        // coll/fused.hpp
class Runtime;             // runtime/runtime.hpp

enum class Method { dma, core };

const char* to_string(Method m);

struct DeviceInfo {
  int id = 0;
  std::string name;
  int numa = -1;        // NUMA node the device's memory sits on
  Bytes memory = 0;     // capacity in bytes, 0 when unknown
  double clock_hz = 0;  // the clock its cycle counts use, 0 when none
  int cores = 0;        // what --threads counts: the node's CPUs (host), SMs (cuda); 0 unknown
  // NVML's spellings (dcgm-exporter's labels; backend/common/nvlink.hpp):
  // "00000000:17:00.0", "GPU-...", "" where the backend does not know them.
  std::string pci_bus_id{}, uuid{};
};

// Memory owned by a backend. data() is the address the backend's copiers use;
// it is dereferenceable by the host only where the backend says so.
class Buffer {
 public:
  Buffer(MemKind kind, int device, Bytes size, void* data)
      : kind_(kind), device_(device), size_(size), data_(data) {}
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  MemKind kind() const { return kind_; }
  int device() const { return device_; }  // -1 for host memory
  Bytes size() const { return size_; }
  void* data() const { return data_; }

 private:
  MemKind kind_;
  int device_;
  Bytes size_;
  void* data_;
};

// What a device's links are, read from the topology, for `doctor`'s
// expected figures. Zero / empty: unknown on this backend or machine.
struct LinkFacts {
  std::string pcie_current_speed, pcie_max_speed;  // sysfs text: "32.0 GT/s PCIe"
  int pcie_width = 0, pcie_max_width = 0;          // lanes
  // The maxima of the port above the device (its slot): the link trains to
  // the lesser of the two ends. "" / 0: no port to read (a root-bus device).
  std::string pcie_port_max_speed;
  int pcie_port_max_width = 0;
  double mem_clock_khz = 0;            // device memory clock (peak)
  int mem_bus_bits = 0;                // device memory bus width
  int nvlink_links = 0;                // active NVLinks (NVML)
  int arch_major = 0, arch_minor = 0;  // compute capability: the NVLink generation
  std::string source;  // where the facts come from ("sysfs 0000:17:00.0, CUDA attributes")
};

// How long a device's clocks were held down, cumulative since its driver
// loaded (NVML's violation counters): `doctor` reads them before and after
// its run. known = false with `why` where the backend has none to read.
struct ClockHolds {
  bool known = false;
  std::string why;
  double power_s = 0, thermal_s = 0, board_s = 0, reliability_s = 0;  // held below its clocks by
  double sm_mhz = 0, sm_max_mhz = 0;                                  // now and at most
};

// A completion marker recorded on a stream; carries the time it completed.
class Event {
 public:
  virtual ~Event() = default;
  virtual void synchronize() = 0;
  virtual bool query() = 0;  // completed?
  // Microseconds from `start` to this event; both must have completed.
  virtual double elapsed_us_since(const Event& start) const = 0;
};

// An in-order queue of asynchronous copies on one device's copy engine.
// The issuer returns at once; completion is observed through events.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual int device() const = 0;
  virtual void copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off,
                          Bytes n) = 0;
  virtual void record(Event& event) = 0;
  virtual void synchronize() = 0;
};

struct CopyOp {
  CopyOp() = default;
  CopyOp(const Buffer* s, Buffer* d, Bytes n, std::optional<int> driver = std::nullopt)
      : src(s), dst(d), bytes(n), by(driver) {}
  const Buffer* src = nullptr;
  Buffer* dst = nullptr;
  Bytes bytes = 0;
  // The device whose engine or cores execute it: one of its ends' devices
  // (a p2p read is driven by the destination). nullopt: executing_device's rule.
  std::optional<int> by;
};

struct CopyTiming {
  // The batch's span on one clock: from the common start to the last
  // completion; where the copier cannot hold its ops to one start, from
  // before the first op was issued (host clock), so a sum over it never
  // counts an overlap that did not happen.
  double batch_us = 0;
  // Each op's time: from the common start, or from its own start where the
  // ops start as they are issued.
  std::vector<double> op_us;
};

struct CopierOptions {
  int threads = 0;         // cores/workers (host) or thread blocks (GPU); 0: the backend's default
  Bytes tile = 64 * 1024;  // staging tile of the core method; 0: direct (GPU backends)
};

// How one batch of copies is executed and timed: the copy method is a
// parameter, not a class per direction.
class Copier {
 public:
  virtual ~Copier() = default;
  virtual Method method() const = 0;
  // Runs all ops concurrently, started together where the backend can hold
  // them to one start, and times them with its best clock (CopyTiming).
  // Launch overhead stays outside the timing where it can.
  virtual CopyTiming run(std::span<const CopyOp> ops) = 0;
};

// A pointer-chase chain in one device's memory (`xferbench latency`): every
// cache line holds the address of the next, one random cycle through all of
// them (core/chase.hpp), so a chase is a string of dependent loads, each a
// miss once the chain is well above the caches.
class Chain {
 public:
  virtual ~Chain() = default;
  virtual Bytes bytes() const = 0;  // the chain's memory; bytes() / kChaseLine lines
  // By `chaser`'s cores (host: one thread pinned to its node's CPUs; a GPU:
  // its SMs), `warmup` chases discarded then `samples` timed ones, each of
  // `loads` dependent loads and going on where the last stopped: the
  // nanoseconds per load of each timed chase (its time / loads).
  virtual std::vector<double> chase(int chaser, int loads, int samples, int warmup) = 0;
  // Outside timing, by `chaser`: walks the chain from its first line and
  // says whether it comes back there after exactly bytes() / kChaseLine
  // loads, each landing on a line of the chain (so it visits every line).
  virtual bool verify(int chaser) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual const std::vector<DeviceInfo>& devices() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual Support method_support(Method m) const = 0;
  virtual Support peer_access(int src, int dst) const = 0;
  // How two devices are connected, e.g. "same NUMA node", "NUMA distance 21".
  virtual std::string link_type(int a, int b) const = 0;
  // Bytes that can still be allocated of this kind on this device.
  virtual Bytes free_memory(MemKind kind, int device) const = 0;

  // device is ignored for host kinds. Throws RuntimeError on failure.
  virtual std::unique_ptr<Buffer> allocate(MemKind kind, int device, Bytes size) = 0;
  // Pinned host memory on the NUMA node nearest `device` (doctor's NUMA
  // check). Backends without it throw NotSupported.
  virtual std::unique_ptr<Buffer> allocate_pinned_near(int device, Bytes size);
  // From now on, every host-memory buffer this backend allocates (on the
  // host backend: every buffer) comes from huge pages (`--host-mem huge`).
  // Support::no with the reason where it cannot (the system has none, or the
  // backend does not implement it).
  virtual Support use_huge_pages();
  // What use_huge_pages gave so far, e.g. "thp: 512 of 512 MiB on huge
  // pages"; "" when not in use.
  virtual std::string huge_pages_note() const;
  // Host <-> buffer transfers used to fill and verify, outside timing.
  virtual void write(Buffer& dst, Bytes offset, std::span<const std::byte> src) = 0;
  virtual void read(const Buffer& src, Bytes offset, std::span<std::byte> dst) = 0;

  virtual std::unique_ptr<Stream> create_stream(int device, const CopierOptions& opts) = 0;
  virtual std::unique_ptr<Event> create_event() = 0;
  virtual std::unique_ptr<Copier> copier(Method m, const CopierOptions& opts) = 0;
  // Whether copier(m, opts) would take these options, without making it
  // (so `auto` can pass a backend over): --tile and --threads limits.
  virtual Support copier_fits(Method m, const CopierOptions& opts) const;

  // Device memory shared with other processes of this host (CUDA IPC): an
  // opaque handle of a device buffer, and a buffer mapping another process's
  // handle on `device`. Backends without it throw NotSupported.
  virtual std::string export_buffer(const Buffer& buf);
  virtual std::unique_ptr<Buffer> import_buffer(const std::string& handle, int device, Bytes size);

  // The backend's collective library over the runtime's ranks: MPI on host,
  // NCCL on cuda, HCCL on ascend. Collective. Throws UsageError (the same on
  // every rank) where the backend has none.
  virtual std::unique_ptr<Communicator> communicator(Runtime& rt);
  // Collective, the same verdict on every rank: whether communicator(rt)
  // can be made for these ranks (NCCL and HCCL: one device per rank).
  virtual Support communicator_fits(Runtime& rt);

  // The backend's own libraries and driver, name and version, as loaded
  // (not as built against); default: none.
  virtual std::vector<std::pair<std::string, std::string>> software() const;

  // The links of `device` as the topology reports them (doctor); default: none.
  virtual LinkFacts link_facts(int device) const;
  // The clock-hold counters of `device` now (ClockHolds).
  virtual ClockHolds clock_holds(int device) const;

  // The latency family's pointer chase: a chain of `bytes` (0: the
  // backend's default, well above its caches) in `kind` memory (device:
  // `device`'s; pinned: host memory), the random cycle drawn from `seed`.
  // Backends without it throw NotSupported (the records are waived).
  virtual std::unique_ptr<Chain> make_chain(MemKind kind, int device, Bytes bytes,
                                            std::uint64_t seed);

  // gemm-ar's fused GEMM + AllReduce (after pto-isa's GEMM+AllReduce example) on this
  // backend's devices.
  // fused_fits is local (no communication): whether this rank can run
  // `cfg` (SMs, dtypes, memory); the caller agrees on it across ranks before
  // the collective fused_gemm_allreduce. Backends without it answer no.
  virtual Support fused_fits(Runtime& rt, const FusedConfig& cfg);
  virtual std::unique_ptr<FusedGemmAllReduce> fused_gemm_allreduce(Runtime& rt,
                                                                   const FusedConfig& cfg);
};

// Argument checks and conventions shared by every backend's copiers.
// Throws RuntimeError unless [offset, offset + n) lies inside `b`; `what`
// names the operation ("copy", "write", "read").
void check_range(const Buffer& b, Bytes offset, Bytes n, const char* what);
// Throws RuntimeError for an op without buffers, larger than either one, or
// driven by a device that is neither of its ends.
void check_ops(std::span<const CopyOp> ops);
// The device whose engine or cores execute a copy: op.by where given, else
// the device side, the source for device-to-device copies (a push, as copy
// engines do).
int executing_device(const CopyOp& op);

// What `list` shows about a backend that may not be usable here.
struct BackendStatus {
  std::string name;
  bool available = false;
  std::string reason;  // why not, when unavailable
  // Unavailable although its hardware is there (the driver lists it): an
  // error to report, not an absence to pass over.
  bool broken = false;
};

}  // namespace xb
