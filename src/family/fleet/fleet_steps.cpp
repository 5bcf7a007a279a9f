#include "family/fleet/fleet_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "family/cycles.hpp"

namespace xb {
namespace {

struct StepRecords {
  std::vector<Record> records;
  std::vector<PairFigures> figures;
};

// The pair's failure from its two sides: the earlier phase, and its why.
struct PairOutcome {
  PairPhase failed_in = PairPhase::done;
  std::string why;
};
PairOutcome outcome_of(const PairSide& a, const PairSide& b) {
  if (a.failed_in == PairPhase::done && b.failed_in == PairPhase::done) return {};
  const PairSide& first = b.failed_in < a.failed_in ? b : a;
  return {first.failed_in, first.error};
}

// The error counters that grew on a side's NIC over its step, summed over
// its phases ("xb1 rx_errors" -> 3).
std::map<std::string, std::uint64_t> step_errors(const PairSide& s) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& n : s.nics)
    for (const auto& [name, grew] : n.errors) out[n.nic + " " + name] += grew;
  return out;
}

// The first warning of a side's phases that its rail's bytes took another NIC.
std::string step_astray(const PairSide& s) {
  for (const auto& n : s.nics)
    if (!n.warning.empty()) return n.warning;
  return "";
}

// "rx_errors +3, symbol_error +1".
std::string errors_text(const std::vector<std::pair<std::string, std::uint64_t>>& errors) {
  std::string out;
  for (const auto& [name, grew] : errors)
    out += fmt::format("{}{} +{}", out.empty() ? "" : ", ", name, grew);
  return out;
}

