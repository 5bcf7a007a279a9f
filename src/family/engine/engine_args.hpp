#pragma once
// The engine family's client-side arguments, shared by its commands
// (engine_family.cpp: client, selftest; engine_fanin.cpp: fanin): what the
// command line gives, the run's configuration made of it, its params, and
// the options that declare it.
#include <memory>
#include <optional>
#include <string>

#include "family/engine/engine_bench.hpp"
#include "family/family.hpp"
#include "family/options.hpp"

namespace CLI {
class App;
}

namespace xb {

struct ClientArgs {
  RunOptions run;
  std::string connect = "127.0.0.1:20000", token_file, ops = "read", mode = "h2h", total = "64M",
              block = "64K";
  int steps = 1, loops = 5;
  std::optional<int> batch;  // --batch, default 16
  int window = 0;            // --window, 0: not given
  bool async = false;
  double connect_timeout = 10, timeout = 30;
  std::string err_mode = "auto";
  std::string device = "0";  // one device, or a list: a lane each
  int server_device = 0;
  std::string lane = "auto", stage_chunk = "1M";
  std::string lanes, nic;  // --lanes N, --nic a,b ("": not given)
  bool huge = false;       // --host-mem huge
};

// --err-mode auto: UCX's peer error mode wherever shared memory cannot be
// used anyway (another host, or UCX_TLS without a shared-memory transport).
bool auto_peer_errors(const std::string& host);
// The run's configuration; UsageError for what does not fit together.
EngineClientConfig to_config(const ClientArgs& a);
// The backend whose memory a side uses: `auto` is the host backend.
std::unique_ptr<Backend> engine_backend(const std::string& name);
Params params_of(const ClientArgs& a, const EngineClientConfig& c);
// The client options (--connect, --token-file, --connect-timeout with_connect).
void add_client_options(CLI::App& app, ClientArgs& a, bool with_connect);
void check_devices(const Backend& b, const EngineClientConfig& cfg);
// `mpiexec -n N xferbench engine fanin` (engine_fanin.cpp).
int run_fanin(const Family& f, ClientArgs a, const std::string& listen, const Invocation& inv);

}  // namespace xb
