#!/usr/bin/python3
"""Charts and HTML reports from xferbench result files (schema xferbench/1).

  xferbench_plot.py plot IN.json OUT.(png|svg)
  xferbench_plot.py report OUT.html IN.json [IN.json ...]

Run by `xferbench plot` and `xferbench report`; needs matplotlib (Debian:
python3-matplotlib). Exit 0 ok, 2 bad input, 3 matplotlib missing.
"""
import html
import io
import json
import math
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    # Exit 3 tells xferbench to try its next Python (it says what is missing).
    if not os.environ.get("XFERBENCH_PLOT_CALLER"):
        print("xferbench plot needs matplotlib: apt-get install python3-matplotlib", file=sys.stderr)
    sys.exit(3)


def size_label(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def ok(records):
    return [r for r in records if r.get("status") == "ok"]


def curves(records, key, x, y):
    """{label: [(x, y)]} sorted by x."""
    out = {}
    for r in ok(records):
        out.setdefault(key(r), []).append((x(r), y(r)))
    return {k: sorted(v) for k, v in out.items()}


def line_chart(title, series, xlabel, ylabel, xfmt=None):
    xfmt = xfmt or size_label
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for label, pts in series.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    xs = sorted({p[0] for pts in series.values() for p in pts})
    if xs and xs[-1] > xs[0] * 4:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([xfmt(v) for v in xs], rotation=45, fontsize=7)
    elif xfmt is not size_label:
        ax.set_xticks(xs)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(series) <= 12:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def bar_chart(title, labels, values, ylabel):
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.bar(range(len(values)), values, color="#4c72b0")
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    for i, v in enumerate(values):
        ax.annotate(f"{v:.3g}", (i, v), ha="center", va="bottom", fontsize=7)
    fig.tight_layout()
    return fig


def heat_map(title, matrix, n):
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * n, 1.0 + 0.8 * n))
    vals = [[matrix.get((s, d), float("nan")) for d in range(n)] for s in range(n)]
    im = ax.imshow(vals, cmap="viridis")
    for s in range(n):
        for d in range(n):
            v = vals[s][d]
            ax.text(d, s, "N/A" if math.isnan(v) else f"{v:.1f}", ha="center", va="center",
                    color="white" if not math.isnan(v) else "black", fontsize=8)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="GB/s")
    fig.tight_layout()
    return fig


def ep(d):
    return "host" if d < 0 else str(d)


def gbps(r):
    return r["gbps"]["median"]


def charts_copy(res):
    figs = []
    lines = [r for r in res if not r["case"].startswith("p2p") and "threads" not in r]
    series = curves(lines, lambda r: f"{r['case']} {r['method']} {ep(r['src'])}->{ep(r['dst'])}", lambda r: r["bytes"], gbps)
    if series:
        figs.append(("Copy bandwidth", line_chart("copy: bandwidth vs size", series, "bytes", "GB/s")))
    # --threads lists: bandwidth against cores (host) or thread blocks (cuda), per case and size.
    threaded = [r for r in res if "threads" in r and r["case"] in ("h2d", "d2h", "d2d", "p2p")]
    series = curves(threaded, lambda r: f"{r['case']} {r['method']} {ep(r['src'])}->{ep(r['dst'])} {size_label(r['bytes'])}",
                    lambda r: r["threads"], gbps)
    if series:
        figs.append(("Copy bandwidth vs threads",
                     line_chart("copy: bandwidth vs cores / thread blocks", series, "threads (host cores, cuda blocks)",
                                "GB/s", xfmt=str)))
    for kase in ("p2p", "p2p_bidir_total"):
        for method in sorted({r["method"] for r in res if r["case"] == kase and "threads" not in r}):
            for size in sorted({r["bytes"] for r in res if r["case"] == kase and r["method"] == method}):
                cells = {(r["src"], r["dst"]): gbps(r) for r in ok(res)
                         if r["case"] == kase and r["method"] == method and r["bytes"] == size}
                if kase == "p2p_bidir_total":
                    cells.update({(d, s): v for (s, d), v in list(cells.items())})
                if cells:
                    n = max(max(s, d) for s, d in cells) + 1
                    figs.append((f"{kase} {method} {size_label(size)}",
                                 heat_map(f"{kase} matrix · {method} · {size_label(size)} (GB/s)", cells, n)))
    return figs


def charts_remote(res):
    label = lambda r: f"{r['case']} {r['method']}" + (f" t{r['threads']}" if "threads" in r else "")
    series = curves(res, label, lambda r: r["bytes"], gbps)
    return [("Remote get/put", line_chart("remote: core vs dma", series, "bytes", "GB/s"))] if series else []


