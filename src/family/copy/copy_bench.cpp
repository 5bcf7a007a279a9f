#include "family/copy/copy_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>

#include "core/corruption.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
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

// The buffers of one group, sized for its largest copy (doubled where the
// legs also interfere at twice the size): one source and one destination
// per leg.
struct Buffers {
  std::vector<std::unique_ptr<Buffer>> src, dst;
  std::vector<std::uint64_t> seeds;
};

std::unique_ptr<Buffer> alloc_end(Backend& b, const CopyConfig& cfg, int dev, Bytes n) {
  return dev < 0 ? b.allocate(cfg.host_mem, -1, n) : b.allocate(MemKind::device, dev, n);
}

Buffers prepare(Backend& b, const CopyConfig& cfg, const CopyGroup& g, std::size_t gi,
                Bytes biggest) {
  const Bytes n = g.leg_bytes(biggest);
  Buffers bufs;
  for (std::size_t i = 0; i < g.legs.size(); ++i) {
    bufs.src.push_back(alloc_end(b, cfg, g.legs[i].src, n));
    bufs.dst.push_back(alloc_end(b, cfg, g.legs[i].dst, n));
    bufs.seeds.push_back(0x9E37ULL * (gi + 1) + i);
    fill_buffer(b, *bufs.src.back(), n, bufs.seeds.back());
  }
  return bufs;
}

Record base_record(const std::string& kase, Method m, int src, int dst, Bytes n) {
  Record r;
  r.kase = kase;
  r.method = to_string(m);
  r.src = src;
  r.dst = dst;
  r.bytes = n;
  return r;
}

// A record between two devices names the link between them.
void set_link(const Backend& b, Record& r) {
  if (r.src >= 0 && r.dst >= 0 && r.src != r.dst)
    r.set(copy_field::link, b.link_type(r.src, r.dst));
}

// The sum of a group: every leg's bytes, counted once, over the batch time.
Record total_record(const CopyGroup& g, Method m, Bytes n) {
  return base_record(total_case(g.kase), m, g.src, g.dst, g.legs.size() * n);
}

// "device 1" (d2d), "host -> device 0", "device 0 -> device 1".
std::string leg_where(const CopyLeg& l) {
  const auto end = [](int d) { return d < 0 ? std::string("host") : fmt::format("device {}", d); };
  return l.src == l.dst ? end(l.src) : end(l.src) + " -> " + end(l.dst);
}

// --check every: before each timed iteration (outside its timing) every
// leg's source gets the iteration's own pattern and its destination the
// poison; after it, each leg the batch times is checked into its tally,
// and in the batch that times the group's sum every leg into the sum's
// (an iteration of the sum is wrong when one of its legs is).
class EveryCheck {
 public:
  EveryCheck(Backend& b, const CopyGroup& g, Buffers& bufs)
      : b_(b), g_(g), bufs_(bufs), tallies_(g.legs.size()), next_(g.legs.size(), 0) {}
  void before(const CopyBatch& cb, std::int64_t iter) {
    for (std::size_t leg = 0; leg < g_.legs.size(); ++leg) {
      if (!cb.bytes[leg]) continue;
      fill_buffer(b_, *bufs_.src[leg], cb.bytes[leg], seed(leg, iter));
      poison_buffer(b_, *bufs_.dst[leg], cb.bytes[leg]);
    }
  }
  void after(const CopyBatch& cb, std::int64_t iter) {
    std::optional<FirstBad> sum_bad;
    const std::int64_t ks = cb.sum ? sum_next_++ : 0;
    for (std::size_t leg = 0; leg < g_.legs.size(); ++leg) {
      const bool timed = std::find(cb.legs.begin(), cb.legs.end(), leg) != cb.legs.end();
      if ((!timed && !cb.sum) || !cb.bytes[leg]) continue;
      const std::int64_t k = timed ? next_[leg]++ : ks;
      auto bad = check_buffer(b_, *bufs_.dst[leg], cb.bytes[leg], seed(leg, iter), k,
                              leg_where(g_.legs[leg]));
      if (cb.sum && bad && !sum_bad) {
        sum_bad = *bad;
        sum_bad->iter = ks;
      }
      if (timed) tallies_[leg].add(k, std::move(bad));
    }
    if (cb.sum) sum_.add(ks, std::move(sum_bad));
  }
  const CheckTally& tally(std::size_t leg) const { return tallies_[leg]; }
  const CheckTally& sum() const { return sum_; }

