"""Built-in models: small random-weight checkpoints made offline, for tests without downloads.

``builtin:tiny-llama`` is a 2-layer Llama (vocab 512, hidden 128) with a byte-level BPE tokenizer
trained on a few sentences. Only config and tokenizer are written: servers start it with
``--load-format dummy`` (random weights). It is made by the server's own Python (which has
``transformers``), once per cache directory.

``builtin:tiny-llama-nvfp4`` is the same model with the architecture of a proxy
(:mod:`pytest_glmstack.proxies`): its MLPs quantize their input with FlashInfer's NVFP4 kernel.
A proxy's settings follow its name, ``builtin:tiny-llama-nvfp4?fp4_call=custom_op``; they are
written into its ``config.json``, one model directory per combination.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from . import proxies

BUILTIN_PREFIX = "builtin:"
BUILTINS = {"tiny-llama": "a 2-layer random-weight Llama with a 512-token BPE tokenizer",
            **{name: p.description for name, p in proxies.PROXIES.items()}}


def is_builtin(model: str) -> bool:
    return model.startswith(BUILTIN_PREFIX)


def ensure(model: str, cache_dir: Path, python: str = sys.executable, timeout: float = 300) -> Path:
    """The directory of a built-in model, made if missing. Safe across concurrent processes.

    Raises ValueError for an unknown built-in or a bad proxy setting (naming the allowed ones)."""
    name = _dir_name(model)
    target = cache_dir / name
    cache_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache_dir / f"{name}.lock"), timeout=timeout):
        if (target / "config.json").exists() and (target / "tokenizer.json").exists():
            return target
        from .interpreters import env_for

        with env_for(python) as env:  # another interpreter imports this package through a link
            r = subprocess.run([python, "-m", "pytest_glmstack.models", model[len(BUILTIN_PREFIX):], str(target)],
                               capture_output=True, text=True, timeout=timeout, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"could not make {model} with {python}: {r.stderr.strip()[-2000:]}")
    return target


def _dir_name(model: str) -> str:
    """The cache directory name of a built-in model string; ValueError when it names none."""
    name = model[len(BUILTIN_PREFIX):]
    if name in BUILTINS and name not in proxies.PROXIES:
        return name
    if proxies.is_builtin_proxy(model):
        proxy, values = proxies.parse(model)  # ProxyError (a ValueError) names the allowed values
        return proxies.model_dir_name(proxy, values)
    problem = proxies.proxy_problem(model)
    raise ValueError(problem or f"unknown built-in model {model!r}; built-ins: "
                     + ", ".join(BUILTIN_PREFIX + k for k in BUILTINS))


def config_fields(model: str) -> dict:
    """What the config.json of a built-in model holds beyond tiny-llama's."""
    _dir_name(model)
    if proxies.is_builtin_proxy(model):
        return proxies.config_fields(*proxies.parse(model))
    return {}


def _write_tiny_llama(out: Path, extra: dict | None = None):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    tmp = out.with_name(out.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    LlamaConfig(
        vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        bos_token_id=0, eos_token_id=1, pad_token_id=1, architectures=["LlamaForCausalLM"],
    ).save_pretrained(tmp)
    if extra:
        cfg = tmp / "config.json"
        cfg.write_text(json.dumps({**json.loads(cfg.read_text()), **extra}, indent=2, sort_keys=True) + "\n")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    corpus = [
        "The quick brown fox jumps over the lazy dog.",
        "SGLang serves large language models with CUDA graphs and torch.compile.",
        "FlashInfer provides attention kernels; NCCL moves tensors between GPUs.",
    ] * 20
    tok.train_from_iterator(corpus, trainer)
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(tmp)
    tmp.rename(out)


if __name__ == "__main__":
    name, target = sys.argv[1], Path(sys.argv[2])
    try:
        fields = config_fields(BUILTIN_PREFIX + name)
    except ValueError as e:
        sys.exit(str(e))
    _write_tiny_llama(target, fields)
