#include "backend/host/host_backend.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "backend/common/hwloc_util.hpp"
#include "backend/host/host_internal.hpp"
#include "coll/communicator.hpp"
#include "core/error.hpp"
#include "core/huge_pages.hpp"
#include "core/sysinfo.hpp"
#include "runtime/runtime.hpp"

namespace xb {

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<host::HostBackend>(); }

namespace host {
namespace {

constexpr int kMaxHostDevices = 64;

// Number of devices requested by XFERBENCH_HOST_DEVICES, 0 when unset.
int requested_devices() {
  const char* env = std::getenv("XFERBENCH_HOST_DEVICES");
  if (!env || !*env) return 0;
  int n = 0;
  const char* end = env + std::strlen(env);
  auto [p, ec] = std::from_chars(env, end, n);
  if (ec != std::errc() || p != end || n < 1 || n > kMaxHostDevices)
    throw UsageError(fmt::format("XFERBENCH_HOST_DEVICES='{}' must be an integer in 1..{}", env,
                                 kMaxHostDevices));
  return n;
}

class BoundBuffer final : public Buffer {  // memory bound to a node: device, or pinned near it
 public:
  BoundBuffer(hwloc_topology_t topo, MemKind kind, int dev, Bytes n, void* p)
      : Buffer(kind, dev, n, p), topo_(topo) {}
  ~BoundBuffer() override {
    if (kind() == MemKind::pinned) munlock(data(), size());
    hwloc_free(topo_, data(), size());
  }

 private:
  hwloc_topology_t topo_;
};

class PinnedBuffer final : public Buffer {  // mmap + mlock
 public:
  PinnedBuffer(Bytes n, void* p) : Buffer(MemKind::pinned, -1, n, p) {}
  ~PinnedBuffer() override {
    munlock(data(), size());
    munmap(data(), size());
  }
};

class PageableBuffer final : public Buffer {  // plain heap
 public:
  PageableBuffer(Bytes n, void* p) : Buffer(MemKind::pageable, -1, n, p) {}
  ~PageableBuffer() override { std::free(data()); }
};

class HugeBuffer final : public Buffer {  // --host-mem huge: mmap of huge pages
 public:
  HugeBuffer(MemKind kind, int dev, Bytes n, HugeMapping m)
      : Buffer(kind, dev, n, m.data), map_(m) {}
  ~HugeBuffer() override {
    if (kind() == MemKind::pinned) munlock(map_.data, map_.length);
    unmap_huge(map_);
  }

 private:
  HugeMapping map_;
};

void* map_pinned(Bytes n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw RuntimeError(fmt::format("mmap of {} failed: {}", format_size(n), std::strerror(errno)));
  if (mlock(p, n) != 0) {
    const int err = errno;
    munmap(p, n);
    throw RuntimeError(
        fmt::format("mlock of {} failed: {} (raise `ulimit -l`, or use --host-mem pageable)",
                    format_size(n), std::strerror(err)));
  }
  return p;
}

}  // namespace

struct HostBackend::Topo {
  Hwloc hwloc{false};
  std::vector<std::uint64_t> distances;
};

HostBackend::HostBackend() : topo_(std::make_unique<Topo>()) {
  const char* throttle = std::getenv("XFERBENCH_HOST_THROTTLE");
  if (throttle && *throttle) throttles_ = parse_throttle(throttle);
  hwloc_topology_t t = topo_->hwloc.get();
  const int nnodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnodes; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    nodes_.push_back({node->os_index, cpu_list(node->cpuset), node->attr->numanode.local_memory});
  }
  if (nodes_.empty()) nodes_.push_back({0, cpu_list(hwloc_topology_get_topology_cpuset(t)), 0});
  topo_->distances = numa_distances(t);

  const int requested = requested_devices();
  const int ndev = requested ? requested : static_cast<int>(nodes_.size());
  const std::string cpu = cpu_model();
  for (int d = 0; d < ndev; ++d) {
    const int n = d % static_cast<int>(nodes_.size());
    device_node_.push_back(n);
    const auto& node = nodes_[static_cast<std::size_t>(n)];
    devices_.push_back({d, fmt::format("NUMA node {} ({})", node.os_index, cpu),
                        static_cast<int>(node.os_index), node.memory});
    devices_.back().cores = static_cast<int>(node.cpus.size());
  }
  // Rank entries are judged against the processes the launcher started
  // (1 without one): the backend exists before MPI does.
  check_throttle_targets(throttle ? throttle : "", throttles_, ndev,
                         std::max(1, launch_seen().size));
  if (Corrupter* knob = Corrupter::from_env())
    knob->check_targets(ndev, std::max(1, launch_seen().size));
}

