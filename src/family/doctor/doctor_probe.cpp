#include "family/doctor/doctor_probe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb::doctor {

Plan plan_of(bool quick, bool full) {
  if (quick) return {"quick", 16ULL << 20, 5, 1, 2, 0.5};
  if (full) return {"full", 256ULL << 20, 10, 3, 3, 2};
  return {};
}

Bytes d2d_bytes(Bytes plan_size, bool device_memory, Bytes least_free) {
  constexpr Bytes kBeyondL2 = 256ULL << 20, kMiB = 1ULL << 20;
  if (!device_memory) return plan_size;
  const Bytes fits = least_free ? least_free / 8 / kMiB * kMiB : kBeyondL2;
  return std::max(plan_size, std::min(kBeyondL2, fits));
}

double memcpy_reference(Bytes size, int threads) {
  std::unique_ptr<void, decltype(&std::free)> a(alloc_pages(size), &std::free),
      b(alloc_pages(size), &std::free);
  if (!a || !b) throw RuntimeError("doctor: cannot allocate the memcpy reference buffers");
  std::memset(a.get(), 1, size);
  std::memset(b.get(), 0, size);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = Clock::now();
    std::vector<std::thread> th;
    th.reserve(static_cast<std::size_t>(threads));
    const Bytes per = size / static_cast<Bytes>(threads) / 64 * 64;
    for (int i = 0; i < threads; ++i)
      th.emplace_back([&, i] {
        const Bytes off = per * static_cast<Bytes>(i);
        const Bytes n = i == threads - 1 ? size - off : per;
        std::memcpy(static_cast<std::byte*>(b.get()) + off, static_cast<std::byte*>(a.get()) + off,
                    n);
      });
    for (auto& t : th) t.join();
    best = std::max(best, static_cast<double>(size) / (elapsed_us(t0, Clock::now()) * 1e3));
  }
  return best;
}

std::string busy_text(double cv, const CpuLoad& load) {
  std::string s = fmt::format("CV {:.0f} %", cv * 100);
  if (load.known)
    s += fmt::format(", other processes used {:.1f} of {} cores", load.other_cores, online_cores());
  return s;
}

int Path::device() const { return kase == copy_case::h2d ? dst : src; }

std::string Path::where() const {
  if (kase == copy_case::p2p) return fmt::format("p2p {}->{} {}", src, dst, to_string(method));
  return fmt::format("{} device {} {}", kase, device(), to_string(method));
}

ProbeNeeds& ProbeNeeds::operator|=(const ProbeNeeds& o) {
  copies = copies || o.copies;
  p2p = p2p || o.p2p;
  duplex = duplex || o.duplex;
  near = near || o.near;
  return *this;
}

Buffer& Probes::buffer(MemKind kind, int device, std::optional<std::uint64_t> seed, Bytes n) {
  if (!n) n = size_;
  buffers_.push_back(be_.allocate(kind, device, n));
  Buffer& b = *buffers_.back();
  if (seed)
    fill_buffer(be_, b, n, *seed);
  else
    poison_buffer(be_, b, n);
  return b;
}

Probe& Probes::probe(const std::string& label, Method m, std::vector<CopyOp> ops,
                     std::vector<std::uint64_t> seeds) {
  Probe& p = probes_.emplace_back();
  p.label = label;
  p.copier = copiers_.at(m).get();
  p.ops = std::move(ops);
  p.seeds = std::move(seeds);
  for (std::size_t k = 0; k < p.ops.size(); ++k)
    checked_[p.ops[k].dst] = {p.seeds[k], p.ops[k].bytes};
  return p;
}

void Probes::path_probe(const Path& path, const CopyOp& op, std::uint64_t seed) {
  paths_.emplace_back(path, &probe(path.where(), path.method, {op}, {seed}));
}

void Probes::build(const ProbeNeeds& needs) {
  for (Method m : {Method::dma, Method::core})
    if (be_.method_support(m).ok) {
      methods_.push_back(m);
      copiers_[m] = be_.copier(m, {});
    }
  const bool p2p = needs.p2p && be_.devices().size() > 1;
  if (!needs.copies && !p2p) return;
  std::map<int, Buffer*> dev_src;  // each device's source, for its pairs too
  for (const auto& d : be_.devices()) {
    try {
      device_probes(d.id, needs, dev_src);
    } catch (const NotSupported&) {
      throw;
    } catch (const std::exception& e) {
      failed_devices_.push_back({d.id, -1, e.what()});
    }
  }
  if (p2p) pair_probes(dev_src);
}