 private:
  std::uint64_t seed(std::size_t leg, std::int64_t iter) const {
    return bufs_.seeds[leg] ^ splitmix64_mix(static_cast<std::uint64_t>(iter) + 1);
  }
  Backend& b_;
  const CopyGroup& g_;
  Buffers& bufs_;
  std::vector<CheckTally> tallies_;
  std::vector<std::int64_t> next_;  // each leg's next checked iteration
  CheckTally sum_;                  // the sum's batch, its iterations
  std::int64_t sum_next_ = 0;
};

// Warm-up, timed iterations, verification: the records of one size, each
// leg's and then the group's sum where it has one, each timed in its batch
// (copy_batches).
std::vector<Record> measure(Backend& b, Copier& copier, const CopyConfig& cfg, const CopyGroup& g,
                            Buffers& bufs, Bytes n) {
  const bool last = cfg.check && !cfg.check_every;
  if (last)
    for (auto& dst : bufs.dst) poison_buffer(b, *dst, n);
  std::optional<EveryCheck> every;
  if (cfg.check_every) every.emplace(b, g, bufs);
  std::vector<std::vector<double>> per_op(g.legs.size());
  std::vector<double> batch;
  std::int64_t iter = 0;
  for (const CopyBatch& cb : copy_batches(g, n)) {
    std::vector<CopyOp> ops;
    for (std::size_t i = 0; i < g.legs.size(); ++i)
      ops.push_back({bufs.src[i].get(), bufs.dst[i].get(), cb.bytes[i], g.legs[i].by});
    for (int i = 0; i < cfg.warmup; ++i) copier.run(ops);
    for (int i = 0; i < g.iters; ++i, ++iter) {
      if (every) every->before(cb, iter);
      const CopyTiming t = copier.run(ops);
      if (every) every->after(cb, iter);
      for (std::size_t leg : cb.legs) per_op[leg].push_back(t.op_us[leg]);
      if (cb.sum) batch.push_back(t.batch_us);
    }
  }
  if (every)  // the last pattern is what the sources hold now
    for (std::size_t i = 0; i < g.legs.size(); ++i) fill_buffer(b, *bufs.src[i], n, bufs.seeds[i]);
  std::vector<Record> out;
  bool all_ok = true;
  for (std::size_t i = 0; i < g.legs.size(); ++i) {
    Record r = base_record(g.kase, copier.method(), g.legs[i].src, g.legs[i].dst, n);
    r.set_samples(per_op[i]);
    set_link(b, r);
    if (cfg.d2d_read_write && g.kase == copy_case::d2d) {
      r.gbps_median *= 2;
      r.gbps_max *= 2;
      r.set(copy_field::counted, std::string("read+write"));
    }
    if (every) {
      set_check_fields(r, every->tally(i));
      all_ok = all_ok && r.status == Status::ok;
    } else if (last) {
      const auto bad = verify_buffer(b, *bufs.dst[i], n, bufs.seeds[i]);
      r.verified = !bad;
      if (bad) {
        r.status = Status::failed;
        r.reason = fmt::format("verification failed: first wrong byte at offset {}", *bad);
        all_ok = false;
      }
    }
    out.push_back(std::move(r));
  }
  if (g.total) {
    Record t = total_record(g, copier.method(), n);
    t.set_samples(batch);
    set_link(b, t);
    if (cfg.check) t.verified = all_ok;
    if (every) set_check_fields(t, every->sum());
    if (!all_ok && !every) {
      t.status = Status::failed;
      t.reason = "verification failed in one of its copies";
    }
    out.push_back(std::move(t));
  }
  return out;
}

void add_unrun(std::vector<Record>& out, const CopyGroup& g, Method m, Bytes n, Status st,
               const std::string& why) {
  std::vector<Record> recs;
  for (const auto& l : g.legs) recs.push_back(base_record(g.kase, m, l.src, l.dst, n));
  if (g.legs.empty()) recs.push_back(base_record(g.kase, m, -1, -1, n));  // too few devices
  if (g.total) recs.push_back(total_record(g, m, n));
  for (auto& r : recs) {
    r.status = st;
    r.reason = why;
    out.push_back(std::move(r));
  }
}

