// pairs: each p2p pair against the pairs of its link class (the link type
// the backend reports, and the method): within 20 % passes.
#include <fmt/format.h>

#include <map>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Pairs final : public Check {
 public:
  Pairs() : Check("pairs", "each p2p pair against the pairs of its link class (within 20 %)") {}
  ProbeNeeds needs() const override { return {.p2p = true}; }

  void compare(Context& ctx) override {
    for (const Unmeasured& u : ctx.probes().failed_pairs())
      ctx.add_row({name(), fmt::format("p2p {}->{}", u.src, u.dst), Verdict::warn, 0, 0, "GB/s",
                   fmt::format("did not run: {}", u.error)});
    const auto classes = link_classes(ctx);
    if (classes.empty()) {
      ctx.add_row({name(), "all", Verdict::none, 0, 0, "",
                   "no p2p pairs measured (one device, or none can reach another)"});
      return;
    }
    for (const auto& [cls, group] : classes) {
      if (group.size() < 2)
        ctx.add_comparison(only_pair(group[0], cls));
      else
        compare_class(ctx, cls, group);
    }
  }

 private:
  // The p2p probes by "LINK-TYPE METHOD".
  static std::map<std::string, std::vector<Probe*>> link_classes(const Context& ctx) {
    std::map<std::string, std::vector<Probe*>> classes;
    for (const auto& [path, p] : ctx.probes().paths())
      if (path.kase == copy_case::p2p)
        classes[fmt::format("{} {}", ctx.backend().link_type(path.src, path.dst),
                            to_string(path.method))]
            .push_back(p);
    return classes;
  }

  PairedCheck only_pair(Probe* only, const std::string& cls) const {
    PairedCheck c{name(),
                  only->label,
                  "GB/s",
                  Grade{},
                  {only},
                  [only](std::size_t i) { return std::pair(only->sample(0, i), 0.0); },
                  [cls](Verdict, double, double, double) {
                    return fmt::format("the only pair of its class ({})", cls);
                  }};
    c.reference_only = true;
    return c;
  }

  void compare_class(Context& ctx, const std::string& cls, const std::vector<Probe*>& group) {
    const std::size_t n = group.size();
    const Probes& probes = ctx.probes();
    ctx.add_peer_comparisons(
        name(), group, [&probes, n, cls](const Probe& p, Verdict v, double ratio) {
          const Path path = probes.path_of(p);
          return v == Verdict::pass
                     ? fmt::format("within 20 % of the {} pairs of its class ({})", n, cls)
                     : fmt::format(
                           "{:.0f} % of the pairs of its class ({}): look at devices {} and "
                           "{} and the link between them",
                           ratio * 100, cls, path.src, path.dst);
        });
  }
};

}  // namespace

std::unique_ptr<Check> make_pairs_check() { return std::make_unique<Pairs>(); }

}  // namespace xb::doctor
