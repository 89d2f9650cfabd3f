"""Throughput floors from saved history: propose each level's floor as the median of its last
saved figures times a factor, and write the proposals into the matrix files in place.

Writing edits only the ``floor`` values, in place in the text: comments, order and layout stay.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import results
from .fingerprint import gpu_summary
from .matrix import Entry
from .report import columns
from .errors import GlmstackError


class CalibrateError(GlmstackError):
    pass


LOOSE = 5  # a floor more than this many times below the measured median is reported


@dataclass(frozen=True)
class Run:
    path: Path
    created: str
    machine: str  # which hardware the figures were measured on
    data: dict


@dataclass
class Proposal:
    entry: Entry
    concurrency: int
    current: float | None
    figures: list[float] = field(default_factory=list)  # oldest first
    proposed: float | None = None
    note: str = ""
    skipped: int = 0  # figures measured with another window than the level's

    @property
    def change(self) -> float | None:
        if self.current and self.proposed is not None:
            return self.proposed / self.current - 1
        return None

    @property
    def median(self) -> float | None:
        return statistics.median(self.figures) if self.figures else None

    def warnings(self) -> list[str]:
        """A floor that lies more than LOOSE times below the measured median cannot fail."""
        out = []
        med = self.median
        for what, floor in (("the floor", self.current), ("the proposed floor", self.proposed)):
            if med and floor is not None and floor * LOOSE < med:
                out.append(f"{self.entry.id} at concurrency {self.concurrency}: {what} {floor:g} lies "
                           f"{med / floor:.0f}x below the measured median {med:.1f} tok/s: this floor cannot fail")
        return out


def machine_of(data: dict) -> str:
    """Runs are only comparable on the same hardware: the GPU list, or the CPU host when none."""
    stack = data.get("stack", {})
    if stack.get("gpus"):
        return gpu_summary(stack["gpus"])
    return f"no GPU ({stack.get('hostname') or '?'})"


def history(results_dir: Path) -> list[Run]:
    """Saved runs of the results directory, oldest first. Files that are not results are skipped."""
    runs = []
    for p in sorted(Path(results_dir).glob("*.json")):
        try:
            data = results.load(str(p), Path(results_dir))
        except results.ResultsError:
            continue
        runs.append(Run(p, str(data.get("created", "")), machine_of(data), data))
    return sorted(runs, key=lambda r: (r.created, r.path.name))


def round_down(x: float) -> float:
    """Two significant digits, rounded down: floors read like 11000 or 150, not 11329.6."""
    if x <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(x)) - 1)
    v = math.floor(x / step) * step
    return float(round(v, 6))


def propose(entries: tuple[Entry, ...], runs: list[Run], *, last: int = 5, factor: float = 0.8,
            machine: str | None = None) -> list[Proposal]:
    """One proposal per throughput level of the entries. Only runs on ``machine`` count (default:
    the machine of the newest run), and only figures of levels whose test passed or measured."""
    if not 0 < factor <= 1:
        raise CalibrateError(f"the factor must be in (0, 1] (floor = median x factor), got {factor}")
    if last < 1:
        raise CalibrateError(f"the number of runs must be at least 1, got {last}")
    if machine is None and runs:
        machine = runs[-1].machine
    usable = [r for r in runs if r.machine == machine]
    out = []
    for e in entries:
        tp = e.expect.throughput
        if tp is None:
            continue
        for lv in tp.levels:
            p = Proposal(e, lv.concurrency, lv.floor)
            want = _window(tp, lv)
            figs = []  # (median, the window it was measured with, or None where the result predates them)
            for r in usable:
                fig = r.data["entries"].get(e.id, {}).get("throughput", {}).get(str(lv.concurrency))
                if fig and fig.get("median") is not None:
                    figs.append((float(fig["median"]), fig.get("window")))
            # A rate depends on its window (a 1 s window of a host-bound server reads 40% above a
            # 10 s one): figures of other windows are no history of this level. Results saved
            # before windows were recorded count only where no figure says how it was measured.
            recorded = any(w is not None for _, w in figs)
            keep = [m for m, w in figs if (_same_window(w, want) if recorded else True)]
            p.skipped = len(figs) - len(keep)
            p.figures = keep[-last:]
            if p.figures:
                p.proposed = round_down(statistics.median(p.figures) * factor)
            else:
                p.note = "no saved figure on this machine"
            out.append(p)
    return out


def _window(tp, lv) -> dict:
    """The measurement window a level asks for, with the keys the results record."""
    return {"min_seconds": lv.min_seconds or tp.min_seconds, "min_output_tokens": lv.min_output_tokens or tp.min_output_tokens,
            "input_len": tp.input_len, "output_len": tp.output_len}


def _same_window(got: dict | None, want: dict) -> bool:
    return got is not None and all(got.get(k) == v for k, v in want.items())


def table(proposals: list[Proposal], machine: str | None) -> list[str]:
    rows = [("entry", "concurrency", "floor now", "runs", "median tok/s", "proposed", "change")]
    for p in proposals:
        med = statistics.median(p.figures) if p.figures else None
        rows.append((p.entry.id, str(p.concurrency), "-" if p.current is None else f"{p.current:g}",
                     str(len(p.figures)), "-" if med is None else f"{med:.1f}",
                     "-" if p.proposed is None else f"{p.proposed:g}",
                     p.note or ("-" if p.change is None else f"{p.change:+.0%}")))
    warnings = [f"warning: {w}" for p in proposals for w in p.warnings()]
    skipped = [f"{p.entry.id} at concurrency {p.concurrency}: {p.skipped} saved figure(s) left out, measured with "
               f"another window (or before results recorded it) than the level's {_window_text(p)}"
               for p in proposals if p.skipped]
    return [f"history measured on: {machine or 'no saved runs'}"] + columns(rows) + warnings + skipped


def _window_text(p: Proposal) -> str:
    tp = p.entry.expect.throughput
    lv = next(lv for lv in tp.levels if lv.concurrency == p.concurrency)
    w = _window(tp, lv)
    return (f"({w['min_seconds']:g} s and {w['min_output_tokens']} tokens a window, "
            f"{w['input_len']} in / {w['output_len']} out)")


def write(proposals: list[Proposal]) -> list[str]:
    """Set the proposed floors in the matrix files. Returns one line per change or skip.

    Only the floor values are edited, in the text itself at the positions the YAML parser
    reports: comments, order, quoting and indentation stay exactly as they were."""
    by_file: dict[str, list[Proposal]] = {}
    for p in proposals:
        if p.proposed is not None:
            by_file.setdefault(p.entry.path, []).append(p)
    out = []
    for path, props in by_file.items():
        text = Path(path).read_text()
        edits = []  # (start, end, replacement)
        for p in props:
            level = _level_node(text, p.entry.name, p.concurrency)
            value = f"{p.proposed:g}"
            if level is None:
                out.append(f"{path}: entry {p.entry.name!r}: concurrency {p.concurrency} is not written in the entry "
                           f"itself (inherited through extends or defaults); set its floor where it is defined")
                continue
            floor = next((v for k, v in level.value if k.value == "floor"), None)
            if floor is not None:
                if floor.value == value:
                    continue
                edits.append((floor.start_mark.index, floor.end_mark.index, value))
            elif level.flow_style:  # {concurrency: 4} -> {concurrency: 4, floor: N}
                end = level.end_mark.index - 1
                edits.append((end, end, f", floor: {value}"))
            else:  # a block mapping: a line of its own under 'concurrency'
                key = next(k for k, _ in level.value if k.value == "concurrency")
                line_end = text.index("\n", key.end_mark.index) if "\n" in text[key.end_mark.index:] else len(text)
                edits.append((line_end, line_end, "\n" + " " * key.start_mark.column + f"floor: {value}"))
            out.append(f"{path}: entry {p.entry.name!r}, concurrency {p.concurrency}: floor "
                       f"{'-' if p.current is None else f'{p.current:g}'} -> {value}")
        if edits:
            for start, end, new in sorted(edits, reverse=True):
                text = text[:start] + new + text[end:]
            tmp = Path(path).with_name(f".{Path(path).name}.calibrate.tmp")
            tmp.write_text(text)
            tmp.replace(path)
    return out


def _child(node, key: str):
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v
    return None


def _level_node(text: str, name: str, concurrency: int):
    """The YAML node of an entry's own throughput level, or None when the entry does not write it."""
    root = yaml.compose(text)
    entries = _child(root, "entries")
    for e in entries.value if isinstance(entries, yaml.SequenceNode) else []:
        ident = _child(e, "id")
        if ident is None or ident.value != name:
            continue
        levels = _child(_child(_child(e, "expect"), "throughput"), "levels")
        for lv in levels.value if isinstance(levels, yaml.SequenceNode) else []:
            c = _child(lv, "concurrency")
            if c is not None and c.value == str(concurrency):
                return lv
    return None
