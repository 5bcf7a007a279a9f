#include "family/ep/ep_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <map>
#include <optional>

#include "backend/common/device_wait.hpp"
#include "core/corruption.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/stats.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "family/coll/coll_bench.hpp"
#include "family/coll/coll_ranks.hpp"
#include "family/cycles.hpp"
#include "family/ep/ep_exchange.hpp"
#include "family/family.hpp"
#include "family/parse.hpp"

namespace xb {
namespace {

constexpr int kPhases = 3;  // dispatch, combine, roundtrip
constexpr const char* kPhaseNames[kPhases] = {"dispatch", "combine", "roundtrip"};

// One rank's samples: [phase][iteration], us.
struct EpTimes {
  std::vector<double> fresh[kPhases], chained[kPhases];
};

void run_phase(EpExchange& x, int phase) {
  if (phase != 1) x.run(EpPhase::dispatch);
  if (phase != 0) x.run(EpPhase::combine);
}

// Fresh: each phase from a barrier, host clock to completion. Chained:
// round trips back to back, each phase timed on the rank's clock from the
// end of the one before (on a device stream: by stream marks, one
// synchronize at the end).
EpTimes time_step(Runtime& rt, EpExchange& x, const EpConfig& cfg) {
  EpTimes t;
  auto marks = x.marks(2 * cfg.iters + 1);  // outside timing
  rt.barrier(Runtime::Wait::spin);
  for (int i = 0; i < cfg.warmup; ++i) run_phase(x, 2);
  x.synchronize();
  for (int p = 0; p < kPhases; ++p)
    for (int i = 0; i < cfg.iters; ++i) {
      rt.barrier(Runtime::Wait::spin);
      const auto t0 = Clock::now();
      run_phase(x, p);
      x.synchronize();
      t.fresh[p].push_back(elapsed_us(t0, Clock::now()));
    }
  rt.barrier(Runtime::Wait::spin);
  if (marks) {
    marks->mark(0);
    for (int i = 0; i < cfg.iters; ++i) {
      x.run(EpPhase::dispatch);
      marks->mark(2 * i + 1);
      x.run(EpPhase::combine);
      marks->mark(2 * i + 2);
    }
    x.synchronize();
    for (int i = 0; i < cfg.iters; ++i) {
      t.chained[0].push_back(marks->elapsed_us(2 * i, 2 * i + 1));
      t.chained[1].push_back(marks->elapsed_us(2 * i + 1, 2 * i + 2));
      t.chained[2].push_back(marks->elapsed_us(2 * i, 2 * i + 2));
    }
    return t;
  }
  auto t0 = Clock::now();
  for (int i = 0; i < cfg.iters; ++i) {
    x.run(EpPhase::dispatch);
    x.synchronize();
    const auto t1 = Clock::now();
    x.run(EpPhase::combine);
    x.synchronize();
    const auto t2 = Clock::now();
    t.chained[0].push_back(elapsed_us(t0, t1));
    t.chained[1].push_back(elapsed_us(t1, t2));
    t.chained[2].push_back(elapsed_us(t0, t2));
    t0 = t2;
  }
  return t;
}

// Every rank's samples on every rank: [rank] -> EpTimes.
std::vector<EpTimes> gather(Runtime& rt, const EpTimes& mine, int iters) {
  std::vector<double> flat;
  for (int p = 0; p < kPhases; ++p) {
    flat.insert(flat.end(), mine.fresh[p].begin(), mine.fresh[p].end());
    flat.insert(flat.end(), mine.chained[p].begin(), mine.chained[p].end());
  }
  std::vector<EpTimes> all;
  const auto n = static_cast<std::size_t>(iters);
  for (const std::vector<double>& v : allgather_doubles(rt, flat)) {
    if (v.size() != flat.size()) throw RuntimeError("ep: ranks timed different iterations");
    EpTimes t;
    for (std::size_t p = 0; p < kPhases; ++p) {
      const auto at = v.begin() + static_cast<std::ptrdiff_t>(2 * p * n);
      t.fresh[p].assign(at, at + static_cast<std::ptrdiff_t>(n));
      t.chained[p].assign(at + static_cast<std::ptrdiff_t>(n),
                          at + static_cast<std::ptrdiff_t>(2 * n));
    }
    all.push_back(std::move(t));
  }
  return all;
}

// One fresh round trip into poisoned receive buffers, outside timing, as
// this rank checked it: the first wrong byte of what it was dispatched and
// the first wrong element of what it combined, each with its count (none:
// right). `iter` and `where` label them.
struct RoundTripCheck {
  std::optional<FirstBad> dispatch, combine;
};
RoundTripCheck check_round_trip(EpExchange& x, const EpStep& step, const EpConfig& cfg,
                                std::int64_t iter, const std::string& where) {
  const int me = step.rank;
  const bool corrupts = me == step.plan.ranks - 1;
  RoundTripCheck out;
  std::vector<std::byte> got(std::max(step.dispatch.recv_bytes(), step.combine.recv_bytes()));
  const std::span<std::byte> dgot(got.data(), step.dispatch.recv_bytes());
  x.poison(EpPhase::dispatch);
  x.run(EpPhase::dispatch);
  x.synchronize();
  x.read(EpPhase::dispatch, dgot);
  if (corrupts && cfg.corrupt == "dispatch" && !dgot.empty()) got[0] ^= std::byte{1};
  if (const std::size_t n = dispatch_wrong(step.trace, me, dgot)) {
    std::vector<std::byte> want(dgot.size());
    expected_dispatch_recv(step.trace, me, want);
    std::size_t at = 0;  // the oracle counts elements; the first differing byte is the place
    while (at + 1 < want.size() && want[at] == dgot[at]) ++at;
    out.dispatch = byte_mismatch(iter, where, at, std::to_integer<std::uint8_t>(want[at]),
                                 std::to_integer<std::uint8_t>(dgot[at]), n);
    out.dispatch->unit = "dispatched byte";
    out.dispatch->count_unit = "element";  // the oracle counts elements of the type
  }
  x.poison(EpPhase::combine);
  x.run(EpPhase::combine);
  x.synchronize();
  x.read(EpPhase::combine, std::span(got.data(), step.combine.recv_bytes()));
  if (corrupts && cfg.corrupt == "combine" && step.combine.recv_bytes() > 0)
    got[1] ^= std::byte{0x40};
  const EpShape& sh = step.trace.shape();
  std::vector<float> combined(static_cast<std::size_t>(sh.tokens) *
                              static_cast<std::size_t>(sh.hidden));
  reduce_combine(step.trace, me, std::span(got.data(), step.combine.recv_bytes()), combined);
  if (const std::size_t n = combine_wrong(step.trace, me, combined)) {
    FirstBad f{iter, where, 0, "combined element", "", "", "", n, ""};
    for (int t = 0; t < sh.tokens && f.expected.empty(); ++t)
      for (int h = 0; h < sh.hidden; ++h) {
        const float want = expected_combined(step.trace, me, t, h);
        const float have = combined[static_cast<std::size_t>(t) * sh.hidden + h];
        if (want == have) continue;
        f.offset = static_cast<std::uint64_t>(t) * sh.hidden + h;
        f.expected = fmt::format("{:g}", want);
        f.got = fmt::format("{:g}", have);
        break;
      }
    out.combine = std::move(f);
  }
  return out;
}

// #wrong of dispatch and of combine, all ranks: one checked round trip.
std::pair<std::int64_t, std::int64_t> check_step(Runtime& rt, EpExchange& x, const EpStep& step,
                                                 const EpConfig& cfg) {
  const RoundTripCheck c = check_round_trip(x, step, cfg, 0, "");
  std::vector<double> sums{c.dispatch ? static_cast<double>(c.dispatch->count) : 0.0,
                           c.combine ? static_cast<double>(c.combine->count) : 0.0};
  rt.reduce(sums, Runtime::Reduce::sum);
  return {static_cast<std::int64_t>(sums[0]), static_cast<std::int64_t>(sums[1])};
}

// --check every: as many round trips as timed, after the timing, each
// checked alone (the chained period's back-to-back calls cannot be checked
// one by one without changing what they time); dispatch's, combine's and
// the round trip's tallies over every rank.
std::array<CheckTally, kPhases> check_every(Runtime& rt, EpExchange& x, const EpStep& step,
                                            const EpConfig& cfg,
                                            const std::vector<std::string>& hosts) {
  const std::string where =
      fmt::format("rank {} ({})", step.rank, hosts[static_cast<std::size_t>(step.rank)]);
  CheckTally mine[2];
  for (int i = 0; i < cfg.iters; ++i) {
    RoundTripCheck c = check_round_trip(x, step, cfg, i, where);
    mine[0].add(i, std::move(c.dispatch));
    mine[1].add(i, std::move(c.combine));
  }
  std::array<CheckTally, kPhases> all{allgather_tally(rt, mine[0]), allgather_tally(rt, mine[1]),
                                      CheckTally{}};
  all[2] = all[0];
  all[2].merge(all[1]);
  return all;
}

double median_of(std::vector<double> v) { return compute_stats(v).median; }

// The fields every record of a step carries, measured or not.
Record base_record(int phase, EpMethod m, const Communicator& comm, const EpShape& sh,
                   const EpBytes& bytes, std::uint64_t hash) {
  Record r;
  r.kase = kPhaseNames[phase];
  r.method = to_string(m);
  r.bytes = static_cast<Bytes>(bytes.payload / sh.ranks);  // per rank, the mean
  r.set(ep_field::phase, std::string(kPhaseNames[phase]));
  r.set(ep_field::library, m == EpMethod::put ? std::string("mpi") : comm.name());
  r.set(ep_field::tokens, std::int64_t{sh.tokens});
  r.set(ep_field::hidden, std::int64_t{sh.hidden});
  r.set(ep_field::topk, std::int64_t{sh.topk});
  r.set(ep_field::experts, std::int64_t{sh.experts});
  r.set(ep_field::routing, to_string(sh.routing));
  r.set(ep_field::dispatch_dtype, std::string(to_string(sh.dispatch)));
  r.set(ep_field::payload_bytes, static_cast<std::int64_t>(bytes.payload));
  r.set(ep_field::local_bytes, static_cast<std::int64_t>(bytes.local));
  r.set(ep_field::node_bytes, static_cast<std::int64_t>(bytes.node));
  r.set(ep_field::remote_bytes, static_cast<std::int64_t>(bytes.remote));
  r.set(ep_field::logical_bytes, static_cast<std::int64_t>(bytes.logical));
  r.set(ep_field::trace_hash, static_cast<std::int64_t>(hash >> 1));
  return r;
}

void set_figures(Record& r, int phase, const std::vector<EpTimes>& all, const EpConfig& cfg,
                 const std::vector<std::string>& hosts) {
  const auto p = static_cast<std::size_t>(phase);
  std::vector<std::vector<double>> fresh;
  std::vector<double> fresh_med, chained_med;
  for (const EpTimes& t : all) {
    fresh.push_back(t.fresh[p]);
    fresh_med.push_back(median_of(t.fresh[p]));
    chained_med.push_back(median_of(t.chained[p]));
  }
  r.set_stats(aggregate(fresh, TimeAgg::max), cfg.iters);  // each statistic's MAX over ranks
  const double fresh_max = *std::max_element(fresh_med.begin(), fresh_med.end());
  const double fresh_min = *std::min_element(fresh_med.begin(), fresh_med.end());
  r.set(ep_field::fresh_us, fresh_max);
  r.set(ep_field::fresh_min_us, fresh_min);
  r.set(ep_field::chained_us, median_of(chained_med));
  r.set(ep_field::chained_min_us, *std::min_element(chained_med.begin(), chained_med.end()));
  r.set(ep_field::fresh_spread, fresh_min > 0 ? fresh_max / fresh_min : 1.0);
  const double ranks = static_cast<double>(all.size());
  const auto per_us = [&](std::int64_t bytes) {
    return fresh_max > 0 ? static_cast<double>(bytes) / ranks / fresh_max / 1e3 : 0.0;
  };
  r.set(ep_field::payload_gbps, per_us(r.get_or(ep_field::payload_bytes, std::int64_t{0})));
  r.set(ep_field::logical_gbps, per_us(r.get_or(ep_field::logical_bytes, std::int64_t{0})));
  // The slowest rank: the largest median fresh entry (the one MAX names).
  RankTimes rt;
  rt.iter = fresh;
  for (const auto& f : fresh) rt.in_call.emplace_back(f.size(), 0.0);
  const Straggler s = find_straggler(rt);
  if (s.rank >= 0) {
    r.set(coll_field::slowest_rank, std::int64_t{s.rank});
    r.set(coll_field::slowest_host, hosts.at(static_cast<std::size_t>(s.rank)));
    r.set(coll_field::rank_spread, s.spread);
    r.set(coll_field::slowest_share, s.share);
  }
}

// Tokens each rank received in dispatch, and the expert rows each rank
// returned in combine (its experts' load); the imbalance of the phase's own.
void set_counts(Record& r, int phase, const EpPlan& plan) {
  std::vector<std::size_t> tokens, rows;
  for (int k = 0; k < plan.ranks; ++k) {
    tokens.push_back(plan.dispatch_recv(k));
    rows.push_back(plan.combine_sent(k));
  }
  r.set(ep_field::recv_counts, std::vector<std::int64_t>(tokens.begin(), tokens.end()));
  r.set(ep_field::expert_rows, std::vector<std::int64_t>(rows.begin(), rows.end()));
  const double by_phase[kPhases] = {imbalance(tokens), imbalance(rows),
                                    std::max(imbalance(tokens), imbalance(rows))};
  r.set(ep_field::imbalance, by_phase[phase]);
}

// Each rank's node (Runtime::node: MPI's, not the host name, which network
// namespaces and containers may share).
std::vector<int> nodes_of(Runtime& rt) {
  std::vector<int> node;
  for (const std::string& n : rt.allgather(std::to_string(rt.node()))) node.push_back(std::stoi(n));
  return node;
}

// The largest step's receive and send bytes on the busiest rank.
std::size_t step_bytes(const EpShape& sh, std::uint64_t seed) {
  const EpTrace tr(sh, seed);
  const EpPlan plan = plan_ep(tr);
  std::size_t most = 0;
  for (int k = 0; k < sh.ranks; ++k)
    most =
        std::max(most, (plan.dispatch_recv(k) + plan.dispatch_sent(k)) * dispatch_msg_bytes(sh) +
                           (plan.combine_recv(k) + plan.combine_sent(k)) * combine_msg_bytes(sh));
  return most;
}

}  // namespace

const char* to_string(EpMethod m) { return m == EpMethod::put ? "put" : "alltoallv"; }

std::vector<EpMethod> parse_ep_methods(const std::string& list) {
  std::vector<EpMethod> out;
  for (const std::string& m : option_set("--method", list, "alltoallv,put")) {
    EpMethod v{};
    if (m == "alltoallv")
      v = EpMethod::alltoallv;
    else if (m == "put")
      v = EpMethod::put;
    else if (m == "all") {
      out = {EpMethod::alltoallv, EpMethod::put};
      continue;
    } else
      throw UsageError(
          fmt::format("--method {}: '{}' is not a method (alltoallv, put, all)", list, m));
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

std::vector<int> parse_token_ladder(const std::string& text) {
  if (text == "decode") return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  if (text == "prefill") return {1024, 2048, 4096, 8192};
  if (text == "all") return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  return each_once(parse_count_list("--tokens", text, 1 << 20, "decode, prefill, all or 1,8,128"));
}

void validate_ep_config(int nranks, const EpConfig& cfg) {
  if (cfg.tokens.empty()) throw UsageError("--tokens: nothing to run");
  EpShape sh = cfg.shape;
  sh.ranks = nranks;
  sh.tokens = *std::max_element(cfg.tokens.begin(), cfg.tokens.end());
  validate_ep(sh);
  if (cfg.iters < 1) throw UsageError("-n must be at least 1");
}

std::string ep_memory_shortfall(Backend& backend, Communicator& comm, const EpConfig& cfg) {
  EpShape sh = cfg.shape;
  sh.ranks = comm.size();
  sh.tokens = *std::max_element(cfg.tokens.begin(), cfg.tokens.end());
  const bool host = comm.buffer_kind() != MemKind::device || backend.name() == "host";
  const Bytes avail = backend.free_memory(comm.buffer_kind(), comm.device());
  // the buffers, the host's staging and oracle copies, the combined floats
  const auto need = [&](long double bytes) {
    const long double all = bytes * (host ? 3 : 1) + 4.0L * sh.tokens * sh.hidden;
    return all >= 1.8e19L ? ~Bytes{0} : static_cast<Bytes>(all);
  };
  // What no routing can exceed (every token of every rank to this rank, every
  // expert row of it back) decides when it fits; else the trace's own counts,
  // which take a while to draw at many tokens.
  const long double t = sh.tokens, r = sh.ranks;
  const long double bound =
      t * (std::min(sh.topk, sh.ranks) + r) * static_cast<long double>(dispatch_msg_bytes(sh)) +
      t * sh.topk * (1 + r) * static_cast<long double>(combine_msg_bytes(sh));
  const Bytes most = need(bound) <= avail ? need(bound) : need(step_bytes(sh, cfg.seed));
  return memory_shortfall(fmt::format("ep at {} tokens", sh.tokens), most,
                          fmt::format(" on rank {}", comm.rank()), avail);
}

void register_ep(Registry& r) {
  r.add({"ep.alltoallv",
         "ep",
         "MoE dispatch and combine over the collective library's alltoallv (MPI, NCCL, HCCL)",
         {}});
  r.add({"ep.put", "ep",
         "MoE dispatch and combine as one-sided puts into per-source slots with a flag (MPI)",
         host_memory_only});
}

std::vector<Record> run_ep(Runtime& rt, Communicator& comm, Backend& backend, const EpConfig& cfg) {
  std::vector<Record> out;
  const std::vector<std::string> hosts = rt.allgather(host_name());
  const std::vector<int> node_of = nodes_of(rt);
  auto done = [&](Record r) {
    out.push_back(std::move(r));
    record_done(out.back());
  };
  for (EpMethod m : cfg.methods)
    for (int tokens : cfg.tokens) {
      stop_point(&rt);  // every rank, in step
      EpShape sh = cfg.shape;
      sh.ranks = rt.size();
      sh.tokens = tokens;
      const EpTrace trace(sh, cfg.seed);
      const std::uint64_t hash = trace.hash();
      for (const std::string& h : rt.allgather(std::to_string(hash)))
        if (h != std::to_string(hash))
          throw RuntimeError(fmt::format(
              "ep: the routing trace differs between ranks at {} tokens (hash {} here, {} on "
              "another rank): a different libm or build on some rank",
              tokens, hash, h));
      const EpPlan plan = plan_ep(trace);
      const EpBytes db = dispatch_bytes(trace, plan, node_of);
      const EpBytes cb = combine_bytes(trace, plan, node_of);
      const EpBytes rb{db.payload + cb.payload, db.local + cb.local, db.node + cb.node,
                       db.remote + cb.remote, db.logical + cb.logical};
      const EpBytes* by_phase[kPhases] = {&db, &cb, &rb};
      auto unrun = [&](const std::string& why, Status st) {
        for (int p = 0; p < kPhases; ++p) {
          Record r = base_record(p, m, comm, sh, *by_phase[p], hash);
          set_counts(r, p, plan);
          r.status = st;
          r.reason = why;
          r.set(ep_field::wrong, std::int64_t{-1});
          done(std::move(r));
        }
      };
      Support s = comm.supports(CollOp::alltoallv, DType::uint8, RedOp::sum);
      if (m == EpMethod::put && backend.name() != "host")
        s = Support::no(fmt::format(
            "put: one-sided puts into host windows (MPI); on {} the device-initiated kernels are a "
            "later method",
            backend.name()));
      if (!s.ok) {
        unrun(s.reason, Status::waived);
        continue;
      }
      const EpStep step{trace, plan, rt.rank(), dispatch_layout(trace, plan, rt.rank()),
                        combine_layout(trace, plan, rt.rank())};
      std::vector<EpTimes> all;
      std::pair<std::int64_t, std::int64_t> wrong{0, 0};
      std::array<CheckTally, kPhases> tallies;
      try {
        auto x = m == EpMethod::put ? make_put_exchange(rt, step)
                                    : make_alltoallv_exchange(comm, backend, step);
        all = gather(rt, time_step(rt, *x, cfg), cfg.iters);
        if (cfg.check_every)
          tallies = check_every(rt, *x, step, cfg, hosts);
        else if (cfg.check)
          wrong = check_step(rt, *x, step, cfg);
      } catch (const NotSupported& e) {
        unrun(e.what(), Status::waived);
        continue;
      } catch (const DeviceHung& e) {
        unrun(e.what(), Status::failed);
        return out;
      }
      const std::int64_t by_phase_wrong[kPhases] = {wrong.first, wrong.second,
                                                    wrong.first + wrong.second};
      for (int p = 0; p < kPhases; ++p) {
        Record r = base_record(p, m, comm, sh, *by_phase[p], hash);
        set_figures(r, p, all, cfg, hosts);
        set_counts(r, p, plan);
        const auto& tally = tallies[static_cast<std::size_t>(p)];
        // every: the elements wrong in the first wrong iteration.
        const std::int64_t w = !cfg.check_every ? by_phase_wrong[p]
                               : tally.first()  ? static_cast<std::int64_t>(tally.first()->count)
                                                : 0;
        r.set(ep_field::wrong, cfg.check ? w : std::int64_t{-1});
        if (cfg.check) r.verified = w == 0;
        if (cfg.check_every) {
          set_check_fields(r, tally);
        } else if (w > 0) {
          r.status = Status::failed;
          r.reason = fmt::format(
              "#wrong = {} ({} elements that differ from the exact result, all ranks)", w,
              p == 0   ? "dispatched"
              : p == 1 ? "combined"
                       : "dispatched and combined");
        }
        done(std::move(r));
      }
    }
  return out;
}

}  // namespace xb
