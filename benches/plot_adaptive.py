#!/usr/bin/env python3
"""Plot the adaptive throttling experiment of benches/run.py (--only adaptive).

    plot_adaptive.py RESULTS.json OUT.png

RESULTS.json: {"rate": runs a second, "k": K, "window_s": seconds,
"scenarios": [{"title": ..., "variants": {label: {"seconds": [[requests,
accepts], ...]}}}]}. One panel per scenario: the requests the backend
received each second under each variant (a 5-second moving average, on a
scale logarithmic above 1 and linear below), and K times what it
accepted under the retry budget with adaptive throttling: the SRE book's
expectation for that line. Needs matplotlib (run.py installs it in a
virtual environment under target/).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

COLORS = {
    "no guard": "#999999",
    "retry budget": "#1f77b4",
    "adaptive": "#2ca02c",
    "retry budget + adaptive": "#d62728",
    "adaptive, -n 1": "#9467bd",
}
BOTH = "retry budget + adaptive"


def smooth(values, width=5):
    """A centred moving average over `width` seconds (the per-second counts
    of a few dozen requests are noisy)."""
    out = []
    for i in range(len(values)):
        part = values[max(0, i - width // 2): i + width // 2 + 1]
        out.append(sum(part) / len(part))
    return out


def main():
    results = json.load(open(sys.argv[1]))
    scenarios = results["scenarios"]
    fig, axes = plt.subplots(len(scenarios), 1, figsize=(9, 3.2 * len(scenarios) + 0.8), sharex=True)
    if len(scenarios) == 1:
        axes = [axes]
    k = results["k"]
    for ax, scenario in zip(axes, scenarios):
        for label, variant in scenario["variants"].items():
            requests = [s[0] for s in variant["seconds"]]
            ax.plot(smooth(requests), label=label, color=COLORS.get(label), linewidth=1.6)
        both = scenario["variants"].get(BOTH)
        if both:
            expected = [k * s[1] for s in both["seconds"]]
            ax.plot(smooth(expected), label=f"K x accepted ({BOTH}): the SRE expectation", color=COLORS[BOTH], linewidth=1.2, linestyle="--")
        ax.axvspan(0, results["window_s"], color="#eeeeee", zorder=0)
        ax.set_title(scenario["title"], fontsize=10)
        ax.set_ylabel("backend requests / s")
        # Logarithmic above 1, linear below: zero stays on the chart.
        ax.set_yscale("symlog", linthresh=1, linscale=0.6)
        ax.set_ylim(0, 100)
        ax.yaxis.set_major_locator(FixedLocator([0, 0.5, 1, 2, 5, 10, 20, 50, 100]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(f"seconds ({results['rate']} runs started a second, two hosts, one redis-server; grey: the first window)")
    fig.suptitle(
        f"retry --circuit-mode adaptive (K {results['k']}, --circuit-window {results['window_s']}s): the load on a backend that accepts only part of it",
        fontsize=11,
    )
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