// A device's source buffer (pairs read it too) and, with copies, its probes
// by each method; the duplex and near probes write where h2d writes.
void Probes::device_probes(int id, const ProbeNeeds& needs, std::map<int, Buffer*>& dev_src) {
  const std::uint64_t host_seed = 0x100 + id, dev_seed = 0x200 + id;
  const Bytes n = size_;
  Buffer& ds = buffer(MemKind::device, id, dev_seed);
  dev_src[id] = &ds;
  if (!needs.copies) return;
  Buffer& hs = buffer(MemKind::pinned, -1, host_seed);
  Buffer& hd_dst = buffer(MemKind::device, id, std::nullopt);
  Buffer& dh_dst = buffer(MemKind::pinned, -1, std::nullopt);
  // d2d beyond the GPU's L2 (d2d_bytes): a source of its own where larger
  Buffer& dd_src = d2d_size_ == n ? ds : buffer(MemKind::device, id, dev_seed, d2d_size_);
  Buffer& dd_dst = buffer(MemKind::device, id, std::nullopt, d2d_size_);
  for (Method m : methods_) {
    const CopyOp h2d{&hs, &hd_dst, n}, d2h{&ds, &dh_dst, n}, d2d{&dd_src, &dd_dst, d2d_size_};
    path_probe({copy_case::h2d, -1, id, m}, h2d, host_seed);
    path_probe({copy_case::d2h, id, -1, m}, d2h, dev_seed);
    path_probe({copy_case::d2d, id, id, m}, d2d, dev_seed);
    if (m == Method::dma && needs.duplex)
      duplex_[id] =
          &probe(fmt::format("duplex device {} dma", id), m, {h2d, d2h}, {host_seed, dev_seed});
  }
  if (needs.near && copiers_.count(Method::dma)) near_probe(id, hd_dst, host_seed);
}

void Probes::near_probe(int id, Buffer& dst, std::uint64_t seed) {
  try {
    buffers_.push_back(be_.allocate_pinned_near(id, size_));
    fill_buffer(be_, *buffers_.back(), size_, seed);  // writes what h2d writes
    near_[id] = &probe(fmt::format("near h2d device {} dma", id), Method::dma,
                       {{buffers_.back().get(), &dst, size_}}, {seed});
  } catch (const NotSupported& e) {
    no_near_.push_back({id, -1, e.what()});
  }
}

void Probes::pair_probes(const std::map<int, Buffer*>& dev_src) {
  for (const auto& [a, src] : dev_src)
    for (const auto& [b, unused] : dev_src) {
      if (a == b || !be_.peer_access(a, b).ok) continue;
      try {
        Buffer& dst = buffer(MemKind::device, b, std::nullopt);
        for (Method m : methods_)
          path_probe({copy_case::p2p, a, b, m}, {src, &dst, size_}, 0x200ULL + a);
      } catch (const std::exception& e) {
        failed_pairs_.push_back({a, b, e.what()});
      }
    }
}

Probe* Probes::find(const std::string& kase, int src, int dst, Method m) const {
  for (const auto& [p, probe] : paths_)
    if (p.kase == kase && p.src == src && p.dst == dst && p.method == m) return probe;
  return nullptr;
}

Probe* Probes::find_dev(const std::string& kase, int dev, Method m) const {
  return find(kase, kase == copy_case::h2d ? -1 : dev, kase == copy_case::d2h ? -1 : dev, m);
}

Path Probes::path_of(const Probe& probe) const {
  for (const auto& [p, q] : paths_)
    if (q == &probe) return p;
  return {};
}

Probes::Measured Probes::measure(const std::vector<const PairedCheck*>& cs, const Budget& budget,
                                 const Progress& progress) {
  std::vector<Probe*> all;
  for (Probe& p : probes_) all.push_back(&p);
  if (progress && !all.empty()) progress(0, 1, fmt::format("{} probes in rounds", all.size()));
  Measured m;
  const LoadMeter meter;
  m.rounds = settle(all, cs, budget);
  m.load = meter.stop();
  for (const auto& [dst, check] : checked_)
    if (const auto bad = verify_buffer(be_, *dst, check.second, check.first)) {
      WrongData w{*bad, {}};
      for (const Probe& p : probes_)
        for (const CopyOp& op : p.ops)
          if (op.dst == dst) w.writers.push_back(p.label);
      wrong_data_.push_back(std::move(w));
    }
  if (progress && !all.empty()) progress(1, 1, "done");
  return m;
}

}  // namespace xb::doctor
