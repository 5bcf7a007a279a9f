#pragma once
// The copy family's patterns as data. Each `-t` name is one row of
// copy_patterns(): its title, the devices it needs, the options it takes and
// the groups it expands to. A group is a list of legs started together (one
// Copier::run batch, or one per leg: copy_batches); every leg is measured,
// and a group with a total also reports every leg's bytes over the batch
// time (the slowest leg's end).
// Pure logic, kept apart from the measuring so it can be tested without
// devices. Adding a pattern is one row in copy_plan.cpp.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace xb {

struct CopyConfig;  // copy_bench.hpp

// Record case names: copy, doctor, compare and the tests read them here.
// Derived forms: `<case>_read` (--p2p-op read), `<case>_total` (the sum).
namespace copy_case {
inline constexpr const char* h2d = "h2d";
inline constexpr const char* d2h = "d2h";
inline constexpr const char* d2d = "d2d";
inline constexpr const char* p2p = "p2p";
inline constexpr const char* all_to_host = "all_to_host";
inline constexpr const char* host_to_all = "host_to_all";
inline constexpr const char* all_to_one = "all_to_one";
inline constexpr const char* one_to_all = "one_to_all";
inline constexpr const char* host_bidir = "host_bidir";          // h2d and d2h at once
inline constexpr const char* all_host_bidir = "all_host_bidir";  // every device both ways
inline constexpr const char* p2p_bidir = "p2p_bidir";
inline constexpr const char* p2p_local = "p2p_local";  // same-device reference of p2p
}  // namespace copy_case

// "p2p_bidir" -> "p2p_bidir_total": the case of a group's sum record.
std::string total_case(std::string_view kase);
// The case before "_total", or "" where `kase` is not a sum.
std::string_view summed_case(std::string_view kase);

// The src or dst of a record that sums several devices ("every device").
inline constexpr int kEveryDevice = -2;

// Which end drives a device-to-device copy: write, the source pushes (its
// copy engine, SMs or cores); read, the destination pulls.
enum class P2pOp { write, read };
const char* to_string(P2pOp op);

struct CopyLeg {
  int src = -1;  // device ids; -1 is the host
  int dst = -1;
  std::optional<int> by;  // the device that executes it; nullopt: the backend's rule
};

struct CopyGroup {
  const char* pattern = "";   // the row it comes from (its -t name)
  std::string kase;           // the case of every leg's record
  std::vector<CopyLeg> legs;  // started together; empty: waived (too few devices)
  int src = -1, dst = -1;     // the group's ends, for its label and its sum (kEveryDevice)
  bool both_ways = false;     // legs in both directions ("<->")
  bool total = false;         // also a total_case(kase) record
  // Each leg's record measured as nvbandwidth measures these patterns'
  // cells: that leg at the size, every other leg at twice it, so the others
  // contend with it from its start to its end (copy_batches). Without it a
  // leg's record comes from the batch of equal sizes, where a leg that ends
  // late runs its tail with fewer competitors.
  bool doubled_others = false;
  const std::vector<Bytes>* sizes = nullptr;
  int iters = 1;

  std::string label() const;  // "p2p 0->1", "all_to_host all->host", "host_bidir host<->0"
  // Bytes of each leg's buffers for copies of `bytes`: twice that where a
  // leg also runs as another's doubled interference.
  Bytes leg_bytes(Bytes bytes) const;
  // Bytes allocated on `device` (-1: host memory) at once for `bytes` per leg.
  Bytes footprint(int device, Bytes bytes) const;
};

// One Copier::run batch of a group at one size: each leg's bytes and the
// records its timings give.
struct CopyBatch {
  std::vector<Bytes> bytes;       // per leg, in leg order
  std::vector<std::size_t> legs;  // the legs whose records it times
  bool sum = false;               // and the group's sum (the batch's time)
};

// The batches of a group at size n. Usually one: every leg at n, every
// record. With doubled_others and more than one leg: first every leg at n
// for the sum, then per leg one batch with it at n and the others at 2n for
// its record (nvbandwidth's allHostHelper, allHostBidirHelper and
// HostToDeviceBidirCE: "double the size of the interference copy").
std::vector<CopyBatch> copy_batches(const CopyGroup& g, Bytes n);

// What a row expands: the devices and the options of the run.
struct PlanInput {
  const CopyConfig& cfg;
  int ndevices;
  std::vector<int> devices;  // -d, or every device
};

struct CopyPattern {
  const char* key;                   // the -t name and the case of its one-way records
  const char* title;                 // table heading
  const char* help;                  // `list` and --help
  int min_devices;                   // fewer: p2p is waived, the others are a usage error
  bool p2p_sizes;                    // p2p's sizes and iterations (fixed 64 MiB by default)
  bool takes_op;                     // --p2p-op applies
  bool takes_bidir;                  // --bidir applies
  bool takes_device;                 // -d applies
  const char* bidir_case = nullptr;  // the case of its --bidir groups
  const char* bidir_title = nullptr;
  void (*plan)(const PlanInput&, std::vector<CopyGroup>&);
};

std::span<const CopyPattern> copy_patterns();
const CopyPattern* find_pattern(std::string_view key);
// The table heading of a record case (any form), or the case itself.
std::string case_title(std::string_view kase);
// "h2d, d2h, ..." for help text and errors.
std::string pattern_names();

// Expands the config over `ndevices` devices, in -t order, each group once.
std::vector<CopyGroup> plan_copy(const CopyConfig& cfg, int ndevices);

}  // namespace xb
