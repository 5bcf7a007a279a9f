// Part of the fake AscendCL (libascendcl.so, see fake_acl.cpp): what it
// records for tests (the rules broken, the advice not followed, the log of
// copies) and the knobs that shape time, topology and injected failures.
// - the rules broken and the advice are counted per message and printed at
//   exit, "fake ascend: rule broken: <what> (xN)" and "fake ascend: advice:
//   <what> (xN)" (tests/cli/expect.sh fails on either);
// - FAKE_ASCEND_GBPS=R (GB/s, 1e9 bytes/s): a copy of n bytes lasts n/R
//   (unset or 0: no duration);
// - FAKE_ACL_SUBMIT_US=U: each aclrtMemcpyAsync spends U microseconds on the
//   calling thread before its task is queued (the host's submit cost);
// - FAKE_ASCEND_TOPO: what aclrtGetDevicesTopo answers per pair of NPUs,
//   e.g. "0-1:SIO,2-3:SIO,*:HCCS": pairs are unordered, the first entry
//   that matches wins, `*` matches any pair; names HCCS, PIX, PHB, SYS, SIO,
//   HCCS_SW (ACL_RT_DEVS_TOPOLOGY_*). Unset: "*:HCCS"; a pair no entry
//   matches: HCCS (the fake's choice);
// - <fail_env>=<entry point> with <after_env>=k: that entry point's first k
//   calls succeed, the later ones fail (FAKE_ACL_FAIL / FAKE_ACL_FAIL_AFTER
//   here, FAKE_HCCL_FAIL / FAKE_HCCL_FAIL_AFTER in the fake HCCL).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fake_runtime.hpp"

namespace {

struct Record {
  std::mutex mu;                              // taken inside the runtime's, never around it
  std::map<std::string, int> broken, advice;  // message -> times
  std::string first_broken, first_advice;
};
// Never destroyed: the runtime's reporter prints it at exit.
Record& record() {
  static Record* r = new Record;
  return *r;
}

void add(std::map<std::string, int>& to, std::string& first, const char* what) {
  if (to.empty()) first = what;
  ++to[what];
}

// How many in `from`; the first message into buf[0..n).
int count(const std::map<std::string, int>& from, const std::string& first, char* buf,
          std::size_t n) {
  if (buf && n) std::snprintf(buf, n, "%s", first.c_str());
  int total = 0;
  for (const auto& [what, k] : from) total += k;
  return total;
}

constexpr std::size_t kKept = 65536;  // copies the log keeps

struct Log {
  std::mutex mu;
  std::vector<double> kept;  // (start_us, end_us, bytes) triples
  int total = 0;
};
// Never destroyed: stream workers may log while the process exits.
Log& copy_log() {
  static Log* l = new Log;
  return *l;
}

struct Calls {
  std::mutex mu;
  std::map<std::string, long> n;  // "<fail_env>:<fn>" -> calls while named
};
Calls& calls() {
  static Calls* c = new Calls;
  return *c;
}

struct TopoName {
  const char* name;
  std::uint64_t value;
};
constexpr TopoName kTopo[] = {
    {"HCCS", 0x01}, {"PIX", 0x02}, {"PHB", 0x08}, {"SYS", 0x10}, {"SIO", 0x20}, {"HCCS_SW", 0x40},
};

[[noreturn]] void bad_topo(const std::string& entry) {
  std::fprintf(stderr,
               "fake ascend: bad FAKE_ASCEND_TOPO entry '%s' (want a-b:NAME or *:NAME, NAME one "
               "of HCCS PIX PHB SYS SIO HCCS_SW)\n",
               entry.c_str());
  std::abort();
}

// Whether `entry` ("a-b:NAME" or "*:NAME") names the pair; its value in *value.
bool topo_entry(const std::string& entry, int a, int b, std::uint64_t* value) {
  const auto colon = entry.find(':');
  if (colon == std::string::npos) bad_topo(entry);
  const std::string pair = entry.substr(0, colon), name = entry.substr(colon + 1);
  bool known = false;
  for (const auto& t : kTopo)
    if (name == t.name) {
      *value = t.value;
      known = true;
    }
  if (!known) bad_topo(entry);
  if (pair == "*") return true;
  int x = -1, y = -1;
  char tail = 0;
  if (std::sscanf(pair.c_str(), "%d-%d%c", &x, &y, &tail) != 2 || x < 0 || y < 0) bad_topo(entry);
  return (x == a && y == b) || (x == b && y == a);
}

}  // namespace