// Rank 0: the records and figures of one step from every rank's side. A
// part of a pair after the phase it failed in is a failed record "not
// reached"; the direction it failed in counts 0 GB/s in the figures.
StepRecords step_records(const FleetStep& step, const std::vector<int>& members,
                         const std::vector<std::string>& names, const std::vector<PairSide>& sides,
                         const FleetConfig& cfg, bool confirm, double box_s, int rail,
                         const std::string& nic) {
  StepRecords out;
  const Bytes size = cfg.pair.size;
  for (const auto& p : step.pairs) {
    const int ra = members[static_cast<std::size_t>(p.a)],
              rb = members[static_cast<std::size_t>(p.b)];
    const PairSide& a = sides[static_cast<std::size_t>(ra)];
    const PairSide& b = sides[static_cast<std::size_t>(rb)];
    const PairOutcome fate = outcome_of(a, b);
    PairFigures fig{p.a, p.b};
    fig.failed = fate.failed_in != PairPhase::done;
    fig.why = fate.why;
    const auto make = [&](PairPhase phase, const std::string& kase, int src, int dst, Bytes bytes,
                          std::vector<double> us, int planned, const CheckTally& got) {
      Record r;
      r.kase = kase;
      r.method = rail < 0 ? "mpi" : "ucx";
      r.src = src;
      r.dst = dst;
      r.bytes = bytes;
      r.set(fleet_field::src_host, names[static_cast<std::size_t>(src)]);
      r.set(fleet_field::dst_host, names[static_cast<std::size_t>(dst)]);
      r.set(fleet_field::pass, std::int64_t{step.pass});
      r.set(fleet_field::round, std::int64_t{step.round});
      r.set(fleet_field::concurrency,
            confirm ? static_cast<std::int64_t>(step.pairs.size()) : std::int64_t{cfg.concurrency});
      r.set(fleet_field::box_s, box_s);
      if (confirm) r.set(fleet_field::confirm, true);
      if (rail >= 0) {
        r.set(fleet_field::rail, std::int64_t{rail});
        r.set(fleet_field::nic, nic);
      }
      if (fate.failed_in <= phase) {
        r.status = Status::failed;
        r.reason = fate.failed_in == phase ? fate.why : "not reached: " + fate.why;
        if (fate.failed_in < phase) r.set(fleet_field::reached, false);
        return r;
      }
      if (us.empty()) {
        r.status = Status::failed;
        r.reason = "no figures came back";
        return r;
      }
      if (static_cast<int>(us.size()) < planned)
        r.set(fleet_field::boxed, fmt::format("{} of {}: the pair's time box of {:.3g} s ran out",
                                              us.size(), planned, box_s));
      r.set_samples(us);
      if (got.checked() == 0) return r;
      if (cfg.pair.check_every) {
        set_check_fields(r, got);
      } else {
        r.verified = got.wrong_iters() == 0;
        if (got.first()) {
          r.status = Status::failed;
          r.reason = "the received bytes do not match what was sent: " + describe(*got.first());
        }
      }
      return r;
    };
    const int iters = cfg.pair.iters;
    Record ab = make(PairPhase::ab, "send", ra, rb, size, a.send_us, iters, b.got_one);
    Record ba = make(PairPhase::ba, "send", rb, ra, size, b.send_us, iters, a.got_one);
    CheckTally got_both = a.got_both;
    got_both.merge(b.got_both);
    std::vector<double> both;
    for (std::size_t i = 0; i < std::min(a.both_us.size(), b.both_us.size()); ++i)
      both.push_back(std::max(a.both_us[i], b.both_us[i]));
    Record bd = make(PairPhase::both, "bidir", ra, rb, 2 * size, both, iters, got_both);
    Record pp = make(PairPhase::ping, "pingpong", ra, rb, 8, a.ping_us, cfg.pair.pings, {});
    // Wrong data is a verdict of its own (fleet_judge: FAIL whatever the
    // speed); the figures of its transfers stand.
    for (const CheckTally* t :
         {&b.got_one, &a.got_one, static_cast<const CheckTally*>(&got_both)}) {
      fig.checked += t->checked();
      fig.wrong += t->wrong_iters();
      if (t->first() && fig.wrong_why.empty()) fig.wrong_why = describe(*t->first());
    }
    const auto wrong_data = [](const Record& r) {
      return r.status == Status::failed && r.verified == false;
    };
    // A direction that failed (its transfers, not a mismatch) is a figure of 0.
    const auto figure = [&](const Record& r, PairPhase phase) {
      return r.status == Status::ok || wrong_data(r) ? r.gbps_median
             : fate.failed_in == phase ||
                     (phase == PairPhase::ab && fate.failed_in == PairPhase::sync)
                 ? 0.0
                 : kNotMeasured;
    };
    fig.ab = figure(ab, PairPhase::ab);
    fig.ba = figure(ba, PairPhase::ba);
    if (bd.status == Status::ok || wrong_data(bd)) fig.both = bd.gbps_median;
    if (pp.status == Status::ok) {
      fig.p50_us = pp.time_us.median;
      fig.p99_us = pp.time_us.p99;
    }
    // What the NICs counted in each phase: the sender's sent, the receiver's got.
    const auto counters = [&](Record& r, std::size_t phase, const PairSide& from,
                              const PairSide& to, const std::string& from_host,
                              const std::string& to_host) {
      const PhaseNic* tx = phase < from.nics.size() ? &from.nics[phase] : nullptr;
      const PhaseNic* rx = phase < to.nics.size() ? &to.nics[phase] : nullptr;
      if (tx && !tx->nic.empty()) {
        r.set(fleet_field::nic, tx->nic);
        r.set(fleet_field::nic_tx_bytes, static_cast<std::int64_t>(tx->tx));
      }
      if (rx && !rx->nic.empty())
        r.set(fleet_field::nic_rx_bytes, static_cast<std::int64_t>(rx->rx));
      std::string errors;
      for (const auto& [side, host] : {std::pair{tx, from_host}, std::pair{rx, to_host}})
        if (side && !side->errors.empty())
          errors += fmt::format("{}{} {}: {}", errors.empty() ? "" : "; ", host, side->nic,
                                errors_text(side->errors));
      if (!errors.empty()) r.set(fleet_field::nic_errors, errors);
      std::string astray;
      for (const auto& [side, host] : {std::pair{tx, from_host}, std::pair{rx, to_host}})
        if (side && !side->warning.empty())
          astray += fmt::format("{}{}: {}", astray.empty() ? "" : "; ", host, side->warning);
      if (!astray.empty()) r.set(fleet_field::nic_warning, astray);
    };
    const std::string& ha = names[static_cast<std::size_t>(ra)];
    const std::string& hb = names[static_cast<std::size_t>(rb)];
    counters(ab, 0, a, b, ha, hb);
    counters(ba, 1, b, a, hb, ha);
    counters(bd, 2, a, b, ha, hb);
    fig.a_errors = step_errors(a);
    fig.b_errors = step_errors(b);
    fig.a_astray = step_astray(a);
    fig.b_astray = step_astray(b);
    for (Record* r : {&ab, &ba, &bd, &pp}) out.records.push_back(std::move(*r));
    out.figures.push_back(fig);
  }
  return out;
}