Support group_support(const Backend& b, const Registry& reg, const CopyGroup& g) {
  if (const auto* def = reg.find(std::string("copy.") + g.pattern)) {
    Support s = def->filter(b.capabilities());
    if (!s.ok) return s;
  }
  for (const auto& l : g.legs) {
    if (l.src < 0 || l.dst < 0 || l.src == l.dst) continue;
    const int by = l.by.value_or(l.src);
    const int other = by == l.src ? l.dst : l.src;
    Support s = b.peer_access(by, other);
    if (!s.ok) return Support::no(fmt::format("no peer access {}->{}: {}", by, other, s.reason));
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

std::optional<FirstBad> check_buffer(Backend& b, const Buffer& buf, Bytes n, std::uint64_t seed,
                                     std::int64_t iter, const std::string& where) {
  std::vector<std::byte> stage(std::min(n, kStage));
  std::optional<FirstBad> bad;
  for (Bytes off = 0; off < n; off += stage.size()) {
    const Bytes len = std::min<Bytes>(stage.size(), n - off);
    b.read(buf, off, std::span(stage).first(len));
    auto piece = pattern_bad(std::span<const std::byte>(stage).first(len), seed, off, iter, where);
    if (!piece) continue;
    if (bad) {
      bad->count += piece->count;
    } else {
      bad = std::move(piece);
      bad->offset += off;  // from the buffer's start
    }
  }
  return bad;
}

void register_copy(Registry& r) {
  for (const auto& p : copy_patterns())
    register_case(r, (std::string("copy.") + p.key).c_str(), p.help, p.min_devices);
}

void validate_copy(const Backend& backend, const CopyConfig& cfg) {
  const int n = static_cast<int>(backend.devices().size());
  auto check_dev = [&](int d, const char* opt) {
    if (d < 0 || d >= n)
      throw UsageError(fmt::format("{} {} out of range: the {} backend has {} device{} (0..{})",
                                   opt, d, backend.name(), n, n == 1 ? "" : "s", n - 1));
  };
  if (cfg.cases.empty()) throw UsageError("-t needs at least one of " + pattern_names());
  bool op = false, bidir = false, device = false, pair = false;
  for (const auto& key : cfg.cases) {
    const CopyPattern* p = find_pattern(key);
    if (!p)
      throw UsageError(fmt::format("-t: unknown copy pattern '{}' ({})", key, pattern_names()));
    op = op || p->takes_op;
    bidir = bidir || p->takes_bidir;
    device = device || p->takes_device;
    pair = pair || key == copy_case::p2p;
    if (p->min_devices > n && key != copy_case::p2p)  // p2p on one device is waived, as before
      throw UsageError(fmt::format("-t {} needs at least {} devices, the {} backend has {}{}", key,
                                   p->min_devices, backend.name(), n,
                                   backend.name() == "host"
                                       ? " (XFERBENCH_HOST_DEVICES=N exposes N on the host backend)"
                                       : ""));
  }
  const bool op_given = cfg.p2p_ops.size() != 1 || cfg.p2p_ops.front() != P2pOp::write;
  if (op_given && !op)
    throw UsageError("--p2p-op applies to p2p, all_to_one and one_to_all (device-to-device)");
  if (cfg.bidir && !bidir)
    throw UsageError("--bidir applies to h2d, d2h, p2p, all_to_host and host_to_all");
  if (cfg.device && !device)
    throw UsageError(
        "-d applies to h2d, d2h, d2d, all_to_one and one_to_all (all_to_host and host_to_all "
        "use every device)");
  if (cfg.src && !pair) throw UsageError("--src/--dst apply to -t p2p");
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
    if (g.legs.empty()) continue;  // waived: nothing allocated
    const Bytes biggest = *std::max_element(g.sizes->begin(), g.sizes->end());
    for (int d = 0; d < n; ++d) {
      const Bytes need = g.footprint(d, biggest);
      const Bytes free = need ? backend.free_memory(MemKind::device, d) : 0;
      if (const std::string s =
              memory_shortfall(fmt::format("{} at {}", g.label(), format_size(biggest)), need,
                               fmt::format(" of device {}'s memory", d), free);
          !s.empty())
        throw UsageError(s);
    }
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
    const Support sup =
        cfg.waive_all.empty() ? group_support(backend, registry, g) : Support::no(cfg.waive_all);
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
