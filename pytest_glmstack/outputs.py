"""Greedy outputs of a server on a fixed set of prompts, recorded once and compared: a flag that
only promises speed must not change what the model generates."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

# Token ids below 500, so every model with a vocabulary of 512 or more accepts them; several
# lengths, so prefill and decode paths of different shapes are exercised.
PROMPTS: tuple[tuple[int, ...], ...] = (
    (5, 6, 7, 8),
    tuple(range(10, 42)),
    tuple((i * 37) % 480 + 10 for i in range(96)),
    tuple((i * 11) % 300 + 100 for i in range(200)),
)
MAX_NEW_TOKENS = 16


def collect(server, prompts=PROMPTS, max_new_tokens: int = MAX_NEW_TOKENS) -> list[dict]:
    """Greedy generations (temperature 0, EOS ignored) with the logprobs of the chosen tokens."""
    out = []
    for p in prompts:
        r = server.generate(list(p), max_new_tokens=max_new_tokens, return_logprob=True)
        lps = r.get("meta_info", {}).get("output_token_logprobs") or []
        out.append({"prompt": list(p), "output_ids": r["output_ids"],
                    "logprobs": [x[0] if isinstance(x, (list, tuple)) else x for x in lps]})
    return out


@dataclass(frozen=True)
class Divergence:
    prompt: int  # index into the prompts
    position: int  # first generated position that differs
    expected: int | None
    got: int | None
    prompt_len: int
    max_logprob_delta: float | None = None

    def text(self, ref_id: str) -> str:
        s = (f"prompt #{self.prompt} ({self.prompt_len} tokens) diverges from {ref_id} at generated position "
             f"{self.position}: expected token {self.expected}, got {self.got}")
        if self.max_logprob_delta is not None:
            s += f" (max |logprob delta| before it: {self.max_logprob_delta:.4f})"
        return s


def compare(reference: list[dict], got: list[dict]) -> Divergence | None:
    """The first position where the greedy tokens differ, or None when they are identical."""
    for i, (r, g) in enumerate(zip(reference, got)):
        if r["prompt"] != g["prompt"]:
            raise ValueError(f"prompt #{i} differs between the two recordings; record both with the same prompts")
        a, b = r["output_ids"], g["output_ids"]
        for pos in range(max(len(a), len(b))):
            x = a[pos] if pos < len(a) else None
            y = b[pos] if pos < len(b) else None
            if x != y:
                deltas = [abs(p - q) for p, q in zip(r.get("logprobs", [])[:pos], g.get("logprobs", [])[:pos])
                          if p is not None and q is not None]
                return Divergence(i, pos, x, y, len(r["prompt"]), max(deltas) if deltas else None)
    if len(reference) != len(got):
        return Divergence(min(len(reference), len(got)), 0, None, None, 0)
    return None


@dataclass(frozen=True)
class Agreement:
    """How two recordings agree when bitwise equality is not promised."""

    divergent: int  # prompts whose tokens differ somewhere
    prompts: int
    max_logprob_delta: float | None  # over the positions where both generated the same tokens
    first: Divergence | None

    @property
    def divergent_share(self) -> float:
        return self.divergent / self.prompts if self.prompts else 0.0

    def within(self, max_logprob_delta: float | None, max_divergent_share: float | None) -> list[str]:
        """What exceeds the tolerance (empty when within it)."""
        out = []
        if max_divergent_share is not None and self.divergent_share > max_divergent_share:
            out.append(f"{self.divergent} of {self.prompts} prompts diverge ({self.divergent_share:.0%} > "
                       f"{max_divergent_share:.0%})")
        if max_logprob_delta is not None and self.max_logprob_delta is not None \
                and self.max_logprob_delta > max_logprob_delta:
            out.append(f"max |logprob delta| {self.max_logprob_delta:.4f} > {max_logprob_delta:g}")
        return out


def agreement(reference: list[dict], got: list[dict]) -> Agreement:
    """Per prompt: whether the tokens diverge, and the largest logprob difference over the
    positions before the first divergence."""
    divergent, deltas, first = 0, [], None
    for i, (r, g) in enumerate(zip(reference, got)):
        d = compare([r], [g])
        upto = d.position if d is not None else min(len(r["output_ids"]), len(g["output_ids"]))
        deltas += [abs(p - q) for p, q in zip(r.get("logprobs", [])[:upto], g.get("logprobs", [])[:upto])
                   if p is not None and q is not None]
        if d is not None:
            divergent += 1
            first = first or Divergence(i, d.position, d.expected, d.got, d.prompt_len, d.max_logprob_delta)
    return Agreement(divergent, min(len(reference), len(got)), max(deltas) if deltas else None, first)


def store_path(shared_dir: Path, entry_id: str) -> Path:
    return Path(shared_dir) / (entry_id.replace("/", "__") + ".json")


def save(shared_dir: Path, entry_id: str, outputs: list[dict]) -> Path:
    p = store_path(shared_dir, entry_id)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(outputs))
    os.replace(tmp, p)
    return p


def load(shared_dir: Path, entry_id: str) -> list[dict] | None:
    p = store_path(shared_dir, entry_id)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None
