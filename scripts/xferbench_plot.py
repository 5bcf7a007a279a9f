#!/usr/bin/python3
"""Charts and HTML reports from xferbench result files (schema xferbench/1).

  xferbench_plot.py plot IN.json OUT.(png|svg)
  xferbench_plot.py report OUT.html IN.json [IN.json ...]

Run by `xferbench plot` and `xferbench report`; needs matplotlib (Debian:
python3-matplotlib). Exit 0 ok, 2 bad input, 3 matplotlib missing, 4 the
output could not be written (said in one line). The output is written whole:
a temporary file beside it renamed over it, so it holds the old file or the
new one, never a part of one.
"""
import html
import io
import json
import math
import os
import sys
import tempfile

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


def panels_of(records, panel, key, x, y):
    """{panel: {label: [(x, y)]}}, panels in the order the file first has them (the tool's own
    order of its cases: no list of case names here to fall out of date), each curve sorted by x."""
    out = {}
    for r in ok(records):
        out.setdefault(panel(r), {}).setdefault(key(r), []).append((x(r), y(r)))
    return {p: {k: sorted(v) for k, v in series.items()} for p, series in out.items()}


def panel_chart(title, panels, xlabel, ylabel, xfmt=None, style=None, ylog=False):
    """One subplot per case, each on its own y scale (from 0, or log with ylog), x on a log-2 axis.
    style(label): extra plot() arguments for that curve (colour, line style)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    xfmt = xfmt or size_label
    names = [p for p, series in panels.items() if series]
    n = len(names)
    ncols = 1 if n == 1 else 2 if n in (2, 4) else 3
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(7.5, 4.6 * ncols), 3.5 * nrows + 0.7), squeeze=False)
    for ax, name in zip(axes.flat, names):
        series = panels[name]
        for label, pts in series.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label,
                    **(style(label) if style else {}))
        xs = sorted({p[0] for pts in series.values() for p in pts})
        ax.set_xscale("log", base=2)
        ticks = xs[::(len(xs) + 9) // 10]
        ax.set_xticks(ticks)
        ax.set_xticklabels([xfmt(v) for v in ticks], rotation=45, fontsize=7)
        ax.xaxis.set_minor_locator(NullLocator())
        if xs and xs[0] == xs[-1]:
            ax.set_xlim(xs[0] / 2, xs[0] * 2)
        if ylog:  # labels at 1, 2, 5 of each decade: a narrow range still reads
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_title(name, fontsize=10)
        ax.grid(True, alpha=0.3)
        if len(series) <= 12:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle(title)
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


def heat_map(title, matrix, n, labels=None, unit="GB/s", fmt="{:.1f}", cmap="viridis"):
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * n, 1.0 + 0.8 * n))
    vals = [[matrix.get((s, d), float("nan")) for d in range(n)] for s in range(n)]
    im = ax.imshow(vals, cmap=cmap)
    for s in range(n):
        for d in range(n):
            v = vals[s][d]
            ax.text(d, s, "N/A" if math.isnan(v) else fmt.format(v), ha="center", va="center",
                    color="white" if not math.isnan(v) else "black", fontsize=8)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    if labels:
        ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
        ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label=unit)
    fig.tight_layout()
    return fig


def ep(d):
    return "all" if d == -2 else "host" if d < 0 else str(d)  # -2: the sum over a pattern's devices


def gbps(r):
    return r["gbps"]["median"]


def pair(r):
    return f"{ep(r['src'])}->{ep(r['dst'])}"


def charts_copy(res):
    figs = []
    # One panel per case. p2p cases are heat maps below; they get a curve too when measured at several sizes.
    sizes = {}
    for r in ok(res):
        sizes.setdefault(r["case"], set()).add(r["bytes"])
    lines = [r for r in res if "threads" not in r and (not r["case"].startswith("p2p") or len(sizes[r["case"]]) > 1)]
    panels = panels_of(lines, lambda r: r["case"], lambda r: f"{r['method']} {pair(r)}", lambda r: r["bytes"], gbps)
    if panels:
        figs.append(("Copy bandwidth", panel_chart("copy: bandwidth vs size, per case", panels, "bytes", "GB/s")))
    # --threads lists: bandwidth against cores (host) or thread blocks (cuda), per case and size.
    threaded = [r for r in res if "threads" in r]
    panels = panels_of(threaded, lambda r: r["case"], lambda r: f"{r['method']} {pair(r)} {size_label(r['bytes'])}",
                       lambda r: r["threads"], gbps)
    if panels:
        figs.append(("Copy bandwidth vs threads",
                     panel_chart("copy: bandwidth vs cores / thread blocks", panels, "threads (host cores, cuda blocks)",
                                 "GB/s", xfmt=str)))
    # Heat maps: the one-way p2p cases (push and pull) and the bidirectional sums, as they appear.
    matrices = [k for k in dict.fromkeys(r["case"] for r in res)
                if k.startswith("p2p") and k != "p2p_local" and (not k.endswith("_bidir"))]
    for kase in matrices:
        for method in sorted({r["method"] for r in res if r["case"] == kase and "threads" not in r}):
            for size in sorted({r["bytes"] for r in res if r["case"] == kase and r["method"] == method}):
                cells = {(r["src"], r["dst"]): gbps(r) for r in ok(res)
                         if r["case"] == kase and r["method"] == method and r["bytes"] == size}
                if kase.endswith("_total"):
                    cells.update({(d, s): v for (s, d), v in list(cells.items())})
                if cells:
                    n = max(max(s, d) for s, d in cells) + 1
                    figs.append((f"{kase} {method} {size_label(size)}",
                                 heat_map(f"{kase} matrix · {method} · {size_label(size)} (GB/s)", cells, n)))
    return figs


def charts_remote(res):
    label = lambda r: r["method"] + (f" t{r['threads']}" if "threads" in r else "") + \
        (f" {r['transport']}" if r.get("transport") else "")
    panels = panels_of(res, lambda r: r["case"], label, lambda r: r["bytes"], gbps)
    return [("Remote get/put", panel_chart("remote: core vs dma, per operation", panels, "bytes", "GB/s"))] \
        if panels else []


def charts_coll(res):
    panels = panels_of(res, lambda r: r["case"],
                       lambda r: f"{r.get('dtype', '')} {r.get('redop', '')} {'in' if r.get('inplace') else 'out'}",
                       lambda r: r["bytes"], lambda r: r.get("busbw", gbps(r)))
    return [("Collective busbw", panel_chart("coll: bus bandwidth, per operation", panels, "bytes", "busbw GB/s"))] \
        if panels else []


def charts_engine(res):
    panels = panels_of(res, lambda r: r["case"], lambda r: " ".join(
        str(v) for v in (r["method"], r.get("mode"), r.get("lane")) if v), lambda r: r.get("block", r["bytes"]), gbps)
    return [("Engine throughput", panel_chart("engine: throughput vs block size, per operation", panels,
                                              "block bytes", "GB/s"))] if panels else []


def charts_kv(res):
    # One panel per operation (get, put); a series per rank, and the round's _avg/_max figures.
    def op(r):
        return r["case"].rsplit("_", 1)[0] if r["case"].endswith(("_avg", "_max", "_min")) else r["case"]

    def who(r):
        if r["case"] != op(r):
            return r["case"][len(op(r)) + 1:]
        return f"rank {r['src']}" if r["src"] >= 0 else "all"

    panels = panels_of(res, op, who, lambda r: r["bytes"], gbps)
    return [("KV blocks", panel_chart("kv: GB/s per rank vs round bytes, per operation", panels, "round bytes",
                                      "GB/s"))] if panels else []


def charts_ep(res):
    # The token ladder: one panel per phase; per method (library) the fresh entry from a barrier (solid)
    # and the chained period, round trips back to back (dashed, the same colour). Times span decades: log y.
    who = lambda r: f"{r['method']} ({r.get('library', '?')})"
    both = [dict(r, figure=f, us=r[k]) for r in ok(res) for f, k in (("fresh", "fresh_us"), ("chained", "chained_us"))]
    panels = panels_of(both, lambda r: r["case"], lambda r: f"{who(r)} {r['figure']}", lambda r: r["tokens"],
                       lambda r: r["us"])
    colour = {k: f"C{i}" for i, k in enumerate(dict.fromkeys(who(r) for r in both))}
    style = lambda label: {"color": colour[label.rsplit(" ", 1)[0]],
                           "linestyle": "--" if label.endswith(" chained") else "-"}
    title = "ep: time vs tokens per rank, per phase (solid: fresh entry, dashed: chained period)"
    return [("EP dispatch/combine", panel_chart(title, panels, "tokens per rank", "us", xfmt=str, style=style,
                                                ylog=True))] if panels else []


def charts_gemm_ar(res):
    figs = []
    for r in ok(res):
        parts = [(k, r[k]) for k in ("compute_us", "comm_us", "sequential_us", "pipelined_us") if k in r]
        if parts:
            figs.append((f"gemm-ar {r.get('case', '')}",
                         bar_chart("gemm-ar: time breakdown", [p[0] for p in parts], [p[1] for p in parts], "us")))
    return figs


VERDICT_COLOURS = {"PASS": "#2e7d32", "WARN": "#f9a825", "FAIL": "#c62828", "-": "#9e9e9e"}


def verdict_of(r):
    v = r.get("verdict", "-")
    return v if v in VERDICT_COLOURS else "-"


def charts_doctor(res):
    # Every row with an expected figure: measured as % of expected, coloured by its verdict.
    rows = [r for r in res if (r.get("expected") or 0) > 0]
    if rows:
        fig, ax = plt.subplots(figsize=(8.5, 1.4 + 0.32 * len(rows)))
        ys = range(len(rows))[::-1]
        vals = [100 * (r.get("ratio") or 0) for r in rows]
        ax.barh(list(ys), vals, color=[VERDICT_COLOURS[verdict_of(r)] for r in rows])
        ax.set_yticks(list(ys))
        ax.set_yticklabels([f"{r['case']} · {r['method']}" for r in rows], fontsize=7)
        ax.axvline(100, color="black", linewidth=0.8, linestyle="--")
        for y, v, r in zip(ys, vals, rows):
            ax.annotate(f"{v:.0f} % {verdict_of(r)}", (v, y), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=7)
        ax.set_xlim(0, max(vals + [100]) * 1.2)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlabel("measured, % of expected (dashed: expected)")
        ax.set_title("doctor: each check against what the link should give")
        from matplotlib.patches import Patch
        ax.legend(handles=[Patch(color=c, label=v) for v, c in VERDICT_COLOURS.items() if v != "-"], fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.tight_layout()
        return [("Doctor verdicts", fig)]
    # Nothing to hold against: the verdict counts.
    counts = {v: sum(verdict_of(r) == v for r in res) for v in VERDICT_COLOURS}
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(list(counts), list(counts.values()), color=list(VERDICT_COLOURS.values()))
    ax.set_ylabel("rows")
    ax.set_title("doctor: verdicts (no row has an expected figure)")
    fig.tight_layout()
    return [("Doctor verdicts", fig)]


FLEET_VERDICTS = ("fleet", "census", "host", "link", "latency")


def charts_fleet(res):
    """Heatmaps of the pair matrix: send GB/s, one-way latency, CV (median over passes)."""
    meas = [r for r in ok(res) if r["case"] in ("send", "pingpong") and not r.get("confirm")]
    if not meas:
        return []
    names = {}
    for r in meas:
        names.setdefault(r["src"], r.get("src_host", str(r["src"])))
        names.setdefault(r["dst"], r.get("dst_host", str(r["dst"])))
    ranks = sorted(names)
    pos = {k: i for i, k in enumerate(ranks)}
    labels = [names[k] for k in ranks]

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    def matrix(case, value, both_ways=False):
        cells = {}
        for r in meas:
            if r["case"] != case:
                continue
            a, b = pos[r["src"]], pos[r["dst"]]
            cells.setdefault((a, b), []).append(value(r))
            if both_ways:
                cells.setdefault((b, a), []).append(value(r))
        return {k: median(v) for k, v in cells.items()}

    n = len(ranks)
    out = [("fleet: send GB/s, row to column", heat_map("send GB/s (median over passes)", matrix("send", gbps), n, labels))]
    lat = matrix("pingpong", lambda r: r["time_us"]["median"], True)
    if lat:
        out.append(("fleet: one-way latency", heat_map("8-byte one-way latency, us (p50)", lat, n, labels, "us",
                                                       "{:.1f}", "viridis_r")))
    out.append(("fleet: send CV", heat_map("send CV (spread of the transfers)", matrix("send", lambda r: r["time_us"]["cv"]),
                                           n, labels, "CV", "{:.2f}", "magma_r")))
    return out


def charts_time(res, cmd):
    """A monitoring run (--duration/--cycles): each measurement's figure against time."""
    rs = [r for r in ok(res) if "t_unix" in r]
    t0 = min(r["t_unix"] for r in rs)
    series = {}
    for r in rs:
        label = f"{r['case']} {r['method']} {size_label(r['bytes'])}"
        if r.get("src", -1) >= 0 or r.get("dst", -1) >= 0:
            label += f" {ep(r['src'])}->{ep(r['dst'])}"
        y = r["busbw"] if cmd == "coll" and "busbw" in r else gbps(r)
        series.setdefault(label, []).append((r["t_unix"] - t0, y))
    fig, ax = plt.subplots(figsize=(8, 4))
    for label, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=label)
    ax.set_xlabel("time since the first record (s)")
    ax.set_ylabel("busbw GB/s" if cmd == "coll" else "GB/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if len(series) <= 12:
        ax.legend(fontsize=7)
    ax.set_title(f"{cmd}: figures over time ({max(r.get('cycle', 0) for r in rs) + 1} cycles)")
    fig.tight_layout()
    return [(f"{cmd} over time", fig)]


def charts(doc):
    res = doc["results"]
    cmd = doc.get("command", "")
    if any("t_unix" in r for r in ok(res)):
        return charts_time(res, cmd)
    fn = {"copy": charts_copy, "remote": charts_remote, "coll": charts_coll, "engine": charts_engine,
          "kv": charts_kv, "ep": charts_ep, "gemm-ar": charts_gemm_ar, "doctor": charts_doctor,
          "fleet": charts_fleet}.get(cmd)
    figs = fn(res) if fn else []
    if not figs and ok(res):  # anything else: one bar per record
        rs = ok(res)
        figs = [(cmd, bar_chart(f"{cmd}: median GB/s", [f"{r['case']} {r['method']} {size_label(r['bytes'])}"
                                                         for r in rs], [gbps(r) for r in rs], "GB/s"))]
    return figs


def write_output(out, data):
    """All of `data` (str or bytes) to `out`, replacing it whole; a device
    (/dev/stdout, /dev/full) is written in place. A failure is one line, exit 4."""
    mode = "wb" if isinstance(data, bytes) else "w"
    try:
        if os.path.exists(out) and not os.path.isfile(out):
            with open(out, mode) as f:
                f.write(data)
            return
        target = os.path.realpath(out)
        old_mode = os.stat(target).st_mode & 0o7777 if os.path.exists(target) else None
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".tmp",
                                   dir=os.path.dirname(target))
        try:
            with os.fdopen(fd, mode) as f:
                f.write(data)
            if old_mode is None:
                umask = os.umask(0)
                os.umask(umask)
                old_mode = 0o666 & ~umask
            os.chmod(tmp, old_mode)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as e:
        print(f"xferbench: error: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        sys.exit(4)


def image_bytes(fig, out):
    """The figure as the image format `out` names (.png or .svg)."""
    b = io.BytesIO()
    fig.savefig(b, format=os.path.splitext(out)[1][1:].lower() or "png", dpi=110)
    return b.getvalue()


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
        write_output(out, image_bytes(figs[0][1], out))
        return
    # Several charts: one image, stacked, each at its own height.
    import matplotlib.image as mpimg
    bufs = []
    for _, f in figs:
        b = io.BytesIO()
        f.savefig(b, format="png", dpi=110)
        plt.close(f)
        b.seek(0)
        bufs.append(mpimg.imread(b))
    heights = [img.shape[0] for img in bufs]
    width = max(img.shape[1] for img in bufs)
    fig, axes = plt.subplots(len(bufs), 1, figsize=(width / 100, sum(heights) / 100 + 0.2 * len(bufs)),
                             gridspec_kw={"height_ratios": heights})
    for ax, img in zip(axes, bufs):
        ax.imshow(img)
        ax.axis("off")
    fig.tight_layout()
    write_output(out, image_bytes(fig, out))


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


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else 0.0


def figure(v, unit):
    return f"{v:.2f} {unit}".strip()


def verdict_counts(res):
    c = {v: sum(verdict_of(r) == v for r in res) for v in VERDICT_COLOURS}
    worst = "fail" if c["FAIL"] else "warn" if c["WARN"] else "pass" if c["PASS"] else "none"
    line = f"{c['PASS']} PASS, {c['WARN']} WARN, {c['FAIL']} FAIL"
    if c["-"]:
        line += f" · {c['-']} without an expected figure"
    return line, worst


def doctor_section(path, doc):
    """The verdicts of one doctor file: count, headline figures, then the table. Goes first on the page."""
    res, env, params = doc["results"], doc.get("env", {}), doc.get("params", {})
    cmd = doc.get("command", "doctor")
    if cmd == "fleet":
        res = [r for r in res if r.get("case") in FLEET_VERDICTS]
    count, worst = verdict_counts(res)
    what = " · ".join(str(x) for x in (
        f"backend {env['backend']}" if env.get("backend") else None,
        f"{len(env['devices'])} device{'s' if len(env['devices']) != 1 else ''}" if isinstance(env.get("devices"), list) else None,
        env.get("host"), params.get("depth")) if x)
    out = [f'<section class="doctor"><h2>{html.escape(cmd)} verdicts · {html.escape(path)}</h2>']
    summary = doc.get("summary", {})
    if cmd == "fleet" and summary:
        named = " · ".join(f"{k}: {summary.get(k) or 'none'}" for k in ("slow_hosts", "slow_links"))
        out.append(f'<p class="fleet-named">{html.escape(named)}</p>')
    if what:
        out.append(f'<p class="doctor-env">{html.escape(what)}</p>')
    out.append(f'<p class="verdict-count worst-{worst}">{html.escape(count)}</p>')
    # Headline figures: the bandwidth rows, as % of what their link should give.
    heads = []
    for r in res:
        if r.get("case") != "bandwidth":
            continue
        m, e, unit = num(r.get("measured")), num(r.get("expected")), r.get("unit", "GB/s")
        text = (f"{r.get('method', '')}: {100 * num(r.get('ratio')):.0f} % ({m:.2f} of {e:.2f} {unit})" if e > 0
                else f"{r.get('method', '')}: {figure(m, unit)} (no expected figure)")
        heads.append(f'<li class="v-{css(verdict_of(r))}">{html.escape(text)}</li>')
    if params.get("reference_gbps"):
        heads.append(f'<li class="ref">host memory reference: {num(params["reference_gbps"]):.2f} GB/s</li>')
    if heads:
        out.append('<p class="headline-title">headline figures (bandwidth as % of expected):</p>'
                   f'<ul class="headline">{"".join(heads)}</ul>')
    rows = []
    for r in res:
        v = verdict_of(r)
        m, e, unit = num(r.get("measured")), num(r.get("expected")), r.get("unit", "")
        cells = [r.get("case", ""), r.get("method", "")]
        tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        tds += f'<td class="verdict v-{css(v)}">{html.escape(v)}</td>'
        tds += f'<td class="num">{html.escape(figure(m, unit) if (m or e) else "-")}</td>'
        tds += f'<td class="num">{html.escape(figure(e, unit) if e > 0 else "-")}</td>'
        pct = f"{100 * num(r.get('ratio')):.0f} %" if e > 0 else "-"
        tds += f'<td class="num">{html.escape(pct)}</td>'
        tds += f"<td>{html.escape(str(r.get('why') or r.get('reason') or ''))}</td>"
        rows.append(f'<tr class="row v-{css(v)}">{tds}</tr>')
    head = "".join(f"<th>{c}</th>" for c in ("check", "where", "verdict", "measured", "expected",
                                              "% of expected", "why"))
    out.append(f'<table class="verdicts"><tr>{head}</tr>{"".join(rows)}</table></section>')
    return "".join(out), len(rows)


def wrong_cell(r):
    """--check every: "26 of 2000 (1.3 %, 0.89-1.9 %)"; "-" where not checked every iteration."""
    if not isinstance(r.get("checked_iters"), int):
        return "-"
    w, n = r.get("wrong_iters", 0), r["checked_iters"]
    lo, hi = num(r.get("wrong_rate_lo")), num(r.get("wrong_rate_hi"))
    return f"{w} of {n} ({100 * w / n if n else 0:.3g} %, {100 * lo:.3g}-{100 * hi:.3g} %)"


def css(verdict):
    return {"PASS": "pass", "WARN": "warn", "FAIL": "fail"}.get(verdict, "none")


def report(out, inputs):
    docs = [(path, load(path)) for path in inputs]
    # doctor's verdicts first: what is wrong before how fast.
    top, n_verdicts = [], 0
    for path, doc in docs:
        if doc.get("command") in ("doctor", "fleet"):
            text, n = doctor_section(path, doc)
            top.append(text)
            n_verdicts += n
    parts, n_charts = [], 0
    for path, doc in docs:
        env = doc.get("env", {})
        parts.append(f"<h2>{html.escape(doc.get('command', '?'))} · {html.escape(path)}</h2>")
        parts.append(table([(k, json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in env.items()],
                           ["environment", "value"]))
        for title, fig in charts(doc):
            parts.append(f'<figure class="chart"><figcaption>{html.escape(title)}</figcaption>{svg_of(fig)}</figure>')
            n_charts += 1
        if doc.get("command") == "doctor":
            parts.append("<p>Each row's verdict, figures and reason: the verdict table at the top of the page.</p>")
            continue
        rows = [(r.get("case"), r.get("method"), r.get("src"), r.get("dst"), r.get("bytes"), r.get("status"),
                 f"{r['gbps']['median']:.3f}", f"{r['time_us']['median']:.2f}", r.get("verified"),
                 wrong_cell(r), r.get("reason") or "")
                for r in doc["results"]]
        parts.append(table(rows, ["case", "method", "src", "dst", "bytes", "status", "GB/s", "time us", "verified",
                                  "wrong iterations (95 %)", "reason"]))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>xferbench report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}figure.chart{{margin:1em 0}}
figure.chart svg{{max-width:100%;height:auto}}
td.num{{text-align:right;white-space:nowrap}}td.verdict{{font-weight:bold;text-align:center}}
.v-pass.verdict{{background:#c8e6c9;color:#1b5e20}}.v-warn.verdict{{background:#ffecb3;color:#7a5200}}
.v-fail.verdict{{background:#ffcdd2;color:#b71c1c}}.v-none.verdict{{color:#757575}}
tr.v-fail td{{background:#fff5f5}}p.verdict-count{{font-size:1.2em;font-weight:bold}}
.worst-pass{{color:#1b5e20}}.worst-warn{{color:#7a5200}}.worst-fail{{color:#b71c1c}}
ul.headline{{list-style:none;padding:0;margin:0.3em 0}}ul.headline li{{display:inline-block;margin:2px 6px 2px 0;
padding:2px 6px;border-radius:3px;font-size:12px;background:#eee}}ul.headline li.v-pass{{background:#c8e6c9}}
ul.headline li.v-warn{{background:#ffecb3}}ul.headline li.v-fail{{background:#ffcdd2}}
p.headline-title{{margin:0.5em 0 0;font-size:12px}}section.doctor{{border-bottom:2px solid #ccc;margin-bottom:1em}}</style></head>
<body data-expected-charts="{n_charts}" data-expected-verdict-rows="{n_verdicts}">
<h1>xferbench report</h1>
{''.join(top)}{''.join(parts)}
<script>
document.body.dataset.charts = String(document.querySelectorAll("figure.chart svg").length);
document.body.dataset.verdictRows = String(document.querySelectorAll("table.verdicts tr.row").length);
(function () {{
  const t = document.querySelector("table.verdicts"), f = document.querySelector("figure.chart");
  document.body.dataset.verdictsFirst = !t ? "none" :
    (!f || (t.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING)) ? "yes" : "no";
}})();
</script>
</body></html>
"""
    write_output(out, page)


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
