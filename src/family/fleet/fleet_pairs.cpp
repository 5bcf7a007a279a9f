#include "family/fleet/fleet_pairs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "core/nic_counters.hpp"
#include "core/pattern.hpp"
#include "core/timer.hpp"

namespace xb {
namespace {

struct Deadline {
  std::string what;
};

// Where each phase's iterations stop, as a fraction of the box.
constexpr double kEndAb = 0.30, kEndBa = 0.60, kEndBoth = 0.85, kEndPing = 0.95;
// The byte each side's sync flag lives in (apart from the acknowledgements').
constexpr std::size_t kFlag = 32;

std::uint64_t seed_of(int rank) {
  return 0xf1ee7ULL * 1000003ULL + static_cast<std::uint64_t>(rank);
}

// --check every: the pattern of `rank`'s iteration `it` of phase `dir`
// (0 a->b, 1 b->a, 2 both): both sides compute it.
std::uint64_t seed_of(int rank, int dir, int it) {
  return seed_of(rank) ^ splitmix64_mix(static_cast<std::uint64_t>(dir * 1000003 + it) + 1);
}

class Side {
 public:
  Side(PairLink& link, const PairRole& role, const PairPlan& plan, PairBuffers& buf, int tag,
       double box_s)
      : link_(link),
        role_(role),
        plan_(plan),
        buf_(buf),
        tag_(tag),
        box_s_(box_s),
        start_(Clock::now()),
        until_(at(1.0)) {}

  PairSide run() {
    PairSide out;
    try {
      sync(true);
      std::vector<NicSample> mark = sample();
      phase_ = PairPhase::ab;
      one_way(role_.first, 0, out, at(kEndAb));
      counted(out, mark);
      phase_ = PairPhase::ba;
      one_way(!role_.first, 1, out, at(kEndBa));
      counted(out, mark);
      phase_ = PairPhase::both;
      both(out, at(kEndBoth));
      counted(out, mark);
      phase_ = PairPhase::ping;
      ping(out, at(kEndPing));
      phase_ = PairPhase::done;
    } catch (const Deadline& d) {
      // What is still posted: cancelled; a receive that will not cancel
      // retires the receive buffers.
      bool clean = true;
      for (auto& t : open_) clean = t->cancel() && clean;
      if (!clean) buf_.retire_receives();
      out.failed_in = phase_;
      out.error = fmt::format(
          "no answer from rank {} within the pair's {:.3g} s box ({})", role_.peer, box_s_,
          phase_ == PairPhase::sync ? std::string("sync")
                                    : fmt::format("{} {}", phase_name(phase_), d.what));
    }
    out.got_one = std::move(got_one_);  // what was checked, however far the step got
    out.got_both = std::move(got_both_);
    out.elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count();
    return out;
  }

