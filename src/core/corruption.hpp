#pragma once
// Wrong data as a result of its own (--check every): each checked iteration
// is right or wrong; a record carries how many were checked, how many were
// wrong, the rate with its 95 % interval (Wilson's score interval, which
// stays inside [0, 1] and is not 0-wide at 0 wrong: 0 of 2000 is "at most
// 0.19 %", not "0"), and the first wrong place (where, offset, expected,
// got, xor, how many in that iteration). The fields are declared once
// (run_fields) and every family that checks every iteration sets them.
//
// Also the test-only knob XFERBENCH_HOST_CORRUPT=RATE[:TARGET][,...] that
// flips one bit in a fraction RATE of the host backend's copies (TARGET a
// device D: the copies touching it) or of what ranks receive (rankR: what R
// receives; rankA-rankB: what either receives from the other), so tests
// can prove that a corrupting device, rank or link is named.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/record.hpp"

namespace xb {

// --check: every timed iteration, the last one (the default), or none.
enum class CheckMode { none, last, every };
const char* to_string(CheckMode m);
// "every", "last", "none"; UsageError naming `option` for anything else.
CheckMode parse_check_mode(const std::string& text, const std::string& option);

// A two-sided 95 % interval for a rate, as fractions.
struct RateInterval {
  double lo = 0, hi = 1;
};
// Wilson's score interval for k wrong of n checked (z = 1.959964);
// {0, 1} when n is 0.
RateInterval wilson95(std::int64_t k, std::int64_t n);

// The first wrong place seen in an iteration.
struct FirstBad {
  std::int64_t iter = 0;     // the checked iteration, from 0
  std::string where;         // "device 1", "rank 2 (vm2)", "rank 0 (vm1) <- rank 3 (vm4)"
  std::uint64_t offset = 0;  // in bytes, or elements (unit "element")
  std::string unit = "byte";
  std::string expected, got;  // "0x3c" for a byte, the value for an element
  std::string xor_bits;       // "0x01" (bytes); "" where it means nothing
  std::uint64_t count = 0;    // wrong units in that iteration (0: not known)
  std::string count_unit;     // what `count` counts ("": `unit`)
};
// "iteration 37, device 1, byte 4096: expected 0x3c, got 0x3d (xor 0x01); 1 byte wrong in it"
std::string describe(const FirstBad& f);

// Byte-level first-bad fields: hex text of `want`, `got` and their xor.
FirstBad byte_mismatch(std::int64_t iter, std::string where, std::uint64_t offset,
                       std::uint8_t want, std::uint8_t got, std::uint64_t count);
// `got` against the pattern `seed` from `offset` (core/pattern.hpp):
// nullopt when every byte matches, else iteration `iter`'s first bad at
// `where` (its offset counted from `got`'s start) with the count.
std::optional<FirstBad> pattern_bad(std::span<const std::byte> got, std::uint64_t seed,
                                    std::uint64_t offset, std::int64_t iter, std::string where);

// What one record's checks found. Iterations are numbered from 0; the same
// iteration wrong on several ranks or legs counts once (merge).
class CheckTally {
 public:
  void right(std::int64_t iter);
  void wrong(FirstBad bad);  // bad.iter: the iteration
  // Iteration `iter` checked: wrong with `bad`, else right.
  void add(std::int64_t iter, std::optional<FirstBad> bad);
  // Another rank's or leg's tally of the same iterations.
  void merge(const CheckTally& other);

  std::int64_t checked() const { return checked_; }
  std::int64_t wrong_iters() const { return static_cast<std::int64_t>(bad_iters_.size()); }
  const std::optional<FirstBad>& first() const { return first_; }
  RateInterval interval() const { return wilson95(wrong_iters(), checked_); }
  // "20 of 2000 checked iterations wrong (1.00 %, 95 % interval 0.65-1.54 %, Wilson); first: ..."
  std::string summary() const;

  // Lossless text for the wire between ranks.
  std::string to_wire() const;
  static CheckTally from_wire(const std::string& text);  // RuntimeError when malformed

 private:
  std::int64_t checked_ = 0;
  std::vector<std::int64_t> bad_iters_;  // sorted, unique
  std::optional<FirstBad> first_;        // of the lowest iteration
};

// The fields of --check every (declared in run_fields()).
namespace check_field {
inline constexpr FieldKey<std::int64_t> checked_iters{"checked_iters"};
inline constexpr FieldKey<std::int64_t> wrong_iters{"wrong_iters"};
inline constexpr FieldKey<double> wrong_rate{"wrong_rate"};
inline constexpr FieldKey<double> wrong_rate_lo{"wrong_rate_lo"};
inline constexpr FieldKey<double> wrong_rate_hi{"wrong_rate_hi"};
inline constexpr FieldKey<std::string> first_bad{"first_bad"};
}  // namespace check_field

// Sets the fields on `r` and `verified`; with a wrong iteration the record
// is `failed` with summary() as its reason, its times kept (a failed
// measurement is evidence).
void set_check_fields(Record& r, const CheckTally& t);

// ---- the test knob -----------------------------------------------------------

struct CorruptRule {
  double rate = 0;
  enum class Target { any, device, rank, link } target = Target::any;
  int a = -1, b = -1;  // device; rank; the link's two ranks
  std::string item;    // as written, for messages
};
// XFERBENCH_HOST_CORRUPT's value; UsageError naming the variable when malformed.
std::vector<CorruptRule> parse_corrupt(const std::string& text);

// One bit to flip at `offset` of what arrived.
struct Flip {
  std::uint64_t offset = 0;
  std::uint8_t mask = 1;
  void apply(void* base) const;
};

// The process's knob: draws are deterministic (a fixed seed mixed with the
// rank), so a test's count is the same every run.
class Corrupter {
 public:
  // nullptr unless XFERBENCH_HOST_CORRUPT is set (parsed once; UsageError
  // when malformed).
  static Corrupter* from_env();
  explicit Corrupter(std::vector<CorruptRule> rules, std::uint64_t seed = 0x5eedc0ffeeULL);
  // Throws UsageError naming the first rule that names a device or rank
  // this run does not have.
  void check_targets(int devices, int ranks) const;
  bool any_copy_rule() const;
  // A copy of n bytes between devices a and b (-1: host memory).
  std::optional<Flip> draw_copy(int a, int b, std::uint64_t n);
  // What rank `me` received from rank `from` (-1: a collective), n bytes.
  std::optional<Flip> draw_receive(int me, int from, std::uint64_t n);

 private:
  std::optional<Flip> draw(double rate, std::uint64_t n);
  std::vector<CorruptRule> rules_;
  std::mutex mutex_;
  std::uint64_t state_;
  bool seeded_rank_ = false;
};

}  // namespace xb