HostBackend::~HostBackend() {
  std::lock_guard lock(engines_mutex_);
  engines_.clear();  // join workers before the topology goes away
}

Capabilities HostBackend::capabilities() const {
  Capabilities c;
  c.backend = name();
  c.devices = static_cast<int>(devices_.size());
  return c;
}

Support HostBackend::method_support(Method) const { return Support::yes(); }

void HostBackend::check_device(int device) const {
  if (device < 0 || device >= static_cast<int>(devices_.size()))
    throw UsageError(fmt::format("device {} out of range (this host backend has {} device{})",
                                 device, devices_.size(), devices_.size() == 1 ? "" : "s"));
}

Support HostBackend::peer_access(int src, int dst) const {
  const int n = static_cast<int>(devices_.size());
  if (src < 0 || dst < 0 || src >= n || dst >= n) return Support::no("no such device");
  if (src == dst) return Support::no("same device");
  return Support::yes();
}

std::string HostBackend::link_type(int a, int b) const {
  check_device(a);
  check_device(b);
  if (a == b) return "self";
  const auto na = static_cast<std::size_t>(device_node_[static_cast<std::size_t>(a)]);
  const auto nb = static_cast<std::size_t>(device_node_[static_cast<std::size_t>(b)]);
  if (na == nb) return "same NUMA node";
  const auto& d = topo_->distances;
  if (d.size() == nodes_.size() * nodes_.size())
    return fmt::format("NUMA distance {}", d[na * nodes_.size() + nb]);
  return "cross NUMA node";
}

Bytes HostBackend::free_memory(MemKind, int) const {
  // Per-node free counts are unreliable inside VMs and containers (nodes that
  // do not add up to the machine); MemAvailable is what an allocation meets.
  return available_memory();
}

void* HostBackend::bind_to_node(int device, Bytes size) {
  const auto& node =
      nodes_[static_cast<std::size_t>(device_node_[static_cast<std::size_t>(device)])];
  hwloc_nodeset_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_only(set, node.os_index);
  void* p = hwloc_alloc_membind(topo_->hwloc.get(), size, set, HWLOC_MEMBIND_BIND,
                                HWLOC_MEMBIND_BYNODESET);
  const int err = errno;
  hwloc_bitmap_free(set);
  if (!p)
    throw RuntimeError(fmt::format("cannot allocate {} bound to NUMA node {}: {}",
                                   format_size(size), node.os_index, std::strerror(err)));
  return p;
}

Support HostBackend::use_huge_pages() {
  std::string why;
  if (!choose_page_source(read_huge_page_facts(), 1, &why)) return Support::no(why);
  huge_->on = true;
  return Support::yes();
}

std::string HostBackend::huge_pages_note() const {
  std::lock_guard lock(huge_->mu);
  std::string out;
  for (const auto& [source, got] : huge_->got)
    out += fmt::format("{}{}: {} of {} on huge pages", out.empty() ? "" : "; ", source,
                       format_size(got.second), format_size(got.first));
  return out;
}

