#include "family/copy/copy_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "family/copy/copy_plan.hpp"

namespace xb {
namespace {

constexpr Bytes kStage = 8ULL << 20;  // host staging for fill and verify

void register_case(Registry& r, const char* key, const char* what, int min_devices) {
  r.add({key, "copy", what, [min_devices](const Capabilities& c) {
           if (c.devices >= min_devices) return Support::yes();
           return Support::no(fmt::format(
               "needs at least {} devices, the {} backend has {}{}", min_devices, c.backend,
               c.devices,
               c.backend == "host" ? " (XFERBENCH_HOST_DEVICES=N exposes N on the host backend)"
                                   : ""));
         }});
}

// The buffers of one group, sized for its largest copy.
struct Buffers {
  std::vector<std::unique_ptr<Buffer>> src, dst;  // one per direction
  std::vector<std::uint64_t> seeds;
};

std::unique_ptr<Buffer> alloc_end(Backend& b, const CopyConfig& cfg, int dev, Bytes n) {
  return dev < 0 ? b.allocate(cfg.host_mem, -1, n) : b.allocate(MemKind::device, dev, n);
}

Buffers prepare(Backend& b, const CopyConfig& cfg, const CopyGroup& g, std::size_t gi, Bytes n) {
  Buffers bufs;
  const int dirs = g.flow == Flow::bidir ? 2 : 1;
  for (int d = 0; d < dirs; ++d) {
    const int s = d == 0 ? g.src : g.dst;
    const int t = d == 0 ? g.dst : g.src;
    bufs.src.push_back(alloc_end(b, cfg, s, n));
    bufs.dst.push_back(alloc_end(b, cfg, t, n));
    bufs.seeds.push_back(0x9E37ULL * (gi + 1) + static_cast<std::uint64_t>(d));
    fill_buffer(b, *bufs.src.back(), n, bufs.seeds.back());
  }
  return bufs;
}

Record base_record(const CopyGroup& g, Method m, int src, int dst, Bytes n) {
  Record r;
  r.kase = g.record_case();
  r.method = to_string(m);
  r.src = src;
  r.dst = dst;
  r.bytes = n;
  return r;
}

// Warm-up, timed iterations, verification: the records of one size.
std::vector<Record> measure(Backend& b, Copier& copier, const CopyConfig& cfg, const CopyGroup& g,
                            Buffers& bufs, Bytes n) {
  std::vector<CopyOp> ops;
  for (std::size_t d = 0; d < bufs.src.size(); ++d) {
    if (cfg.check) poison_buffer(b, *bufs.dst[d], n);
    ops.push_back({bufs.src[d].get(), bufs.dst[d].get(), n});
  }
  for (int i = 0; i < cfg.warmup; ++i) copier.run(ops);
  std::vector<std::vector<double>> per_op(ops.size());
  std::vector<double> batch;
  for (int i = 0; i < g.iters; ++i) {
    const CopyTiming t = copier.run(ops);
    for (std::size_t d = 0; d < ops.size(); ++d) per_op[d].push_back(t.op_us[d]);
    batch.push_back(t.batch_us);
  }
  std::vector<Record> out;
  bool all_ok = true;
  for (std::size_t d = 0; d < ops.size(); ++d) {
    Record r = base_record(g, copier.method(), d == 0 ? g.src : g.dst, d == 0 ? g.dst : g.src, n);
    r.set_samples(per_op[d]);
    if (cfg.check) {
      const auto bad = verify_buffer(b, *bufs.dst[d], n, bufs.seeds[d]);
      r.verified = !bad;
      if (bad) {
        r.status = Status::failed;
        r.reason = fmt::format("verification failed: first wrong byte at offset {}", *bad);
        all_ok = false;
      }
    }
    out.push_back(std::move(r));
  }
  if (ops.size() == 2) {  // bidir: the total of both directions, counted once each
    Record t = base_record(g, copier.method(), g.src, g.dst, 2 * n);
    t.kase = "p2p_bidir_total";
    t.set_samples(batch);
    if (cfg.check) t.verified = all_ok;
    if (!all_ok) {
      t.status = Status::failed;
      t.reason = "verification failed in one direction";
    }
    out.push_back(std::move(t));
  }
  return out;
}

void add_unrun(std::vector<Record>& out, const CopyGroup& g, Method m, Bytes n, Status st,
               const std::string& why) {
  const int dirs = g.flow == Flow::bidir ? 2 : 1;
  for (int d = 0; d < dirs; ++d) {
    Record r = base_record(g, m, d == 0 ? g.src : g.dst, d == 0 ? g.dst : g.src, n);
    r.status = st;
    r.reason = why;
    out.push_back(std::move(r));
  }
  if (dirs == 2) {
    Record t = base_record(g, m, g.src, g.dst, 2 * n);
    t.kase = "p2p_bidir_total";
    t.status = st;
    t.reason = why;
    out.push_back(std::move(t));
  }
}

Support group_support(const Backend& b, const Registry& reg, const CopyGroup& g) {
  const auto* def = reg.find(std::string("copy.") + to_string(g.kase));
  if (def) {
    Support s = def->filter(b.capabilities());
    if (!s.ok) return s;
  }
  if (g.kase == CopyCase::p2p && g.flow != Flow::local) {
    Support s = b.peer_access(g.src, g.dst);
    if (!s.ok) return Support::no(fmt::format("no peer access {}->{}: {}", g.src, g.dst, s.reason));
  }
  return Support::yes();
}

// One method (and thread count) over the sizes of a group: its records,
// measured, or waived/failed with the reason.
void run_method(Backend& backend, const CopyConfig& cfg, const CopyGroup& g, Buffers* bufs,
                const Support& sup, std::string alloc_error, Method m, const CopierOptions& opts,
                const std::function<void(Bytes)>& step, std::vector<Record>& out) {
  const Support ms = backend.method_support(m);
  std::unique_ptr<Copier> copier;
  if (sup.ok && ms.ok && bufs) {
    try {
      copier = backend.copier(m, opts);
    } catch (const RuntimeError& e) {
      alloc_error = e.what();
    }
  }
  for (Bytes n : *g.sizes) {
    step(n);
    if (!sup.ok || !ms.ok) {
      add_unrun(out, g, m, n, Status::waived, !sup.ok ? sup.reason : ms.reason);
    } else if (!copier) {
      add_unrun(out, g, m, n, Status::failed, alloc_error);
    } else {
      try {
        for (auto& r : measure(backend, *copier, cfg, g, *bufs, n)) out.push_back(std::move(r));
      } catch (const NotSupported& e) {
        add_unrun(out, g, m, n, Status::waived, e.what());
      } catch (const std::exception& e) {
        add_unrun(out, g, m, n, Status::failed, e.what());
      }
    }
  }
}

}  // namespace

void fill_buffer(Backend& b, Buffer& buf, Bytes n, std::uint64_t seed) {
  std::vector<std::byte> stage(std::min(n, kStage));
  for (Bytes off = 0; off < n; off += stage.size()) {
    const Bytes len = std::min<Bytes>(stage.size(), n - off);
    fill_pattern(std::span(stage).first(len), seed, off);
    b.write(buf, off, std::span<const std::byte>(stage).first(len));
  }
}

void poison_buffer(Backend& b, Buffer& buf, Bytes n) {
  std::vector<std::byte> stage(std::min(n, kStage), std::byte{0x5A});
  for (Bytes off = 0; off < n; off += stage.size())
    b.write(buf, off,
            std::span<const std::byte>(stage).first(std::min<Bytes>(stage.size(), n - off)));
}

std::optional<Bytes> verify_buffer(Backend& b, const Buffer& buf, Bytes n, std::uint64_t seed) {
  std::vector<std::byte> stage(std::min(n, kStage));
  for (Bytes off = 0; off < n; off += stage.size()) {
    const Bytes len = std::min<Bytes>(stage.size(), n - off);
    b.read(buf, off, std::span(stage).first(len));
    if (auto bad = find_mismatch(std::span<const std::byte>(stage).first(len), seed, off))
      return off + *bad;
  }
  return std::nullopt;
}

void register_copy(Registry& r) {
  register_case(r, "copy.h2d", "host memory to device memory", 1);
  register_case(r, "copy.d2h", "device memory to host memory", 1);
  register_case(r, "copy.d2d", "within one device's memory", 1);
  register_case(r, "copy.p2p", "device to device: uni, bidir, local reference", 2);
}

void validate_copy(const Backend& backend, const CopyConfig& cfg) {
  const int n = static_cast<int>(backend.devices().size());
  auto check_dev = [&](int d, const char* opt) {
    if (d < 0 || d >= n)
      throw UsageError(fmt::format("{} {} out of range: the {} backend has {} device{} (0..{})",
                                   opt, d, backend.name(), n, n == 1 ? "" : "s", n - 1));
  };
  if (cfg.device) check_dev(*cfg.device, "-d");
  if (cfg.src.has_value() != cfg.dst.has_value()) throw UsageError("--src and --dst go together");
  if (cfg.src) {
    check_dev(*cfg.src, "--src");
    check_dev(*cfg.dst, "--dst");
    if (*cfg.src == *cfg.dst)
      throw UsageError("--src and --dst must differ (d2d measures one device)");
  }
  if (cfg.iters < 1 || cfg.p2p_iters < 1) throw UsageError("-n must be at least 1");
  if (cfg.warmup < 0) throw UsageError("-w must not be negative");
  for (const auto& g : plan_copy(cfg, n)) {
    if (g.kase == CopyCase::p2p && g.src < 0) continue;  // waived: nothing allocated
    const Bytes biggest = *std::max_element(g.sizes->begin(), g.sizes->end());
    const Bytes need = g.footprint(biggest);
    const Bytes free = backend.free_memory(MemKind::device, std::max(g.src, g.dst));
    if (free && need > free)
      throw UsageError(fmt::format("{} at {} needs {} of memory, only {} is available", g.label(),
                                   format_size(biggest), format_capacity(need),
                                   format_capacity(free)));
  }
}

std::vector<Record> run_copy(Backend& backend, const Registry& registry, const CopyConfig& cfg,
                             const Progress& progress) {
  const auto groups = plan_copy(cfg, static_cast<int>(backend.devices().size()));
  const std::vector<int> threads =
      cfg.thread_counts.empty() ? std::vector<int>{cfg.copier.threads} : cfg.thread_counts;
  std::size_t total = 0, done = 0;
  for (const auto& g : groups) total += g.sizes->size() * cfg.methods.size() * threads.size();
  std::vector<Record> out;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    const Support sup = group_support(backend, registry, g);
    const Bytes biggest = *std::max_element(g.sizes->begin(), g.sizes->end());
    std::optional<Buffers> bufs;
    std::string alloc_error;
    if (sup.ok) {
      try {
        bufs = prepare(backend, cfg, g, gi, biggest);
      } catch (const std::exception& e) {  // RuntimeError, bad_alloc
        alloc_error = e.what();
      }
    }
    for (Method m : cfg.methods)
      for (int t : threads) {
        std::size_t sent = out.size();
        // The records of the sizes done so far, final: to the run's output.
        const auto finished = [&] {
          for (; sent < out.size(); ++sent) {
            if (!cfg.thread_counts.empty()) out[sent].set(copy_field::threads, std::int64_t{t});
            record_done(out[sent]);
          }
        };
        CopierOptions opts = cfg.copier;
        opts.threads = t;
        const std::string what = cfg.thread_counts.empty()
                                     ? std::string(to_string(m))
                                     : fmt::format("{} threads {}", to_string(m), t);
        run_method(
            backend, cfg, g, bufs ? &*bufs : nullptr, sup, alloc_error, m, opts,
            [&](Bytes n) {
              finished();
              stop_point();
              if (progress)
                progress(done, total, fmt::format("{} {} {}", g.label(), what, format_size(n)));
              ++done;
            },
            out);
        finished();
      }
  }
  if (progress) progress(total, total, "done");
  return out;
}

}  // namespace xb
