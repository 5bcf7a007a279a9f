#include "family/kv/kv_handoff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "core/corruption.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "core/stats.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "engine/ucx.hpp"
#include "family/agree.hpp"
#include "family/cycles.hpp"
#include "family/nic_fields.hpp"

namespace xb {
namespace {

using engine::Op;

// Who holds what: prefill shard s on rank s % pre, decode shard d on rank
// pre + d % (n - pre); a rank's shards follow each other in its pool.
struct Roles {
  int n = 2, pre = 1;
  int prefill_rank(int s) const { return s % pre; }
  int decode_rank(int d) const { return pre + d % (n - pre); }
  int shards_on(int rank, int tp) const {
    const int ranks = rank < pre ? pre : n - pre;
    const int local = rank < pre ? rank : rank - pre;
    return local < tp ? (tp - local + ranks - 1) / ranks : 0;
  }
  // Where shard `s` of a side starts in its rank's pool, in shard pools.
  static std::uint64_t index_of(int s, int ranks) { return static_cast<std::uint64_t>(s / ranks); }
};

Roles roles_of(const Runtime& rt, const KvHandoffConfig& cfg) {
  Roles r;
  r.n = rt.size();
  r.pre = cfg.prefill_ranks > 0 ? cfg.prefill_ranks : std::max(1, r.n / 2);
  return r;
}

// The largest step: the pools are sized for it.
struct Sizes {
  int pages = 1, burst = 1;
  std::uint64_t src_pool = 0, dst_pool = 0;  // one shard's, bytes
};

Sizes sizes_of(const KvHandoffConfig& cfg) {
  Sizes s;
  s.pages = pages_of(*std::max_element(cfg.isl.begin(), cfg.isl.end()), cfg.plan.page_tokens);
  s.burst = *std::max_element(cfg.bursts.begin(), cfg.bursts.end());
  const auto units = static_cast<std::uint64_t>(s.burst) * static_cast<std::uint64_t>(s.pages) *
                     static_cast<std::uint64_t>(cfg.model.layers);
  s.src_pool = units * unit_bytes(cfg.model, cfg.plan.tp, cfg.plan.page_tokens);
  s.dst_pool = units * unit_bytes(cfg.model, cfg.plan.decode_tp, cfg.plan.page_tokens);
  return s;
}

// The pattern: every head's page of every (request, page, layer, K/V) its
// own words, so a byte that lands on the wrong shard, head or page differs.
std::uint64_t unit_key(int req, int page, int layer, int kv, int head) {
  return splitmix64_mix((static_cast<std::uint64_t>(req) << 48) ^
                        (static_cast<std::uint64_t>(page) << 24) ^
                        (static_cast<std::uint64_t>(layer) << 12) ^
                        (static_cast<std::uint64_t>(kv) << 10) ^ static_cast<std::uint64_t>(head));
}

void fill_words(std::byte* out, std::uint64_t n, std::uint64_t key) {
  for (std::uint64_t i = 0, w = 0; i < n; i += 8, ++w) {
    const std::uint64_t v = splitmix64_mix(key + w);
    std::memcpy(out + i, &v, std::min<std::uint64_t>(8, n - i));
  }
}

// Shard `shard` of `tp`'s unit of (req, page, layer), as the pattern says.
void fill_unit(const KvModel& m, int tp, int shard, int page_tokens, int req, int page, int layer,
               std::byte* unit) {
  const std::uint64_t bytes = unit_bytes(m, tp, page_tokens);
  if (m.latent > 0) {
    fill_words(unit, bytes, unit_key(req, page, layer, 0, 0));
    return;
  }
  const HeadSlice h = head_slice(m, tp, shard);
  const std::uint64_t chunk = bytes / 2 / static_cast<std::uint64_t>(h.count);
  for (int kv = 0; kv < 2; ++kv)
    for (int i = 0; i < h.count; ++i)
      fill_words(unit + static_cast<std::uint64_t>(kv) * (bytes / 2) +
                     static_cast<std::uint64_t>(i) * chunk,
                 chunk, unit_key(req, page, layer, kv, h.first + i));
}

struct Mesh {
  engine::Worker worker;
  std::unique_ptr<engine::Region> pool;
  std::vector<std::unique_ptr<engine::Remote>> peers;  // by rank, null for self
};

// One (isl, burst) step's transfers as this rank posts them: per request,
// per peer, the batch; and the bytes it moves per peer.
struct Posts {
  std::vector<std::map<int, std::vector<engine::Xfer>>> by_request;
  std::map<int, std::uint64_t> bytes_per_peer;
  bool any() const { return !bytes_per_peer.empty(); }
};

struct Step {
  int isl = 0, burst = 0, pages = 0;
  bool push = false;
  KvPool src, dst;
  std::vector<std::vector<KvDesc>> descs;  // per request
};

Posts posts_of(const Step& st, const Roles& ro, const KvHandoffConfig& cfg, Mesh& m, int me,
               const Sizes& sz) {
  Posts p;
  p.by_request.resize(static_cast<std::size_t>(st.burst));
  const int pre = ro.pre, dec = ro.n - ro.pre;
  for (int r = 0; r < st.burst; ++r)
    for (const KvDesc& d : st.descs[static_cast<std::size_t>(r)]) {
      const int src_rank = ro.prefill_rank(d.src_shard), dst_rank = ro.decode_rank(d.dst_shard);
      const std::uint64_t src_at = Roles::index_of(d.src_shard, pre) * sz.src_pool + d.src_off;
      const std::uint64_t dst_at = Roles::index_of(d.dst_shard, dec) * sz.dst_pool + d.dst_off;
      const int mine = st.push ? src_rank : dst_rank;
      if (mine != me) continue;
      const int peer = st.push ? dst_rank : src_rank;
      p.by_request[static_cast<std::size_t>(r)][peer].push_back(
          {m.pool->data() + (st.push ? src_at : dst_at), st.push ? dst_at : src_at, d.bytes});
      p.bytes_per_peer[peer] += d.bytes;
    }
  (void)cfg;
  return p;
}

// One burst: every request posted at once, then completed in order; each
// request's time from the start (us). Push flushes after each request: a
// flush waits for every write posted so far, the later requests' too.
std::vector<double> burst_round(Mesh& m, const Posts& p, bool push) {
  const auto t0 = Clock::now();
  std::vector<std::map<int, std::size_t>> counts(p.by_request.size());
  for (std::size_t r = 0; r < p.by_request.size(); ++r)
    for (const auto& [peer, batch] : p.by_request[r]) {
      engine::Remote& remote = *m.peers[static_cast<std::size_t>(peer)];
      const std::size_t before = remote.pending();
      remote.post(push ? Op::write : Op::read, batch);
      counts[r][peer] = remote.pending() - before;
    }
  std::vector<double> us(p.by_request.size(), 0.0);
  for (std::size_t r = 0; r < p.by_request.size(); ++r) {
    for (const auto& [peer, n] : counts[r]) {
      engine::Remote& remote = *m.peers[static_cast<std::size_t>(peer)];
      remote.wait_first(n);
      if (push) remote.flush();
    }
    us[r] = elapsed_us(t0, Clock::now());
  }
  return us;
}

// The wire ceiling: the same bytes per peer as few descriptors as the pools
// allow (one, unless a peer's bytes exceed a pool), from the pools' starts.
double ceiling_round(Mesh& m, const Posts& p, bool push, const Sizes& sz) {
  const std::uint64_t most = std::min(m.pool->size(), std::min(sz.src_pool, sz.dst_pool));
  const auto t0 = Clock::now();
  for (const auto& [peer, bytes] : p.bytes_per_peer) {
    std::vector<engine::Xfer> batch;
    for (std::uint64_t at = 0; at < bytes; at += most)
      batch.push_back({m.pool->data(), 0, std::min(most, bytes - at)});
    m.peers[static_cast<std::size_t>(peer)]->post(push ? Op::write : Op::read, batch);
  }
  for (const auto& [peer, bytes] : p.bytes_per_peer)
    m.peers[static_cast<std::size_t>(peer)]->wait();
  return elapsed_us(t0, Clock::now());
}

// Fills this rank's prefill shards' units of the step; poisons its decode pool.
void prepare(const Step& st, const Roles& ro, const KvHandoffConfig& cfg, Mesh& m, int me,
             const Sizes& sz) {
  const KvModel& mo = cfg.model;
  const int pt = cfg.plan.page_tokens;
  if (me >= ro.pre) {
    std::memset(m.pool->data(), 0x5A, m.pool->size());
    return;
  }
  const std::uint64_t su = unit_bytes(mo, cfg.plan.tp, pt);
  for (int s = 0; s < cfg.plan.tp; ++s) {
    if (ro.prefill_rank(s) != me) continue;
    std::byte* base = m.pool->data() + Roles::index_of(s, ro.pre) * sz.src_pool;
    for (int r = 0; r < st.burst; ++r)
      for (int pg = 0; pg < st.pages; ++pg)
        for (int l = 0; l < mo.layers; ++l)
          fill_unit(mo, cfg.plan.tp, s, pt, r, pg, l, base + st.src.slot(r, pg, l) * su);
  }
}

// Bytes of this rank's decode shards that differ from the pattern, over the
// units the step moved, and the first of them (its offset in this rank's
// pool, the byte wanted and the byte there).
struct WrongBytes {
  std::uint64_t count = 0, first = 0;
  std::uint8_t want = 0, got = 0;
};
WrongBytes wrong_bytes(const Step& st, const Roles& ro, const KvHandoffConfig& cfg, Mesh& m, int me,
                       const Sizes& sz) {
  WrongBytes out;
  if (me < ro.pre) return out;
  const KvModel& mo = cfg.model;
  const int pt = cfg.plan.page_tokens;
  const std::uint64_t du = unit_bytes(mo, cfg.plan.decode_tp, pt);
  std::vector<std::byte> want(du);
  for (int d = 0; d < cfg.plan.decode_tp; ++d) {
    if (ro.decode_rank(d) != me) continue;
    const std::byte* base = m.pool->data() + Roles::index_of(d, ro.n - ro.pre) * sz.dst_pool;
    for (int r = 0; r < st.burst; ++r)
      for (int pg = 0; pg < st.pages; ++pg)
        for (int l = 0; l < mo.layers; ++l) {
          if (pg < kv_first_page(mo, l, st.isl, pt)) continue;
          fill_unit(mo, cfg.plan.decode_tp, d, pt, r, pg, l, want.data());
          const std::byte* got = base + st.dst.slot(r, pg, l) * du;
          if (std::memcmp(got, want.data(), du) == 0) continue;
          for (std::uint64_t i = 0; i < du; ++i) {
            if (got[i] == want[i]) continue;
            if (!out.count++) {
              out.first = static_cast<std::uint64_t>(got + i - m.pool->data());
              out.want = std::to_integer<std::uint8_t>(want[i]);
              out.got = std::to_integer<std::uint8_t>(got[i]);
            }
          }
        }
  }
  return out;
}

// The test seam: one byte of the last page's first layer on the last rank.
void corrupt_one(const Step& st, const Roles& ro, const KvHandoffConfig& cfg, Mesh& m, int me) {
  if (!cfg.corrupt || me != ro.n - 1) return;
  m.pool->data()[st.dst.slot(0, st.pages - 1, 0) *
                 unit_bytes(cfg.model, cfg.plan.decode_tp, cfg.plan.page_tokens)] ^= std::byte{1};
}

// Element-wise MAX over ranks (a rank with no samples counts 0).
std::vector<double> max_over(const std::vector<std::vector<double>>& all, std::size_t n) {
  std::vector<double> out(n, 0.0);
  for (const auto& v : all)
    for (std::size_t i = 0; i < std::min(n, v.size()); ++i) out[i] = std::max(out[i], v[i]);
  return out;
}

// The NIC that counted the most of any rank (its host's counters over the
// timed rounds) on the record, with its wire GB/s and the errors that grew.
void set_busiest_nic(Record& r, const std::vector<std::string>& all,
                     const std::vector<double>& rounds_us) {
  NicDelta best;
  std::string errors;
  for (const std::string& t : all) {
    const NicWire w = parse_nic_wire(t);
    NicDelta d;
    d.nic = w.nic;
    d.tx_bytes = w.tx_bytes;
    d.rx_bytes = w.rx_bytes;
    const std::string& errs = w.errors;
    if (!d.nic.empty() &&
        std::max(d.tx_bytes, d.rx_bytes) > std::max(best.tx_bytes, best.rx_bytes)) {
      best = d;
      errors = errs;
    }
  }
  if (best.nic.empty()) return;
  double us = 0;
  for (double u : rounds_us) us += u;
  set_nic_fields(r, best, us / 1e6);
  if (!errors.empty()) r.set(nic_field::nic_errors, errors);
}

}  // namespace

void validate_handoff(Runtime& rt, const KvHandoffConfig& cfg) {
  std::string err;
  const KvModel& m = cfg.model;
  const Roles ro = roles_of(rt, cfg);
  auto tp_fits = [&](int tp, const char* opt) {
    if (m.latent > 0 || tp <= 0 || !err.empty()) return;
    if ((tp <= m.kv_heads && m.kv_heads % tp != 0) || (tp > m.kv_heads && tp % m.kv_heads != 0))
      err =
          fmt::format("{} {}: {} has {} KV heads, and TP must divide them or be a multiple of them",
                      opt, tp, m.name, m.kv_heads);
  };
  if (rt.size() < 2)
    err =
        "kv --model needs at least 2 ranks (prefill and decode): run under `mpiexec -n 2` or "
        "add --ranks 2";
  else if (ro.pre >= rt.size())
    err = fmt::format("--prefill-ranks {} leaves no decode rank of {}", ro.pre, rt.size());
  tp_fits(cfg.plan.tp, "--tp");
  tp_fits(cfg.plan.decode_tp, "--decode-tp");
  if (err.empty() && cfg.plan.pp > m.layers)
    err = fmt::format("--pp {}: {} has {} layers", cfg.plan.pp, m.name, m.layers);
  if (err.empty()) {
    const Sizes sz = sizes_of(cfg);
    const long double most =
        std::max(static_cast<long double>(ro.shards_on(0, cfg.plan.tp)) * sz.src_pool,
                 static_cast<long double>(ro.shards_on(ro.pre, cfg.plan.decode_tp)) * sz.dst_pool);
    const long double local = rt.single_host() ? rt.size() : 1;
    const long double need = most * local;
    err = memory_shortfall(
        fmt::format("the KV pools of {} at {} tokens x {} requests", m.name,
                    *std::max_element(cfg.isl.begin(), cfg.isl.end()), sz.burst),
        need >= 1.8e19L ? ~std::uint64_t{0} : static_cast<std::uint64_t>(need),
        rt.single_host() ? fmt::format(" ({} ranks on this host)", rt.size()) : std::string());
  }
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
}

std::vector<Record> run_handoff(Runtime& rt, const KvHandoffConfig& cfg) {
  const Roles ro = roles_of(rt, cfg);
  const Sizes sz = sizes_of(cfg);
  const int me = rt.rank();
  const KvModel& mo = cfg.model;
  Mesh m;
  const std::uint64_t pool_bytes =
      std::max<std::uint64_t>(1, me < ro.pre ? ro.shards_on(me, cfg.plan.tp) * sz.src_pool
                                             : ro.shards_on(me, cfg.plan.decode_tp) * sz.dst_pool);
  if (auto err = agree_on(
          rt,
          [&] {
            m.pool = std::make_unique<engine::Region>(m.worker, pool_bytes);
            const auto all = rt.allgather(engine::encode(m.pool->describe(0, pool_bytes, 0)));
            m.peers.resize(static_cast<std::size_t>(rt.size()));
            for (int p = 0; p < rt.size(); ++p)
              if (p != me)
                m.peers[static_cast<std::size_t>(p)] = std::make_unique<engine::Remote>(
                    m.worker, engine::decode_descriptor(all[static_cast<std::size_t>(p)]),
                    cfg.timeout_s, false);
          });
      !err.empty())
    throw RuntimeError(err);
  const std::function<void()> serve = [&m] { m.worker.progress(); };
  std::vector<Record> out;
  for (int isl : cfg.isl)
    for (int burst : cfg.bursts)
      for (bool push : cfg.push) {
        stop_point(&rt);
        const int pages = pages_of(isl, cfg.plan.page_tokens);
        Step st{isl,
                burst,
                pages,
                push,
                KvPool(burst, pages, mo.layers, cfg.plan.fragment, cfg.plan.seed),
                KvPool(burst, pages, mo.layers, cfg.plan.fragment, cfg.plan.seed + 1),
                {}};
        for (int r = 0; r < burst; ++r)
          st.descs.push_back(request_descs(mo, cfg.plan, isl, r, st.src, st.dst));
        const KvRequestShape shape = shape_of(st.descs.front());
        const Posts posts = posts_of(st, ro, cfg, m, me, sz);
        prepare(st, ro, cfg, m, me, sz);
        rt.barrier(serve);
        std::vector<double> mine, rounds;
        NicWindow nics;  // across hosts: each rank's NICs over the timed rounds
        const bool count = !rt.single_host();
        CheckTally tally;  // --check every: each timed round's decode shards
        const std::string where = fmt::format("rank {} ({})", me, host_name());
        for (int i = 0; i < cfg.warmup + cfg.iters; ++i) {
          const bool checked = cfg.check_every && i >= cfg.warmup;
          if (checked) prepare(st, ro, cfg, m, me, sz);  // poisoned again, outside its time
          rt.barrier(serve);
          if (count && i == cfg.warmup) nics.open();
          const std::vector<double> us =
              posts.any() ? burst_round(m, posts, push) : std::vector<double>(burst, 0.0);
          if (i >= cfg.warmup) mine.insert(mine.end(), us.begin(), us.end());
          if (!checked) continue;
          rt.barrier(serve);  // every writer of this rank's shards is done
          corrupt_one(st, ro, cfg, m, me);
          const WrongBytes w = wrong_bytes(st, ro, cfg, m, me, sz);
          const std::int64_t k = i - cfg.warmup;
          tally.add(k, w.count
                           ? std::optional(byte_mismatch(k, where, w.first, w.want, w.got, w.count))
                           : std::nullopt);
        }
        if (cfg.check_every) tally = allgather_tally(rt, tally);
        std::string nic_text;  // "NIC\tTX\tRX\tERRORS", "" where no NIC moved its share
        if (count) {
          const std::uint64_t share = shape.bytes * static_cast<std::uint64_t>(burst) *
                                      static_cast<std::uint64_t>(cfg.iters) /
                                      static_cast<std::uint64_t>(std::max(ro.pre, ro.n - ro.pre));
          nic_text = nic_wire(nics.close(share));
        }
        std::vector<double> ceiling;
        for (int i = 0; i < cfg.iters; ++i) {
          rt.barrier(serve);
          ceiling.push_back(posts.any() ? ceiling_round(m, posts, push, sz) : 0.0);
        }
        // The check: decode pools poisoned, one more burst, the pattern compared.
        double wrong = 0;
        if (cfg.check && !cfg.check_every) {
          rt.barrier(serve);
          prepare(st, ro, cfg, m, me, sz);
          rt.barrier(serve);
          if (posts.any()) burst_round(m, posts, push);
          rt.barrier(serve);
          corrupt_one(st, ro, cfg, m, me);
          wrong = static_cast<double>(wrong_bytes(st, ro, cfg, m, me, sz).count);
          wrong = rt.sum(wrong);
        }
        rt.barrier(serve);
        // A request's time: the last of its ranks; a burst's: its last request.
        const auto n = static_cast<std::size_t>(cfg.iters) * static_cast<std::size_t>(burst);
        const std::vector<double> req = max_over(allgather_doubles(rt, mine), n);
        const std::vector<double> ceil = max_over(allgather_doubles(rt, ceiling), ceiling.size());
        for (int i = 0; i < cfg.iters; ++i)
          rounds.push_back(
              *std::max_element(req.begin() + static_cast<std::ptrdiff_t>(i) * burst,
                                req.begin() + static_cast<std::ptrdiff_t>(i + 1) * burst));
        const Stats per_req = compute_stats(req);
        Record r;
        r.kase = push ? "push" : "pull";
        r.method = "ucx";
        r.bytes = shape.bytes * static_cast<std::uint64_t>(burst);
        r.set_samples(rounds);
        r.set(kv_field::model, mo.name);
        r.set(kv_field::tp, std::int64_t{cfg.plan.tp});
        r.set(kv_field::decode_tp, std::int64_t{cfg.plan.decode_tp});
        r.set(kv_field::isl, std::int64_t{isl});
        r.set(kv_field::page_tokens, std::int64_t{cfg.plan.page_tokens});
        r.set(kv_field::layout, std::string(cfg.plan.layer_layout ? "layer" : "block"));
        r.set(kv_field::fragment, cfg.plan.fragment);
        r.set(kv_field::burst, std::int64_t{burst});
        r.set(kv_field::descs, static_cast<std::int64_t>(shape.descs));
        r.set(kv_field::desc_bytes, static_cast<std::int64_t>(shape.largest));
        r.set(kv_field::request_bytes, static_cast<std::int64_t>(shape.bytes));
        r.set(kv_field::handoff_p50_us, per_req.median);
        r.set(kv_field::handoff_p99_us, per_req.p99);
        r.set(kv_field::handoff_max_us, per_req.max);
        const int initiators = push ? ro.pre : ro.n - ro.pre;
        r.set(kv_field::rank_gbps, r.gbps_median / initiators);
        const double ceil_med = compute_stats(ceil).median;
        if (ceil_med > 0 && r.time_us.median > 0)
          r.set(kv_field::ceiling_ratio, ceil_med / r.time_us.median);
        if (count) set_busiest_nic(r, rt.allgather(nic_text), rounds);
        if (cfg.prefill_tps > 0)
          r.set(kv_field::prefill_share, per_req.median / (isl / cfg.prefill_tps * 1e6));
        if (cfg.check_every) {
          r.set(kv_field::wrong_bytes,
                tally.first() ? static_cast<std::int64_t>(tally.first()->count) : std::int64_t{0});
          set_check_fields(r, tally);
        } else if (cfg.check) {
          r.set(kv_field::wrong_bytes, static_cast<std::int64_t>(wrong));
          r.verified = wrong == 0;
          if (wrong > 0) {
            r.status = Status::failed;
            r.reason =
                fmt::format("{} bytes of the decode shards differ from the prefill's", wrong);
          }
        }
        record_done(r);
        out.push_back(std::move(r));
      }
  return out;
}

}  // namespace xb