std::unique_ptr<Buffer> HostBackend::allocate_huge(MemKind kind, int device, Bytes size) {
  const HugePageFacts facts = read_huge_page_facts();
  std::string why;
  const auto source = choose_page_source(facts, size, &why);
  if (!source) throw NotSupported(why);
  HugeMapping m = map_huge(size, *source, facts.hugetlb_bytes);
  auto buf = std::make_unique<HugeBuffer>(kind, kind == MemKind::device ? device : -1, size, m);
  if (kind == MemKind::device) {  // bound before the first touch places the pages
    const auto& node =
        nodes_[static_cast<std::size_t>(device_node_[static_cast<std::size_t>(device)])];
    hwloc_nodeset_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_only(set, node.os_index);
    const int rc = hwloc_set_area_membind(topo_->hwloc.get(), m.data, m.length, set,
                                          HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
    hwloc_bitmap_free(set);
    if (rc != 0)
      throw RuntimeError(fmt::format("cannot bind huge pages to NUMA node {}: {}", node.os_index,
                                     std::strerror(errno)));
  }
  auto* p = static_cast<volatile std::byte*>(m.data);
  for (std::size_t off = 0; off < m.length; off += kPageBytes) p[off] = std::byte{0};
  if (kind == MemKind::pinned && mlock(m.data, m.length) != 0)
    throw RuntimeError(fmt::format("mlock of {} failed: {} (raise `ulimit -l`)",
                                   format_size(m.length), std::strerror(errno)));
  const Bytes backed = huge_backed(m);
  std::lock_guard lock(huge_->mu);
  auto& got = huge_->got[to_string(*source)];
  got.first += m.length;
  got.second += backed;
  return buf;
}

std::unique_ptr<Buffer> HostBackend::allocate(MemKind kind, int device, Bytes size) {
  if (size == 0) throw RuntimeError("cannot allocate 0 bytes");
  if (kind == MemKind::device) check_device(device);
  if (huge_->on) return allocate_huge(kind, device, size);
  switch (kind) {
    case MemKind::device: {  // device checked above
      hwloc_topology_t t = topo_->hwloc.get();
      void* p = bind_to_node(device, size);
      return std::make_unique<BoundBuffer>(t, MemKind::device, device, size, p);
    }
    case MemKind::pinned:
      return std::make_unique<PinnedBuffer>(size, map_pinned(size));
    case MemKind::pageable: {
      void* p = alloc_pages(size);
      if (!p)
        throw RuntimeError(fmt::format("cannot allocate {} of host memory", format_size(size)));
      return std::make_unique<PageableBuffer>(size, p);
    }
  }
  throw RuntimeError("unknown memory kind");
}

std::unique_ptr<Buffer> HostBackend::allocate_pinned_near(int device, Bytes size) {
  if (size == 0) throw RuntimeError("cannot allocate 0 bytes");
  check_device(device);
  void* p = bind_to_node(device, size);
  if (mlock(p, size) != 0) {
    const int err = errno;
    hwloc_free(topo_->hwloc.get(), p, size);
    throw RuntimeError(fmt::format("mlock of {} failed: {} (raise `ulimit -l`)", format_size(size),
                                   std::strerror(err)));
  }
  // Pinned host memory that keeps the device's id, so that copies from it
  // can be told from the default allocation's (throttle, doctor).
  return std::make_unique<BoundBuffer>(topo_->hwloc.get(), MemKind::pinned, device, size, p);
}

void HostBackend::write(Buffer& dst, Bytes offset, std::span<const std::byte> src) {
  check_range(dst, offset, src.size(), "write");
  std::memcpy(static_cast<std::byte*>(dst.data()) + offset, src.data(), src.size());
}

void HostBackend::read(const Buffer& src, Bytes offset, std::span<std::byte> dst) {
  check_range(src, offset, dst.size(), "read");
  std::memcpy(dst.data(), static_cast<const std::byte*>(src.data()) + offset, dst.size());
}

Bytes HostBackend::last_level_cache() const {
  hwloc_topology_t t = topo_->hwloc.get();
  Bytes biggest = 0;
  for (int type = HWLOC_OBJ_L1CACHE; type <= HWLOC_OBJ_L5CACHE; ++type)
    for (hwloc_obj_t o =
             hwloc_get_next_obj_by_type(t, static_cast<hwloc_obj_type_t>(type), nullptr);
         o; o = hwloc_get_next_obj_by_type(t, static_cast<hwloc_obj_type_t>(type), o))
      biggest = std::max<Bytes>(biggest, o->attr->cache.size);
  return biggest;
}

const std::vector<unsigned>& HostBackend::device_cpus(int device) const {
  check_device(device);
  return nodes_[static_cast<std::size_t>(device_node_[static_cast<std::size_t>(device)])].cpus;
}

WorkerPool& HostBackend::engine(int device, int threads) {
  check_device(device);
  std::lock_guard lock(engines_mutex_);
  auto& slot = engines_[{device, threads}];
  if (!slot) slot = std::make_unique<WorkerPool>(threads, device_cpus(device));
  return *slot;
}

namespace {
// threads 0 asks for the backend's default: one worker per copy.
CopierOptions with_defaults(CopierOptions opts) {
  if (opts.threads == 0) opts.threads = 1;
  return opts;
}
}  // namespace

std::unique_ptr<Stream> HostBackend::create_stream(int device, const CopierOptions& opts) {
  return std::make_unique<HostStream>(device, engine(device, with_defaults(opts).threads),
                                      &throttles_);
}

std::unique_ptr<Event> HostBackend::create_event() { return std::make_unique<HostEvent>(); }

Support HostBackend::copier_fits(Method m, const CopierOptions& given) const {
  const CopierOptions opts = with_defaults(given);
  if (opts.threads < 1) return Support::no("--threads must be at least 1");
  if (m == Method::core && opts.tile < 64)
    return Support::no("--tile must be at least 64 bytes on the host backend");
  return Support::yes();
}

std::unique_ptr<Copier> HostBackend::copier(Method m, const CopierOptions& given) {
  if (const Support s = copier_fits(m, given); !s.ok) throw UsageError(s.reason);
  const CopierOptions opts = with_defaults(given);
  if (m == Method::dma) return make_dma_copier(*this, opts);
  return make_core_copier(*this, opts);
}

std::unique_ptr<Communicator> HostBackend::communicator(Runtime& rt) {
  return make_mpi_communicator(rt);
}

}  // namespace host
}  // namespace xb
