#include "family/ranked.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "family/backend_choice.hpp"

namespace xb {

Ranked start_ranked(const Family& f, const RunOptions& opts, const Invocation& inv,
                    const std::function<void(Runtime&, Backend&)>& validate) {
  if (opts.ranks > 0 && !launched_by_mpiexec())
    reexec_under_mpiexec(opts.ranks, inv.argc, inv.argv);
  Ranked r;
  r.rt = make_mpi_runtime();
  ChosenBackend chosen = choose_backend(f, opts.backend, r.rt.get());
  r.backend = std::move(chosen.backend);
  r.backend_note = std::move(chosen.note);
  r.backend_broken = std::move(chosen.broken);
  if (opts.ranks > 0 && opts.ranks != r.rt->size())
    throw UsageError(
        fmt::format("--ranks {} but mpiexec started {} ranks", opts.ranks, r.rt->size()));
  validate(*r.rt, *r.backend);
  std::string err;
  if (r.rt->root()) {
    try {
      r.out = std::make_unique<Output>(opts);
    } catch (const UsageError& e) {
      err = e.what();
    }
  }
  err = r.rt->agree(err);
  if (!err.empty()) throw UsageError(err);
  return r;
}

void Ranked::begin(const Family& f, const std::string& command, Params params) {
  if (out) {
    Report head{command, env_of(*backend), std::move(params), {}, {}};
    head.env.ranks = rt->size();
    head.env.backend_note = backend_note;
    out->begin(f, std::move(head));
  } else {
    arm_stop_signals(false);
  }
}

void Ranked::begin_whole() const { arm_stop_signals(rt->root()); }

int Ranked::report(const Family& f, Report r, const RunOptions& opts) {
  r.env = env_of(*backend);
  r.env.ranks = rt->size();
  r.env.backend_note = backend_note;
  if (out) out->emit([&](Format fmt) { return render(f, r, fmt); });
  const int code = finish(r, opts, f.schema());
  set_exit_code_hint(code);  // the results are out: a hung MPI_Finalize ends with this code
  return code;
}

}  // namespace xb
