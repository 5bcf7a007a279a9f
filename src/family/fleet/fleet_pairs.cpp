#include "family/fleet/fleet_pairs.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"
#include "core/pattern.hpp"
#include "core/timer.hpp"

namespace xb {
namespace {

struct Deadline {
  std::string what;
};

std::uint64_t seed_of(int rank) {
  return 0xf1ee7ULL * 1000003ULL + static_cast<std::uint64_t>(rank);
}

class Side {
 public:
  Side(Runtime& rt, const PairRole& role, const PairPlan& plan, PairBuffers& buf, int tag)
      : rt_(rt),
        role_(role),
        plan_(plan),
        buf_(buf),
        tag_(tag),
        until_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(plan.deadline_s))) {}

  PairSide run() {
    PairSide out;
    try {
      sync();
      for (int dir = 0; dir < 2; ++dir) one_way(dir == 0 ? role_.first : !role_.first, dir, out);
      both(out);
      ping(out);
    } catch (const Deadline& d) {
      out.error = fmt::format("no answer from rank {} within {:g} s ({})", role_.peer,
                              plan_.deadline_s, d.what);
    }
    return out;
  }

 private:
  void wait(Runtime::Transfer& t, const char* what) {
    while (!t.done())
      if (Clock::now() > until_) throw Deadline{what};
  }
  // The sender stretches a transfer by 1/factor after it (the throttle knob).
  void stretch(Clock::time_point t0, double factor) {
    if (factor < 1) std::this_thread::sleep_for((Clock::now() - t0) * (1 / factor - 1));
  }
  void sync() {
    auto r = rt_.irecv(std::span(buf_.small_recv.data(), 1), role_.peer, tag_);
    auto s = rt_.isend(std::span(buf_.small_send.data(), 1), role_.peer, tag_);
    wait(*r, "sync");
    wait(*s, "sync");
  }
  void check(PairSide& out) {
    if (!plan_.check) return;
    out.checked = true;
    if (find_mismatch(buf_.recv, seed_of(role_.peer))) out.verified = false;
  }
  // dir 0: a -> b, 1: b -> a; `sending`: this side sends in it.
  void one_way(bool sending, int dir, PairSide& out) {
    const int data = tag_ + 1 + 2 * dir, ack = data + 1;
    const int total = plan_.warmup + plan_.iters;
    for (int it = 0; it < total; ++it) {
      const bool last = it == total - 1;
      if (!sending && last && plan_.check) std::memset(buf_.recv.data(), 0, buf_.recv.size());
      sync();
      if (sending) {
        const auto t0 = Clock::now();
        auto s = rt_.isend(buf_.send, role_.peer, data);
        wait(*s, "send");
        stretch(t0, role_.tx_factor);
        auto a = rt_.irecv(std::span(buf_.small_recv.data(), 1), role_.peer, ack);
        wait(*a, "acknowledgement");
        if (it >= plan_.warmup) out.send_us.push_back(elapsed_us(t0, Clock::now()));
      } else {
        auto r = rt_.irecv(buf_.recv, role_.peer, data);
        wait(*r, "receive");
        auto a = rt_.isend(std::span(buf_.small_send.data(), 1), role_.peer, ack);
        wait(*a, "acknowledgement");
        if (last) check(out);
      }
    }
  }
  void both(PairSide& out) {
    const int data = tag_ + 5, ack = tag_ + 6;
    const int total = plan_.warmup + plan_.iters;
    for (int it = 0; it < total; ++it) {
      const bool last = it == total - 1;
      if (last && plan_.check) std::memset(buf_.recv.data(), 0, buf_.recv.size());
      sync();
      const auto t0 = Clock::now();
      auto r = rt_.irecv(buf_.recv, role_.peer, data);
      auto s = rt_.isend(buf_.send, role_.peer, data);
      wait(*s, "send");
      wait(*r, "receive");
      stretch(t0, role_.tx_factor);
      auto ar = rt_.irecv(std::span(buf_.small_recv.data(), 1), role_.peer, ack);
      auto as = rt_.isend(std::span(buf_.small_send.data(), 1), role_.peer, ack);
      wait(*as, "acknowledgement");
      wait(*ar, "acknowledgement");
      if (it >= plan_.warmup) out.both_us.push_back(elapsed_us(t0, Clock::now()));
      if (last) check(out);
    }
  }
  void ping(PairSide& out) {
    const int there = tag_ + 7, back = tag_ + 8;
    const int warm = std::max(1, plan_.pings / 10);
    sync();
    for (int it = 0; it < warm + plan_.pings; ++it) {
      if (role_.first) {
        const auto t0 = Clock::now();
        auto r = rt_.irecv(std::span(buf_.small_recv.data(), 8), role_.peer, back);
        auto s = rt_.isend(std::span(buf_.small_send.data(), 8), role_.peer, there);
        wait(*s, "ping");
        wait(*r, "pong");
        if (it >= warm) out.ping_us.push_back(elapsed_us(t0, Clock::now()) / 2);
      } else {
        auto r = rt_.irecv(std::span(buf_.small_recv.data(), 8), role_.peer, there);
        wait(*r, "ping");
        auto s = rt_.isend(std::span(buf_.small_send.data(), 8), role_.peer, back);
        wait(*s, "pong");
      }
    }
  }

  Runtime& rt_;
  const PairRole& role_;
  const PairPlan& plan_;
  PairBuffers& buf_;
  int tag_;
  Clock::time_point until_;
};

}  // namespace

PairBuffers::PairBuffers(Bytes size, int rank)
    : send(size), recv(size), small_send(64), small_recv(64) {
  fill_pattern(send, seed_of(rank));
}

PairSide run_pair_side(Runtime& rt, const PairRole& role, const PairPlan& plan, PairBuffers& buf,
                       int tag) {
  if (role.peer < 0) return {};
  return Side(rt, role, plan, buf, tag).run();
}

std::string side_to_wire(const PairSide& s) {
  return nlohmann::json{{"send", s.send_us},    {"both", s.both_us},      {"ping", s.ping_us},
                        {"checked", s.checked}, {"verified", s.verified}, {"error", s.error}}
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
    s.checked = j.at("checked").get<bool>();
    s.verified = j.at("verified").get<bool>();
    s.error = j.at("error").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeError(fmt::format("fleet: a rank's figures do not parse: {}", e.what()));
  }
  return s;
}

}  // namespace xb
