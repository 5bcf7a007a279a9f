#include "family/backend_choice.hpp"

#include <fmt/format.h>

#include "backend/select/select.hpp"
#include "core/error.hpp"

namespace xb {

namespace {

// `auto` passes over a backend where every case of the family is waived
// (an explicit --backend still runs there and reports the waived records).
Support some_case_runs(const Family& f, const Backend& b) {
  Registry registry;
  f.cases(registry);
  const Capabilities caps = b.capabilities();
  std::string why;
  for (const auto& def : registry.all()) {
    Support s = def.filter(caps);
    if (s.ok) return s;
    if (why.empty()) why = s.reason;
  }
  return Support::no(why);
}

// The same verdict on every rank (a rank's failure is everyone's).
Support agreed(Runtime* rt, const Support& s) {
  if (!rt) return s;
  const std::string err = rt->agree(s.ok ? std::string() : s.reason);
  return err.empty() ? Support::yes() : Support::no(err);
}

// The backend `name`, or why not (unknown, unavailable, failing to start).
Support try_make(const std::string& name, std::unique_ptr<Backend>& out) {
  try {
    out = make_backend(name);
    return Support::yes();
  } catch (const std::exception& e) {
    return Support::no(e.what());
  }
}

// The broken backend `p` on this rank, as the text every rank agrees on
// ("" when no rank has it broken).
std::string agreed_broken(Runtime* rt, const BackendStatus& p) {
  const std::string mine =
      p.broken ? fmt::format("backend '{}' is not usable: {}", p.name, p.reason) : std::string();
  return rt ? rt->agree(mine) : mine;
}

const BackendStatus* find_status(const std::vector<BackendStatus>& all, const std::string& name) {
  for (const auto& p : all)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

// Every rank walks the same candidates and agrees at each step, so all take
// the same backend (or all fail alike) even where their nodes differ.
ChosenBackend choose_backend(const Family& f, const std::string& name, Runtime* rt) {
  return choose_backend(f, name, rt, name == "auto" ? probe_backends() : probe_backend(name));
}

ChosenBackend choose_backend(const Family& f, const std::string& name, Runtime* rt,
                             const std::vector<BackendStatus>& statuses) {
  if (name != "auto") {
    ChosenBackend c;
    if (const BackendStatus* p = find_status(statuses, name))
      if (const std::string err = agreed_broken(rt, *p); !err.empty()) throw RuntimeError(err);
    if (const Support s = agreed(rt, try_make(name, c.backend)); !s.ok) throw UsageError(s.reason);
    if (const Support s = agreed(rt, f.fits(*c.backend, rt)); !s.ok) throw UsageError(s.reason);
    return c;
  }
  std::string passed, last, broken;
  for (const auto& p : statuses) {  // the same list, in the same order, on every rank
    if (f.judges_machines()) {
      if (p.broken) broken += fmt::format("{}{}: {}", broken.empty() ? "" : "; ", p.name, p.reason);
    } else if (const std::string err = agreed_broken(rt, p); !err.empty()) {
      throw RuntimeError(err + "; fix it, or give --backend host to measure the host alone");
    }
    // Skipped by all when no rank has it; considered by all when any has.
    const bool anywhere =
        rt ? !rt->agree(p.available ? std::string("available") : std::string()).empty()
           : p.available;
    if (!anywhere) continue;
    ChosenBackend c;
    Support s = p.available ? try_make(p.name, c.backend) : Support::no(p.reason);
    if (s.ok) s = some_case_runs(f, *c.backend);
    s = agreed(rt, s);
    if (s.ok) s = agreed(rt, f.fits(*c.backend, rt));
    if (s.ok) {
      if (!passed.empty()) c.note = "auto passed over " + passed;
      c.broken = broken;
      return c;
    }
    passed += fmt::format("{}{}: {}", passed.empty() ? "" : "; ", p.name, s.reason);
    last = s.reason;
  }
  throw UsageError(last.empty() ? std::string("no backend is available") : last);
}

}  // namespace xb
