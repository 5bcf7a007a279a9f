#include "core/corruption.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/pattern.hpp"

namespace xb {

const char* to_string(CheckMode m) {
  switch (m) {
    case CheckMode::none:
      return "none";
    case CheckMode::last:
      return "last";
    case CheckMode::every:
      return "every";
  }
  return "?";
}

CheckMode parse_check_mode(const std::string& text, const std::string& option) {
  for (CheckMode m : {CheckMode::every, CheckMode::last, CheckMode::none})
    if (text == to_string(m)) return m;
  throw UsageError(
      fmt::format("{}: '{}' is not a check mode: give every (each timed iteration), last or none",
                  option, text));
}

RateInterval wilson95(std::int64_t k, std::int64_t n) {
  if (n <= 0) return {0, 1};
  constexpr double z = 1.959963984540054;
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(std::clamp<std::int64_t>(k, 0, n)) / nn;
  const double denom = 1 + z * z / nn;
  const double centre = (p + z * z / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
  // At k = 0 and k = n the bounds are exactly 0 and 1.
  return {k <= 0 ? 0.0 : std::max(0.0, centre - half), k >= n ? 1.0 : std::min(1.0, centre + half)};
}

std::string describe(const FirstBad& f) {
  std::string s = fmt::format("iteration {}, {}, {} {}: expected {}, got {}", f.iter, f.where,
                              f.unit, f.offset, f.expected, f.got);
  if (!f.xor_bits.empty()) s += fmt::format(" (xor {})", f.xor_bits);
  const std::string& what = f.count_unit.empty() ? f.unit : f.count_unit;
  if (f.count > 0)
    s += fmt::format("; {} {}{} wrong in it", f.count, what, f.count == 1 ? "" : "s");
  return s;
}

FirstBad byte_mismatch(std::int64_t iter, std::string where, std::uint64_t offset,
                       std::uint8_t want, std::uint8_t got, std::uint64_t count) {
  FirstBad f;
  f.iter = iter;
  f.where = std::move(where);
  f.offset = offset;
  f.expected = fmt::format("{:#04x}", want);
  f.got = fmt::format("{:#04x}", got);
  f.xor_bits = fmt::format("{:#04x}", want ^ got);
  f.count = count;
  return f;
}

std::optional<FirstBad> pattern_bad(std::span<const std::byte> got, std::uint64_t seed,
                                    std::uint64_t offset, std::int64_t iter, std::string where) {
  const Mismatches m = find_mismatches(got, seed, offset);
  if (!m.count) return std::nullopt;
  return byte_mismatch(iter, std::move(where), *m.first,
                       std::to_integer<std::uint8_t>(pattern_byte(seed, offset + *m.first)),
                       std::to_integer<std::uint8_t>(got[*m.first]), m.count);
}

void CheckTally::add(std::int64_t iter, std::optional<FirstBad> bad) {
  if (bad)
    wrong(std::move(*bad));
  else
    right(iter);
}

void CheckTally::right(std::int64_t iter) { checked_ = std::max(checked_, iter + 1); }

void CheckTally::wrong(FirstBad bad) {
  right(bad.iter);
  const auto at = std::lower_bound(bad_iters_.begin(), bad_iters_.end(), bad.iter);
  if (at == bad_iters_.end() || *at != bad.iter) bad_iters_.insert(at, bad.iter);
  if (!first_ || bad.iter < first_->iter) first_ = std::move(bad);
}

void CheckTally::merge(const CheckTally& other) {
  checked_ = std::max(checked_, other.checked_);
  std::vector<std::int64_t> all;
  std::set_union(bad_iters_.begin(), bad_iters_.end(), other.bad_iters_.begin(),
                 other.bad_iters_.end(), std::back_inserter(all));
  bad_iters_ = std::move(all);
  if (other.first_ && (!first_ || other.first_->iter < first_->iter)) first_ = other.first_;
}

std::string CheckTally::summary() const {
  const RateInterval ci = interval();
  const double rate =
      checked_ ? static_cast<double>(wrong_iters()) / static_cast<double>(checked_) : 0;
  std::string s = fmt::format(
      "{} of {} checked iteration{} wrong ({:.3g} %, 95 % interval {:.3g}-{:.3g} %, Wilson)",
      wrong_iters(), checked_, checked_ == 1 ? "" : "s", 100 * rate, 100 * ci.lo, 100 * ci.hi);
  if (first_) s += "; first: " + describe(*first_);
  return s;
}

std::string CheckTally::to_wire() const {
  nlohmann::json j{{"checked", checked_}, {"bad", bad_iters_}};
  if (first_)
    j["first"] = {{"iter", first_->iter},
                  {"where", first_->where},
                  {"offset", first_->offset},
                  {"unit", first_->unit},
                  {"expected", first_->expected},
                  {"got", first_->got},
                  {"xor", first_->xor_bits},
                  {"count", first_->count},
                  {"count_unit", first_->count_unit}};
  return j.dump();
}

CheckTally CheckTally::from_wire(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    CheckTally t;
    t.checked_ = j.at("checked").get<std::int64_t>();
    t.bad_iters_ = j.at("bad").get<std::vector<std::int64_t>>();
    std::sort(t.bad_iters_.begin(), t.bad_iters_.end());
    if (j.contains("first")) {
      const auto& f = j["first"];
      t.first_ = FirstBad{f.at("iter").get<std::int64_t>(),     f.at("where").get<std::string>(),
                          f.at("offset").get<std::uint64_t>(),  f.at("unit").get<std::string>(),
                          f.at("expected").get<std::string>(),  f.at("got").get<std::string>(),
                          f.at("xor").get<std::string>(),       f.at("count").get<std::uint64_t>(),
                          f.at("count_unit").get<std::string>()};
    }
    return t;
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeError(std::string("malformed check tally from another rank: ") + e.what());
  }
}

void set_check_fields(Record& r, const CheckTally& t) {
  const RateInterval ci = t.interval();
  r.set(check_field::checked_iters, t.checked());
  r.set(check_field::wrong_iters, t.wrong_iters());
  r.set(
      check_field::wrong_rate,
      t.checked() ? static_cast<double>(t.wrong_iters()) / static_cast<double>(t.checked()) : 0.0);
  r.set(check_field::wrong_rate_lo, ci.lo);
  r.set(check_field::wrong_rate_hi, ci.hi);
  if (t.first()) r.set(check_field::first_bad, describe(*t.first()));
  r.verified = t.checked() > 0 && t.wrong_iters() == 0;
  if (t.wrong_iters() > 0) {
    r.status = Status::failed;
    r.reason = "wrong data: " + t.summary();
  }
}

// ---- the test knob -----------------------------------------------------------

namespace {

constexpr const char* kKnob = "XFERBENCH_HOST_CORRUPT";

bool parse_int(const std::string& s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

}  // namespace

std::vector<CorruptRule> parse_corrupt(const std::string& text) {
  std::vector<CorruptRule> out;
  const auto bad = [&](const std::string& item) {
    return UsageError(
        fmt::format("{}='{}': '{}' is not RATE[:D|:rankR|:rankA-rankB] with RATE in (0, 1] or a "
                    "percentage (1%)",
                    kKnob, text, item));
  };
  std::size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    CorruptRule r;
    r.item = item;
    const std::size_t colon = item.find(':');
    std::string rate = item.substr(0, colon);
    double scale = 1;
    if (!rate.empty() && rate.back() == '%') {
      rate.pop_back();
      scale = 0.01;
    }
    char* stop = nullptr;
    r.rate = std::strtod(rate.c_str(), &stop) * scale;
    if (rate.empty() || stop != rate.c_str() + rate.size() || !(r.rate > 0 && r.rate <= 1))
      throw bad(item);
    if (colon != std::string::npos) {
      std::string t = item.substr(colon + 1);
      if (t.rfind("rank", 0) == 0) {
        t = t.substr(4);
        const std::size_t dash = t.find('-');
        r.target =
            dash == std::string::npos ? CorruptRule::Target::rank : CorruptRule::Target::link;
        if (!parse_int(t.substr(0, dash), r.a)) throw bad(item);
        if (dash != std::string::npos &&
            (t.compare(dash + 1, 4, "rank") != 0 || !parse_int(t.substr(dash + 5), r.b)))
          throw bad(item);
      } else {
        r.target = CorruptRule::Target::device;
        if (!parse_int(t, r.a)) throw bad(item);
      }
    }
    out.push_back(r);
  }
  if (out.empty()) throw bad(text);
  return out;
}

void Flip::apply(void* base) const { static_cast<std::uint8_t*>(base)[offset] ^= mask; }

Corrupter* Corrupter::from_env() {
  static Corrupter* knob = []() -> Corrupter* {
    const char* v = std::getenv(kKnob);
    if (!v || !*v) return nullptr;
    static Corrupter c(parse_corrupt(v));
    return &c;
  }();
  return knob;
}

Corrupter::Corrupter(std::vector<CorruptRule> rules, std::uint64_t seed)
    : rules_(std::move(rules)), state_(seed) {}

void Corrupter::check_targets(int devices, int ranks) const {
  for (const auto& r : rules_) {
    const bool dev = r.target == CorruptRule::Target::device;
    const int count = dev ? devices : ranks;
    const char* what = dev ? "device" : "rank";
    if (r.target == CorruptRule::Target::link && r.a == r.b)
      throw UsageError(fmt::format("{}: '{}' pairs rank {} with itself (a link is two ranks)",
                                   kKnob, r.item, r.a));
    for (const int id : {r.a, r.b})
      if (id >= count)
        throw UsageError(fmt::format("{}: '{}' names {} {}, but this run has {} {}{} (0..{})",
                                     kKnob, r.item, what, id, count, what, count == 1 ? "" : "s",
                                     count - 1));
  }
}

bool Corrupter::any_copy_rule() const {
  return std::any_of(rules_.begin(), rules_.end(), [](const CorruptRule& r) {
    return r.target == CorruptRule::Target::any || r.target == CorruptRule::Target::device;
  });
}

std::optional<Flip> Corrupter::draw(double rate, std::uint64_t n) {
  if (n == 0) return std::nullopt;
  std::lock_guard lock(mutex_);
  const double u = static_cast<double>(splitmix64(state_) >> 11) * 0x1.0p-53;
  if (u >= rate) return std::nullopt;
  const std::uint64_t where = splitmix64(state_);
  return Flip{where % n, static_cast<std::uint8_t>(1U << ((where >> 32) % 8))};
}

std::optional<Flip> Corrupter::draw_copy(int a, int b, std::uint64_t n) {
  for (const auto& r : rules_) {
    const bool hit = r.target == CorruptRule::Target::any ||
                     (r.target == CorruptRule::Target::device && (r.a == a || r.a == b));
    if (hit) return draw(r.rate, n);
  }
  return std::nullopt;
}

std::optional<Flip> Corrupter::draw_receive(int me, int from, std::uint64_t n) {
  for (const auto& r : rules_) {
    const bool hit = r.target == CorruptRule::Target::any ||
                     (r.target == CorruptRule::Target::rank && r.a == me) ||
                     (r.target == CorruptRule::Target::link &&
                      ((r.a == me && r.b == from) || (r.b == me && r.a == from)));
    if (!hit) continue;
    {
      std::lock_guard lock(mutex_);
      if (!seeded_rank_) {  // each rank its own sequence
        state_ ^= splitmix64_mix(static_cast<std::uint64_t>(me) + 1);
        seeded_rank_ = true;
      }
    }
    return draw(r.rate, n);
  }
  return std::nullopt;
}

}  // namespace xb
