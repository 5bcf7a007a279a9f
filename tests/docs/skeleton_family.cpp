// The skeleton family of docs/DESIGN.md ("Adding a family"), compiled and
// run by the test suite so the document cannot drift from the API: the
// code blocks DESIGN marks `<!-- compiled: tests/docs/skeleton_family.cpp -->`
// must be verbatim excerpts of this file (docs.design_examples checks), and
// docs.skeleton_runs runs it. It is not registered in cli/families.cpp: it
// is an example, not a command of xferbench.
//
// `xferbench-skeleton fill` times filling a host buffer with one byte value
// (std::memset) and checks every byte: one single-process, host-only family
// with one key field, one case, its table and the shared run options.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/timer.hpp"
#include "family/backend_choice.hpp"
#include "family/cycles.hpp"
#include "family/options.hpp"
#include "family/output.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

// The fields fill adds to its records: declared once, beside the code that
// writes them.
namespace fill_field {
inline constexpr FieldKey<std::int64_t> value{"value"};  // the byte written
}  // namespace fill_field

// The measurement, apart from the family: one record per size.
std::vector<Record> run_fill(const std::vector<Bytes>& sizes, int value, int warmup, int iters,
                             bool check) {
  std::vector<Record> out;
  for (const Bytes bytes : sizes) {
    std::vector<unsigned char> buf(bytes);
    for (int i = 0; i < warmup; ++i) std::memset(buf.data(), value, buf.size());
    std::vector<double> samples;
    for (int i = 0; i < iters; ++i) {
      const auto t0 = Clock::now();
      std::memset(buf.data(), value, buf.size());
      samples.push_back(elapsed_us(t0, Clock::now()));
    }
    Record r;
    r.kase = "fill";
    r.method = "memset";
    r.bytes = bytes;
    r.set_samples(samples);
    r.set(fill_field::value, std::int64_t{value});  // writes a field
    if (check) {
      r.verified = std::all_of(buf.begin(), buf.end(), [&](unsigned char c) { return c == value; });
      if (!*r.verified) r.status = Status::failed;
    }
    record_done(r);  // in the -o file at once
    out.push_back(std::move(r));
    stop_point(nullptr);  // Ctrl-C ends the run here, the records so far kept
  }
  return out;
}

std::string fill_tables(const Report& r) {
  std::string s =
      fmt::format("{:>12} {:>6} {:>10} {:>6}\n", "Size(Bytes)", "Value", "GB/s", "Check");
  for (const Record& rec : r.results)
    s += fmt::format("{:>12} {:>6} {:>10.2f} {:>6}\n", rec.bytes,
                     rec.get_or(fill_field::value, std::int64_t{0}),  // reads a field
                     rec.gbps_median, rec.verified.value_or(false) ? "ok" : "-");
  return s;
}

class FillFamily final : public Family {
 public:
  FillFamily() { schema_.add(fill_field::value, FieldRole::key, "the byte value written"); }
  std::string name() const override { return "fill"; }
  std::string summary() const override { return "fill host memory with one byte value"; }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    r.add({"fill.memset", "fill", "std::memset of a host buffer", host_memory_only});
  }
  std::string table_note(const Report&) const override {
    return "GB/s = bytes written / time, decimal (1e9 B/s); median of the timed iterations\n";
  }
  std::string tables(const Report& r) const override { return fill_tables(r); }

  void add_options(CLI::App& app) override {
    app.add_option("--value", value_, "the byte to write")->check(CLI::Range(0, 255));
    add_size_options(app, sizes_, "4K", "64M", "16");
    add_run_options(app, run_,
                    {.iters = "timed iterations (default 10)",
                     .warmup = "warm-up iterations, discarded (default 2)",
                     .check = "skip verification",
                     .monitor = true});
  }

  int run(const Invocation&) override {
    const RunOptions opts = host_only(run_, "fill");
    ChosenBackend chosen = choose_backend(*this, opts.backend, nullptr);
    const std::vector<Bytes> sizes = sizes_of(sizes_, 4096, 64 << 20, 16);
    Output out(opts);  // a bad -o is a usage error before anything runs
    Report report{"fill", env_of(*chosen.backend), {{"value", std::int64_t{value_}}}, {}, {}};
    out.begin(*this, report);
    report.results = run_cycles(opts, nullptr, [&] {
      return run_fill(sizes, value_, opts.warmup_or(2), opts.iters_or(10), !opts.no_check);
    });
    return report_once(*this, std::move(report), opts, out);
  }

 private:
  int value_ = 0xA5;
  SizeArgs sizes_;
  RunOptions run_;
  RecordSchema schema_{"fill"};
};

}  // namespace

std::unique_ptr<Family> make_fill_family() { return std::make_unique<FillFamily>(); }

}  // namespace xb