// Every rank: its part of `step` (or a rest), then every side to rank 0.
std::vector<PairSide> run_step(Runtime& rt, PairLink& link, const std::string& nic,
                               const FleetStep& step, const std::vector<int>& members,
                               const FleetConfig& cfg, PairBuffers& buf,
                               const std::vector<host::Throttle>& throttle, int tag, double box_s) {
  PairRole role;
  role.nic = nic;
  for (const auto& p : step.pairs) {
    const int ra = members[static_cast<std::size_t>(p.a)],
              rb = members[static_cast<std::size_t>(p.b)];
    if (ra == rt.rank() || rb == rt.rank()) {
      role.first = ra == rt.rank();
      role.peer = role.first ? rb : ra;
      role.tx_factor = host::rank_throttle(throttle, rt.rank(), role.peer);
      role.me = rt.rank();
    }
  }
  const PairSide mine = run_pair_side(link, role, cfg.pair, buf, tag, box_s);
  const auto all = rt.allgather(role.peer < 0 ? std::string() : side_to_wire(mine));
  std::vector<PairSide> sides;
  sides.reserve(all.size());
  for (const auto& w : all) sides.push_back(side_from_wire(w));
  return sides;
}

}  // namespace

std::vector<PairFigures> PairSteps::run(const std::vector<FleetStep>& steps, bool confirm) {
  std::vector<PairFigures> figures;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    if (progress_)
      progress_(
          s, steps.size(),
          (rail_ >= 0 ? fmt::format("rail {} ({}): ", rail_, nic_) : std::string()) +
              (confirm ? std::string("confirming suspects")
                       : fmt::format("pass {} round {}", steps[s].pass + 1, steps[s].round + 1)));
    const double box = box_.next();
    const auto sides = run_step(rt_, *link_, nic_, steps[s], members_, cfg_, buf_, throttle_,
                                16 * (tags_++ % tag_slots_), box);
    // Every rank alike, from the same gathered sides: the next step's box.
    for (const auto& p : steps[s].pairs) {
      const PairSide& a = sides[static_cast<std::size_t>(members_[static_cast<std::size_t>(p.a)])];
      const PairSide& b = sides[static_cast<std::size_t>(members_[static_cast<std::size_t>(p.b)])];
      if (a.failed_in == PairPhase::done && b.failed_in == PairPhase::done)
        box_.finished(std::max(a.elapsed_s, b.elapsed_s));
    }
    if (rt_.root()) {
      StepRecords sr =
          step_records(steps[s], members_, names_, sides, cfg_, confirm, box, rail_, nic_);
      // Four records a pair, in the order of its figures.
      for (std::size_t k = 0; k < sr.figures.size(); ++k) {
        if (confirm || !cfg_.flagged || filter_.keep(sr.figures[k])) {
          for (std::size_t r = 4 * k; r < std::min(sr.records.size(), 4 * k + 4); ++r)
            done_(std::move(sr.records[r]));
        } else {
          ++held_back_;
        }
        figures.push_back(sr.figures[k]);
      }
    }
    stop_point(&rt_);
  }
  return figures;
}

std::vector<PairFigures> PairSteps::again(const std::vector<FleetPair>& suspects) {
  std::string plan;
  for (const auto& p : suspects) plan += fmt::format("{} {} ", p.a, p.b);
  plan = rt_.broadcast_text(std::move(plan), 0);
  // Steps of disjoint pairs (each in the first step where neither end is
  // busy), at most kConfirmBatch pairs a step: a few suspects are each
  // alone, thousands of a large fleet take a few dozen steps.
  std::vector<FleetStep> steps;
  std::vector<std::set<int>> busy;
  std::istringstream in(plan);
  for (FleetPair p; in >> p.a >> p.b;) {
    ++confirmed_;
    std::size_t s = 0;
    while (s < steps.size() &&
           (steps[s].pairs.size() >= kConfirmBatch || busy[s].count(p.a) || busy[s].count(p.b)))
      ++s;
    if (s == steps.size()) {
      steps.push_back({-1, static_cast<int>(s), 0, {}});
      busy.emplace_back();
    }
    steps[s].pairs.push_back(p);
    busy[s].insert({p.a, p.b});
  }
  return run(steps, true);
}

}  // namespace xb
