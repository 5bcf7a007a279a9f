"""check_prom.py FILE [doctor|fleet]: FILE parses as the Prometheus text
exposition format (python3-prometheus-client's parser) and keeps
xferbench's contract: every metric ends in one base unit (or _ratio,
_info, _verdict, a counted noun), no `host`, `where` or `unit` label, no
series twice, verdicts in {0, 1, 2}, xferbench_build_info and the run's
timestamp present, and the command's own metrics there; then
`promtool check metrics` (Prometheus' own lint, Debian's prometheus
package) finds nothing, where promtool is installed. Exit 77 (skipped)
without the parser."""
import re
import shutil
import subprocess
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("skipped: no prometheus_client (apt-get install python3-prometheus-client)")
    sys.exit(77)

path = sys.argv[1]
command = sys.argv[2] if len(sys.argv) > 2 else "doctor"
text = open(path).read()
families = {f.name: f for f in text_string_to_metric_families(text)}

# Base units (Prometheus' naming guide), unitless ratios, the info and
# verdict encodings, and counts of things named by what they count.
UNITS = ["bytes_per_second", "transfers_per_second", "seconds", "bytes", "ratio", "info",
         "total", "verdict", "checks", "pairs", "hosts"]
NOT_UNITS = {"bytes_per_second": "bytes", "transfers_per_second": "seconds"}
errors = []
for name, fam in families.items():
    suffix = next((u for u in UNITS if name.endswith("_" + u)), None)
    if suffix is None:
        errors.append(f"{name}: no unit suffix ({', '.join(UNITS)})")
        continue
    stem = name[: -len(suffix) - 1]
    for u in ("seconds", "bytes", "ratio", "per_second", "transfers"):
        if re.search(rf"(^|_){u}(_|$)", stem):
            errors.append(f"{name}: a second unit ({u}) before {suffix}")
    if not name.startswith("xferbench_"):
        errors.append(f"{name}: not under xferbench_")
    seen = set()
    for s in fam.samples:
        for bad in ("host", "where", "unit", "verdict"):
            if bad in s.labels:
                errors.append(f"{s.name}{s.labels}: label {bad}")
        key = tuple(sorted(s.labels.items()))
        if key in seen:
            errors.append(f"{s.name}{s.labels}: the same series twice")
        seen.add(key)
        if suffix == "verdict" and s.value not in (0, 1, 2):
            errors.append(f"{s.name}{s.labels} = {s.value}: a verdict is 0, 1 or 2")

# The raw text: HELP and TYPE once per metric, its samples together.
order = [m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.M)]
runs = [n for i, n in enumerate(order) if i == 0 or order[i - 1] != n]
if len(runs) != len(set(runs)):
    errors.append("a metric's samples are not together")

prefix = f"xferbench_{command}_"
want = ["xferbench_build_info", prefix + "run_timestamp_seconds", prefix + "failed_checks",
        prefix + "check_verdict", prefix + "bandwidth_bytes_per_second"]
if command == "fleet":
    want += [prefix + "failed_pairs"]
errors += [f"missing metric {n}" for n in want if n not in families]
if "xferbench_build_info" in families:
    info = families["xferbench_build_info"].samples
    if not info or info[0].value != 1 or not {"version", "backend", "command"} <= set(info[0].labels):
        errors.append(f"bad build_info {info}")
if prefix + "run_timestamp_seconds" in families:
    if families[prefix + "run_timestamp_seconds"].samples[0].value < 1.6e9:
        errors.append("the run timestamp is not Unix time")
if prefix + "check_verdict" in families:
    for s in families[prefix + "check_verdict"].samples:
        if "check" not in s.labels:
            errors.append(f"{s.name}{s.labels}: no check label")
lint = "promtool not installed: not linted"
if shutil.which("promtool"):
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    if p.returncode != 0 or p.stdout.strip() or p.stderr.strip():
        errors.append(f"promtool check metrics: exit {p.returncode}: {p.stdout}{p.stderr}")
    lint = "promtool check metrics: clean"
if errors:
    sys.exit("\n".join(errors))
samples = sum(len(f.samples) for f in families.values())
print(f"ok: {len(families)} metric families, {samples} samples; {lint}")