extern "C" {

void fake_acl_rule_broken(const char* what) {
  auto& r = record();
  std::lock_guard lock(r.mu);
  add(r.broken, r.first_broken, what);
}

int fake_acl_rules_broken(char* buf, std::size_t n) {
  auto& r = record();
  std::lock_guard lock(r.mu);
  return count(r.broken, r.first_broken, buf, n);
}

int fake_acl_advice(char* buf, std::size_t n) {
  auto& r = record();
  std::lock_guard lock(r.mu);
  return count(r.advice, r.first_advice, buf, n);
}

void fake_acl_clear_rules() {
  auto& r = record();
  std::lock_guard lock(r.mu);
  r.broken.clear();
  r.advice.clear();
  r.first_broken.clear();
  r.first_advice.clear();
}

int fake_acl_copy_log(double* out, int max_copies) {
  auto& l = copy_log();
  std::lock_guard lock(l.mu);
  if (out && max_copies > 0) {
    const std::size_t n = std::min(l.kept.size(), 3 * static_cast<std::size_t>(max_copies));
    std::copy(l.kept.begin(), l.kept.begin() + static_cast<std::ptrdiff_t>(n), out);
  }
  return l.total;
}

void fake_acl_copy_log_clear() {
  auto& l = copy_log();
  std::lock_guard lock(l.mu);
  l.kept.clear();
  l.kept.shrink_to_fit();
  l.total = 0;
}

int fake_injected(const char* fail_env, const char* after_env, const char* fn) {
  const char* f = std::getenv(fail_env);
  if (!f || std::strcmp(f, fn) != 0) return 0;
  const char* after = std::getenv(after_env);
  if (!after) return 1;
  const long k = std::strtol(after, nullptr, 10);
  auto& c = calls();
  std::lock_guard lock(c.mu);
  return ++c.n[std::string(fail_env) + ":" + fn] > k ? 1 : 0;
}

}  // extern "C"

namespace fake_acl_internal {

void advise(const char* what) {
  auto& r = record();
  std::lock_guard lock(r.mu);
  add(r.advice, r.first_advice, what);
}

void print_record() {
  auto& r = record();
  std::lock_guard lock(r.mu);
  for (const auto& [what, n] : r.broken)
    std::fprintf(stderr, "fake ascend: rule broken: %s (x%d)\n", what.c_str(), n);
  for (const auto& [what, n] : r.advice)
    std::fprintf(stderr, "fake ascend: advice: %s (x%d)\n", what.c_str(), n);
}

std::int64_t copy_ns(std::size_t bytes) {
  const char* v = std::getenv("FAKE_ASCEND_GBPS");
  const double rate = v ? std::strtod(v, nullptr) : 0;  // GB/s: bytes per ns
  if (!(rate > 0)) return 0;
  return std::llround(static_cast<double>(bytes) / rate);
}

std::int64_t submit_us() {
  const char* v = std::getenv("FAKE_ACL_SUBMIT_US");
  return v ? std::strtoll(v, nullptr, 10) : 0;
}

void log_copy(std::int64_t start_ns, std::int64_t end_ns, std::size_t bytes) {
  auto& l = copy_log();
  std::lock_guard lock(l.mu);
  ++l.total;
  if (l.kept.size() >= 3 * kKept) return;
  l.kept.push_back(static_cast<double>(start_ns) / 1e3);
  l.kept.push_back(static_cast<double>(end_ns) / 1e3);
  l.kept.push_back(static_cast<double>(bytes));
}

std::uint64_t topology(int a, int b) {
  const char* v = std::getenv("FAKE_ASCEND_TOPO");
  const std::string spec = v ? v : "*:HCCS";
  std::uint64_t found = 0x01;  // no entry for the pair: HCCS
  bool matched = false;
  std::string cur;
  for (std::size_t i = 0; i <= spec.size(); ++i) {  // every entry checked
    if (i == spec.size() || spec[i] == ',') {
      std::uint64_t value = 0;
      if (!cur.empty() && topo_entry(cur, a, b, &value) && !matched) {
        found = value;
        matched = true;
      }
      cur.clear();
    } else {
      cur += spec[i];
    }
  }
  return found;
}

}  // namespace fake_acl_internal