def charts_coll(res):
    figs = []
    for op in sorted({r["case"] for r in res}):
        rs = [r for r in res if r["case"] == op]
        series = curves(rs, lambda r: f"{r['dtype']} {r['redop']} {'in' if r['inplace'] else 'out'}",
                        lambda r: r["bytes"], lambda r: r["busbw"])
        if series:
            figs.append((f"{op} busbw", line_chart(f"{op}: bus bandwidth", series, "bytes", "busbw GB/s")))
    return figs


def charts_engine(res):
    series = curves(res, lambda r: f"{r['case']} {r['method']} {r.get('mode', '')}", lambda r: r["block"], gbps)
    return [("Engine throughput", line_chart("engine: throughput vs block size", series, "block bytes",
                                             "GB/s"))] if series else []


def charts_kv(res):
    rs = ok(res)
    labels = [f"{r['case']} r{r['src']} b{r['blocks']}" if r["src"] >= 0 else f"{r['case']} b{r['blocks']}"
              for r in rs]
    return [("KV blocks", bar_chart("kv: GB/s per rank and round size", labels, [gbps(r) for r in rs],
                                    "GB/s"))] if rs else []


def charts_gemm_ar(res):
    figs = []
    for r in ok(res):
        parts = [(k, r[k]) for k in ("compute_us", "comm_us", "sequential_us", "pipelined_us") if k in r]
        if parts:
            figs.append((f"gemm-ar {r.get('case', '')}",
                         bar_chart("gemm-ar: time breakdown", [p[0] for p in parts], [p[1] for p in parts], "us")))
    return figs


def charts(doc):
    res = doc["results"]
    cmd = doc.get("command", "")
    fn = {"copy": charts_copy, "remote": charts_remote, "coll": charts_coll, "engine": charts_engine,
          "kv": charts_kv, "gemm-ar": charts_gemm_ar}.get(cmd)
    figs = fn(res) if fn else []
    if not figs and ok(res):  # anything else: one bar per record
        rs = ok(res)
        figs = [(cmd, bar_chart(f"{cmd}: median GB/s", [f"{r['case']} {r['method']} {size_label(r['bytes'])}"
                                                         for r in rs], [gbps(r) for r in rs], "GB/s"))]
    return figs


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"xferbench plot: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)
    if not isinstance(doc, dict) or doc.get("schema") != "xferbench/1" or not doc.get("results"):
        print(f"xferbench plot: {path} is not an xferbench/1 result with results", file=sys.stderr)
        sys.exit(2)
    return doc


def plot(inp, out):
    figs = charts(load(inp))
    if not figs:
        print(f"xferbench plot: {inp} has no measured records to draw", file=sys.stderr)
        sys.exit(2)
    if len(figs) == 1:
        figs[0][1].savefig(out, dpi=110)
        return
    # Several charts: one image, stacked.
    import matplotlib.image as mpimg
    bufs = []
    for _, f in figs:
        b = io.BytesIO()
        f.savefig(b, format="png", dpi=110)
        b.seek(0)
        bufs.append(mpimg.imread(b))
    fig, axes = plt.subplots(len(bufs), 1, figsize=(8, 4.6 * len(bufs)))
    for ax, img in zip(axes, bufs):
        ax.imshow(img)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def svg_of(fig):
    b = io.StringIO()
    fig.savefig(b, format="svg")
    plt.close(fig)
    text = b.getvalue()
    return text[text.find("<svg"):]


def table(rows, cols):
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def report(out, inputs):
    parts, n_charts = [], 0
    for path in inputs:
        doc = load(path)
        env = doc.get("env", {})
        parts.append(f"<h2>{html.escape(doc.get('command', '?'))} · {html.escape(path)}</h2>")
        parts.append(table([(k, json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in env.items()],
                           ["environment", "value"]))
        for title, fig in charts(doc):
            parts.append(f'<figure class="chart"><figcaption>{html.escape(title)}</figcaption>{svg_of(fig)}</figure>')
            n_charts += 1
        rows = [(r.get("case"), r.get("method"), r.get("src"), r.get("dst"), r.get("bytes"), r.get("status"),
                 f"{r['gbps']['median']:.3f}", f"{r['time_us']['median']:.2f}", r.get("verified"))
                for r in doc["results"]]
        parts.append(table(rows, ["case", "method", "src", "dst", "bytes", "status", "GB/s", "time us", "verified"]))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>xferbench report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}figure.chart{{margin:1em 0}}
figure.chart svg{{max-width:100%;height:auto}}</style></head>
<body data-expected-charts="{n_charts}">
<h1>xferbench report</h1>
{''.join(parts)}
<script>
document.body.dataset.charts = String(document.querySelectorAll("figure.chart svg").length);
</script>
</body></html>
"""
    with open(out, "w") as f:
        f.write(page)


def main(argv):
    if len(argv) == 4 and argv[1] == "plot":
        plot(argv[2], argv[3])
    elif len(argv) >= 4 and argv[1] == "report":
        report(argv[2], argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
