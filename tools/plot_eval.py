#!/usr/bin/python3
"""plot_eval.py EVAL.json OUT.png [--title T] [--table OUT.md]

Draws the figures of one `infill eval --json` run: for each kind of cut
(rest of line, whole line, block, all) the exact match, edit similarity,
parse share and no-answer share of the `line`, `ast` and `full` configurations side by side,
and the latency (p50 with the p90 as a whisker) per configuration.
With --table, also writes the run's Markdown table.

Needs Debian's python3-matplotlib: run it with /usr/bin/python3.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KINDS = ["rest_of_line", "line", "block", "all"]
KIND_LABEL = {"rest_of_line": "rest of line", "line": "whole line", "block": "block", "all": "all"}
MODE_COLOR = {"line": "#9e9e9e", "ast": "#5b8fd6", "full": "#d9772b"}
METRICS = [("exact", "exact match"), ("edit_sim", "edit similarity"),
           ("parse", "completions that parse"), ("no_answer", "no answer (lower is better)")]


def table(run):
    head = ("| mode | kind | cases | exact | edit sim | answered | parses | no new err "
            "| no answer | p50 ms | p90 ms | cpu p50 ms |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    rows = []
    for r in run["rows"]:
        kind = "**all**" if r["kind"] == "all" else r["kind"]
        parse = "-" if r["parse"] is None else "%.0f%%" % (100 * r["parse"])
        no_new = "-" if r.get("no_new_errors") is None else "%.0f%%" % (100 * r["no_new_errors"])
        rows.append("| %s | %s | %d | %.1f%% | %.3f | %.3f | %s | %s | %.1f%% | %.0f | %.0f | %.0f |"
                    % (r["mode"], kind, r["cases"], 100 * r["exact"], r["edit_sim"],
                       r.get("edit_sim_answered", 0), parse,
                       no_new, 100 * r["no_answer"], r["p50_ms"], r["p90_ms"],
                       r.get("cpu_p50_ms", 0)))
    return head + "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("png")
    ap.add_argument("--title", default=None)
    ap.add_argument("--table", default=None)
    a = ap.parse_args()
    with open(a.json) if a.json != "-" else sys.stdin as f:
        run = json.load(f)
    modes = run["modes"]
    rows = {(r["mode"], r["kind"]): r for r in run["rows"]}

    fig, axes = plt.subplots(1, len(METRICS) + 1, figsize=(4.2 * (len(METRICS) + 1), 3.8))
    width = 0.8 / max(1, len(modes))
    for ax, (key, label) in zip(axes, METRICS):
        for i, m in enumerate(modes):
            xs, ys = [], []
            for k, kind in enumerate(KINDS):
                r = rows.get((m, kind))
                if r is None or r.get(key) is None:
                    continue
                xs.append(k + (i - (len(modes) - 1) / 2) * width)
                ys.append(r[key])
            bars = ax.bar(xs, ys, width, label=m, color=MODE_COLOR.get(m))
            for b, y in zip(bars, ys):
                ax.text(b.get_x() + b.get_width() / 2, y, ("%.1f%%" % (100 * y)) if key == "exact" else "%.2f" % y,
                        ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(KINDS)))
        ax.set_xticklabels([KIND_LABEL[k] for k in KINDS], fontsize=8)
        # exact match is a few percent at most with small models: its own scale
        top = max([r.get(key) or 0 for r in run["rows"]] + [0.01])
        ax.set_ylim(0, 1.08 if key != "exact" else min(1.08, top * 1.25))
        ax.set_title(label, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(fontsize=8, loc="upper right")

    ax = axes[-1]
    for i, m in enumerate(modes):
        r = rows.get((m, "all"))
        if r is None:
            continue
        ax.bar(i, r["p50_ms"], 0.6, color=MODE_COLOR.get(m),
               yerr=[[0], [max(0.0, r["p90_ms"] - r["p50_ms"])]], capsize=4)
        if r.get("cpu_p50_ms") is not None:
            ax.plot([i - 0.3, i + 0.3], [r["cpu_p50_ms"]] * 2, color="black", lw=1.5)
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels(modes)
    ax.set_title("latency ms (p50, p90 whisker;\nblack line: CPU time p50)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)

    title = a.title or "infill eval: %d cases, seed %d" % (run["cases"], run["seed"])
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
