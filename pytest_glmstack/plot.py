"""Throughput against concurrency per entry, the saved baseline overlaid: one PNG per results file."""

from __future__ import annotations

from pathlib import Path

from .errors import GlmstackError


class PlotUnavailable(GlmstackError):
    pass


def _series(data: dict | None, entry_id: str) -> list[tuple[int, dict]]:
    if not data:
        return []
    levels = data.get("entries", {}).get(entry_id, {}).get("throughput", {})
    return sorted((int(c), v) for c, v in levels.items() if v.get("median") is not None)


def throughput(results: dict, path: Path, baseline: dict | None = None) -> Path | None:
    """Write the plot to ``path``; None when no entry has throughput figures. Raises
    PlotUnavailable when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure  # no pyplot: no global state, no display needed
    except ImportError:
        raise PlotUnavailable("the throughput plot needs matplotlib: pip install 'pytest-glmstack[plot]'") from None
    ids = [e for e in sorted(results.get("entries", {})) if _series(results, e)]
    if not ids:
        return None
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for i, eid in enumerate(ids):
        color = f"C{i % 10}"
        now = _series(results, eid)
        xs = [c for c, _ in now]
        ys = [v["median"] for _, v in now]
        # The spread of the repeats as an error bar: the noise the figure carries.
        lo = [v["median"] - min((r["output_throughput"] for r in v.get("runs", [])), default=v["median"]) for _, v in now]
        hi = [max((r["output_throughput"] for r in v.get("runs", [])), default=v["median"]) - v["median"] for _, v in now]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", color=color, capsize=3, label=eid)
        floors = [(c, v["floor"]) for c, v in now if v.get("floor") is not None]
        if floors:
            ax.scatter(*zip(*floors), marker="v", color=color, alpha=0.6)
        ab = [(c, v["ab"]) for c, v in now if v.get("ab", {}).get("pairs")]
        if ab:
            # --glmstack-ab: B's pair medians beside A's, measured interleaved (dotted)
            import statistics

            ax.plot([c for c, _ in ab], [statistics.median(p[1] for p in a["pairs"]) for _, a in ab], linestyle=":",
                    marker="s", color=color, alpha=0.8, label=f"{eid} (B, A/B)")
        base = _series(baseline, eid)
        if base:
            ax.plot([c for c, _ in base], [v["median"] for _, v in base], linestyle="--", marker="x", color=color,
                    alpha=0.7, label=f"{eid} (baseline)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent requests")
    ax.set_ylabel("output tok/s (median)")
    stack = results.get("stack", {})
    ax.set_title(f"torch {stack.get('torch') or '-'}, flashinfer {stack.get('flashinfer') or '-'}, "
                 f"sglang {stack.get('sglang') or '-'}  (v: floor, dashed: baseline, dotted: B of --glmstack-ab)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