 private:
  Clock::time_point at(double fraction) const {
    return start_ + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(box_s_ * fraction));
  }
  // The NIC counters between phases (outside every timed transfer).
  // Every NIC: a rail's bytes that took another NIC show there.
  static std::vector<NicSample> sample() { return sample_nics({}); }
  // What the phase since `mark` moved on this side's NIC: the rail's (and
  // a warning where its bytes went through another NIC), else the one that
  // moved at least half a transfer; `mark` moves on.
  void counted(PairSide& out, std::vector<NicSample>& mark) const {
    std::vector<NicSample> now = sample();
    const std::vector<NicDelta> deltas = nic_deltas(mark, now);
    mark = std::move(now);
    const std::optional<NicDelta> d =
        role_.nic.empty() ? busiest_nic(deltas, plan_.size) : nic_delta_of(deltas, role_.nic);
    out.nics.push_back(d ? PhaseNic{d->nic, d->tx_bytes, d->rx_bytes, d->errors, ""} : PhaseNic{});
    if (!role_.nic.empty())
      out.nics.back().warning = other_nic_warning(deltas, role_.nic, plan_.size);
  }
  // Every transfer is posted through these and kept until its phase's
  // iteration is over (or the pair fails: then they are cancelled).
  Runtime::Transfer& post(std::unique_ptr<Runtime::Transfer> t) {
    open_.push_back(std::move(t));
    return *open_.back();
  }
  Runtime::Transfer& isend(std::span<const std::byte> data, int tag) {
    return post(link_.isend(data, role_.peer, tag));
  }
  Runtime::Transfer& irecv(std::span<std::byte> data, int tag) {
    return post(link_.irecv(data, role_.peer, tag));
  }
  void wait(Runtime::Transfer& t, const char* what) {
    while (!t.done())
      if (Clock::now() > until_) throw Deadline{what};
  }
  // All posted transfers are done: forget them.
  void settled() { open_.clear(); }
  // The sender stretches a transfer by 1/factor after it (the throttle knob).
  void stretch(Clock::time_point t0, double factor) {
    if (factor < 1) std::this_thread::sleep_for((Clock::now() - t0) * (1 / factor - 1));
  }
  // Both sides meet; each says whether it would go on. True when both would.
  bool sync(bool more) {
    buf_.small_send[kFlag] = std::byte{more ? std::uint8_t{1} : std::uint8_t{0}};
    auto& r = irecv(std::span(buf_.small_recv.data() + kFlag, 1), tag_);
    auto& s = isend(std::span(buf_.small_send.data() + kFlag, 1), tag_);
    wait(r, "sync");
    wait(s, "sync");
    settled();
    return more && buf_.small_recv[kFlag] == std::byte{1};
  }
  // Another iteration? Always through the warm-up and the first timed one,
  // then while the phase's share of the box lasts.
  bool go_on(int it, Clock::time_point end) {
    return sync(it <= plan_.warmup || Clock::now() < end);
  }
  // A phase's first iteration: its warm-up where the box has room for it
  // and a timed transfer (three of the pair's last transfer), else the
  // timed one alone (a crawling link is warm by then: the warm-up would
  // only push the phase past the box).
  int first_iteration() {
    const double left = std::chrono::duration<double>(until_ - Clock::now()).count();
    return sync(last_s_ == 0 || left > 3 * last_s_) ? 0 : plan_.warmup;
  }
  void transferred(Clock::time_point t0) {
    last_s_ = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  // A timed iteration the sender fills with its own pattern (--check every).
  bool fresh(int it) const { return plan_.check_every && it >= plan_.warmup; }
  bool checks(int it) const { return plan_.check && (fresh(it) || it == plan_.warmup); }
  void refill(int dir, int it) {
    if (fresh(it)) fill_pattern(buf_.send, seed_of(role_.me, dir, it));
  }
  // What arrived: the knob's flip where it draws one (test-only), then the
  // check of the iteration where it is one.
  void arrived(CheckTally& tally, int dir, int it) {
    if (knob_)
      if (const auto flip = knob_->draw_receive(role_.me, role_.peer, buf_.recv.size()))
        flip->apply(buf_.recv.data());
    if (!checks(it)) return;
    const std::uint64_t seed = fresh(it) ? seed_of(role_.peer, dir, it) : seed_of(role_.peer);
    const std::int64_t k = plan_.check_every ? it - plan_.warmup : 0;
    tally.add(k, pattern_bad(buf_.recv, seed, 0, k,
                             fmt::format("rank {} from rank {}", role_.me, role_.peer)));
  }
  // dir 0: a -> b, 1: b -> a; `sending`: this side sends in it. The first
  // timed transfer is the one verified (every phase has it).
  void one_way(bool sending, int dir, PairSide& out, Clock::time_point end) {
    const int data = tag_ + 1 + 2 * dir, ack = data + 1;
    const int total = plan_.warmup + plan_.iters;
    for (int it = first_iteration(); it < total; ++it) {
      if (!sending && checks(it)) std::memset(buf_.recv.data(), 0, buf_.recv.size());
      if (sending) refill(dir, it);
      if (!go_on(it, end)) break;
      const auto t0 = Clock::now();
      if (sending) {
        auto& s = isend(buf_.send, data);
        wait(s, "send");
        stretch(t0, role_.tx_factor);
        auto& a = irecv(std::span(buf_.small_recv.data(), 1), ack);
        wait(a, "acknowledgement");
        if (it >= plan_.warmup) out.send_us.push_back(elapsed_us(t0, Clock::now()));
      } else {
        auto& r = irecv(buf_.recv, data);
        wait(r, "receive");
        auto& a = isend(std::span(buf_.small_send.data(), 1), ack);
        wait(a, "acknowledgement");
        arrived(got_one_, dir, it);
      }
      transferred(t0);
      settled();
    }
  }
  void both(PairSide& out, Clock::time_point end) {
    const int data = tag_ + 5, ack = tag_ + 6;
    const int total = plan_.warmup + plan_.iters;
    for (int it = first_iteration(); it < total; ++it) {
      if (checks(it)) std::memset(buf_.recv.data(), 0, buf_.recv.size());
      refill(2, it);
      if (!go_on(it, end)) break;
      const auto t0 = Clock::now();
      auto& r = irecv(buf_.recv, data);
      auto& s = isend(buf_.send, data);
      wait(s, "send");
      wait(r, "receive");
      stretch(t0, role_.tx_factor);
      auto& ar = irecv(std::span(buf_.small_recv.data(), 1), ack);
      auto& as = isend(std::span(buf_.small_send.data(), 1), ack);
      wait(as, "acknowledgement");
      wait(ar, "acknowledgement");
      if (it >= plan_.warmup) out.both_us.push_back(elapsed_us(t0, Clock::now()));
      transferred(t0);
      settled();
      arrived(got_both_, 2, it);
    }
  }
  // Pings in blocks of 16, the two sides agreeing before each block.
  void ping(PairSide& out, Clock::time_point end) {
    const int there = tag_ + 7, back = tag_ + 8;
    const int warm = std::max(1, plan_.pings / 10);
    sync(true);
    for (int it = 0; it < warm + plan_.pings; ++it) {
      if (it > warm && (it - warm) % 16 == 0 && !sync(Clock::now() < end)) break;
      if (role_.first) {
        const auto t0 = Clock::now();
        auto& r = irecv(std::span(buf_.small_recv.data(), 8), back);
        auto& s = isend(std::span(buf_.small_send.data(), 8), there);
        wait(s, "ping");
        wait(r, "pong");
        if (it >= warm) out.ping_us.push_back(elapsed_us(t0, Clock::now()) / 2);
      } else {
        auto& r = irecv(std::span(buf_.small_recv.data(), 8), there);
        wait(r, "ping");
        auto& s = isend(std::span(buf_.small_send.data(), 8), back);
        wait(s, "pong");
      }
      settled();
    }
  }

  PairLink& link_;
  const PairRole& role_;
  const PairPlan& plan_;
  PairBuffers& buf_;
  int tag_;
  double box_s_;
  Clock::time_point start_, until_;
  PairPhase phase_ = PairPhase::sync;
  double last_s_ = 0;  // the pair's last data transfer, s (0: none yet)
  std::vector<std::unique_ptr<Runtime::Transfer>> open_;
  CheckTally got_one_, got_both_;
  Corrupter* knob_ = Corrupter::from_env();
};

}  // namespace

PairBuffers::PairBuffers(Bytes size, int rank)
    : send(size), recv(size), small_send(64), small_recv(64) {
  fill_pattern(send, seed_of(rank));
}

void PairBuffers::retire_receives() {
  const std::size_t big = recv.size(), small = small_recv.size();
  retired_.push_back(std::exchange(recv, std::vector<std::byte>(big)));
  retired_.push_back(std::exchange(small_recv, std::vector<std::byte>(small)));
}

const char* phase_name(PairPhase p) {
  switch (p) {
    case PairPhase::sync:
      return "sync";
    case PairPhase::ab:
      return "a->b";
    case PairPhase::ba:
      return "b->a";
    case PairPhase::both:
      return "both";
    case PairPhase::ping:
      return "ping";
    case PairPhase::done:
      break;
  }
  return "";
}

PairSide run_pair_side(PairLink& link, const PairRole& role, const PairPlan& plan, PairBuffers& buf,
                       int tag, double box_s) {
  if (role.peer < 0) return {};
  return Side(link, role, plan, buf, tag, box_s).run();
}

double PairBox::next() const {
  if (recent_.empty()) return deadline_s_;
  // The lower quartile: a slow host is in 2 of N pairs (40 % of them at N = 5 one pair at a
  // time), which must not stretch the box its own pairs are held to.
  std::vector<double> v = recent_;
  const auto q = static_cast<std::ptrdiff_t>(v.size() / 4);
  std::nth_element(v.begin(), v.begin() + q, v.end());
  const double box = kFactor * v[static_cast<std::size_t>(q)];
  return std::min(deadline_s_, std::max(std::min(kFloor_s, deadline_s_), box));
}

void PairBox::finished(double elapsed_s) {
  if (recent_.size() < kRecent) {
    recent_.push_back(elapsed_s);
  } else {
    recent_[pos_] = elapsed_s;
    pos_ = (pos_ + 1) % kRecent;
  }
}

std::string side_to_wire(const PairSide& s) {
  nlohmann::json nics = nlohmann::json::array();
  for (const auto& n : s.nics) nics.push_back({n.nic, n.tx, n.rx, n.errors, n.warning});
  return nlohmann::json{{"send", s.send_us},
                        {"nics", nics},
                        {"both", s.both_us},
                        {"ping", s.ping_us},
                        {"got_one", s.got_one.to_wire()},
                        {"got_both", s.got_both.to_wire()},
                        {"error", s.error},
                        {"failed_in", static_cast<int>(s.failed_in)},
                        {"elapsed", s.elapsed_s}}
      .dump();
}

PairSide side_from_wire(const std::string& text) {
  PairSide s;
  if (text.empty()) return s;
  try {
    const auto j = nlohmann::json::parse(text);
    s.send_us = j.at("send").get<std::vector<double>>();
    s.both_us = j.at("both").get<std::vector<double>>();
    s.ping_us = j.at("ping").get<std::vector<double>>();
    s.got_one = CheckTally::from_wire(j.at("got_one").get<std::string>());
    s.got_both = CheckTally::from_wire(j.at("got_both").get<std::string>());
    s.error = j.at("error").get<std::string>();
    const int phase = j.at("failed_in").get<int>();
    if (phase < 0 || phase > static_cast<int>(PairPhase::done))
      throw RuntimeError(fmt::format("fleet: a rank's figures name phase {}", phase));
    s.failed_in = static_cast<PairPhase>(phase);
    s.elapsed_s = j.at("elapsed").get<double>();
    for (const auto& n : j.at("nics"))
      s.nics.push_back({n.at(0).get<std::string>(), n.at(1).get<std::uint64_t>(),
                        n.at(2).get<std::uint64_t>(),
                        n.at(3).get<std::vector<std::pair<std::string, std::uint64_t>>>(),
                        n.at(4).get<std::string>()});
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeError(fmt::format("fleet: a rank's figures do not parse: {}", e.what()));
  }
  return s;
}

}  // namespace xb
