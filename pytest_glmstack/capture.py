"""What a server log says about CUDA-graph capture and torch.compile: which phases were captured
(decode, prefill, piecewise), which were disabled and why, and the graph breaks and recompiles
Dynamo logged (TORCH_LOGS=graph_breaks,recompiles). Log formats of several SGLang releases."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# 0.5.17+: "Capture target decode CUDA graph begin. backend=full, ..." / "... end. elapsed=0.94 s"
_BEGIN = re.compile(r"Capture (?:target )?(decode|prefill|draft\w*|target_verify) (?:CUDA|CPU) graph begin\. backend=(\w+)")
_END = re.compile(r"Capture (?:target )?(decode|prefill|draft\w*|target_verify) (?:CUDA|CPU) graph end\. elapsed=([\d.]+) s")
# older releases
_OLD_END = re.compile(r"Capture cuda graph end\. Time elapsed: ([\d.]+) s")
_OLD_PIECEWISE_END = re.compile(r"Capture piecewise CUDA graph end\. Time elapsed: ([\d.]+) s|Capture piecewise CUDA graph end")
_DISABLE = re.compile(r"Disable (decode|prefill|piecewise) CUDA graph because (.*)$")
# 0.5.17+ safety gate: "Disabling auto-selected prefill CUDA graph: only 1.12 GiB is free ..."
_DISABLING = re.compile(r"Disabling (?:auto-selected )?(decode|prefill|piecewise) CUDA graph: (.*)$")
_BATCH_GRAPH = re.compile(r"(Decode|Prefill) batch.*?cuda graph: (True|False)")
_READY = re.compile(r"The server is fired up and ready to roll")
_GRAPH_BREAK = re.compile(r"\[__graph_breaks\] Graph Break Reason: (.*)$")
_RECOMPILE = re.compile(r"\[__recompiles\] Recompiling function (\S+) in (\S+)")
_USER_FRAME = re.compile(r'\[__graph_breaks\]\s+File "([^"]+)", line (\d+), in (\S+)')


@dataclass
class Phase:
    backend: str | None = None
    begun: bool = False
    seconds: float | None = None  # set when capture ended

    @property
    def captured(self) -> bool:
        return self.seconds is not None and self.backend != "disabled"


@dataclass
class CaptureReport:
    phases: dict = field(default_factory=dict)  # name -> Phase
    disabled: dict = field(default_factory=dict)  # name -> reason from the log
    batches: dict = field(default_factory=dict)  # 'Decode'/'Prefill' -> [with graph, without]
    graph_breaks: list = field(default_factory=list)  # (after_ready, reason, frame)
    recompiles: list = field(default_factory=list)  # (after_ready, function, where)

    def captured(self, phase: str) -> bool:
        if phase == "piecewise":
            p = self.phases.get("piecewise") or Phase()
            pre = self.phases.get("prefill") or Phase()
            return p.captured or (pre.captured and pre.backend in ("tc_piecewise", "piecewise", "breakable"))
        p = self.phases.get(phase)
        return bool(p and p.captured)

    def why_not(self, phase: str) -> str:
        if phase in self.disabled:
            return f"the server disabled it: {self.disabled[phase]}"
        p = self.phases.get("prefill" if phase == "piecewise" else phase)
        if phase == "piecewise" and p and p.captured:
            return f"prefill was captured with backend={p.backend}, not a piecewise backend"
        if p and p.backend == "disabled":
            return "its backend resolved to 'disabled'"
        if p and p.begun and not p.captured:
            return "capture began but never ended"
        return "no capture of it appears in the log"


def read(text: str) -> CaptureReport:
    r = CaptureReport()
    after_ready = False
    last_break = None
    for line in text.splitlines():
        if _READY.search(line):
            after_ready = True
        m = _BEGIN.search(line)
        if m:
            ph = r.phases.setdefault(m.group(1), Phase())
            ph.begun, ph.backend = True, m.group(2)
            continue
        m = _END.search(line)
        if m:
            r.phases.setdefault(m.group(1), Phase()).seconds = float(m.group(2))
            continue
        m = _OLD_PIECEWISE_END.search(line)
        if m:
            r.phases["piecewise"] = Phase("piecewise", True, float(m.group(1)) if m.group(1) else 0.0)
            continue
        m = _OLD_END.search(line)
        if m:
            r.phases["decode"] = Phase("full", True, float(m.group(1)))
            continue
        m = _DISABLE.search(line) or _DISABLING.search(line)
        if m:
            r.disabled[m.group(1)] = m.group(2).strip()
            continue
        m = _BATCH_GRAPH.search(line)
        if m:
            counts = r.batches.setdefault(m.group(1), [0, 0])
            counts[0 if m.group(2) == "True" else 1] += 1
            continue
        m = _GRAPH_BREAK.search(line)
        if m:
            last_break = [after_ready, m.group(1).strip(), None]
            r.graph_breaks.append(last_break)
            continue
        m = _USER_FRAME.search(line)
        if m and last_break is not None:
            # The user-code traceback runs outermost first: keep the innermost frame.
            last_break[2] = f"{m.group(1)}:{m.group(2)} in {m.group(3)}"
            continue
        m = _RECOMPILE.search(line)
        if m:
            r.recompiles.append((after_ready, m.group(1), m.group(2)))
    r.graph_breaks = [tuple(b) for b in r.graph_breaks]
    return r


def problems(report: CaptureReport, phases, clean_compile: bool) -> list[str]:
    """What the log shows against ``expect: capture`` and ``clean_compile``."""
    out = []
    for ph in phases:
        if not report.captured(ph):
            out.append(f"{ph} was not captured as a CUDA graph: {report.why_not(ph)}")
    if "decode" in phases and report.batches.get("Decode", [0, 0])[1]:
        with_g, without = report.batches["Decode"]
        out.append(f"{without} decode batch(es) ran without a CUDA graph (cuda graph: False), {with_g} with one")
    if clean_compile:
        late_breaks = [b for b in report.graph_breaks if b[0]]
        late_recompiles = [r for r in report.recompiles if r[0]]
        for _, reason, frame in late_breaks[:10]:
            out.append(f"graph break after warm-up: {reason}" + (f" at {frame}" if frame else ""))
        for _, fn, where in late_recompiles[:10]:
            out.append(f"recompile after warm-up: {fn} in {where}")
    return out
