"""check_prom.py FILE: FILE parses as the Prometheus text exposition format
(python3-prometheus-client's parser) and holds doctor's gauges, one sample
per check with its labels. Exit 77 (skipped) without the parser."""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("skipped: no prometheus_client (apt-get install python3-prometheus-client)")
    sys.exit(77)

families = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
want = ["xferbench_doctor_" + n for n in
        ("measured", "expected", "ratio", "verdict", "failed_checks", "run_timestamp_seconds")]
missing = [n for n in want if n not in families]
if missing:
    sys.exit(f"missing metric families: {missing}")
checks = families["xferbench_doctor_measured"].samples
if not checks:
    sys.exit("no checks in xferbench_doctor_measured")
for s in checks + families["xferbench_doctor_verdict"].samples:
    for label in ("check", "where", "unit", "backend", "host"):
        if label not in s.labels:
            sys.exit(f"{s.name} {s.labels} has no label {label}")
for s in families["xferbench_doctor_verdict"].samples:
    if s.labels.get("verdict") not in ("PASS", "WARN", "FAIL", "-") or s.value not in (0, 1, 2, -1):
        sys.exit(f"bad verdict sample {s}")
if families["xferbench_doctor_run_timestamp_seconds"].samples[0].value < 1.6e9:
    sys.exit("the run timestamp is not Unix time")
print(f"ok: {len(families)} metric families, {len(checks)} checks")
