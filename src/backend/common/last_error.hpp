#pragma once
// The CUDA runtime keeps one last-error slot per host thread: a call that
// fails writes it, a call that succeeds leaves it as it was, and only
// cudaGetLastError reads and clears it. So a launcher that ends with
// `return cudaGetLastError()` after its <<<>>> launch reports whatever failed
// earlier on the thread as its own: a NotReady left by an event query, an
// aborted capture, a failed cudaHostRegister (the CUDA review's findings 1
// and 9: gemm-ar's second phase threw "device not ready"). These two rules,
// as templates over the runtime's calls, are used by the launchers (.cu) and
// the queries, and tested against a model of the slot (tests/unit).
namespace xb {

// Clears the slot, launches, and returns this launch's error only.
template <class GetLastError, class Launch>
auto launch_reporting_own_error(GetLastError get_last_error, Launch launch) {
  (void)get_last_error();
  launch();
  return get_last_error();
}

// An event or stream query: NotReady is an answer, not an error, and must
// not stay in the slot for the next launch to report.
template <class Err, class Query, class GetLastError>
Err query_clearing_not_ready(Query query, GetLastError get_last_error, Err not_ready) {
  const Err e = query();
  if (e == not_ready) (void)get_last_error();
  return e;
}

}  // namespace xb
