"""Built-in models: small random-weight checkpoints made offline, for tests without downloads.

``builtin:tiny-llama`` is a 2-layer Llama (vocab 512, hidden 128) with a byte-level BPE tokenizer
trained on a few sentences. Only config and tokenizer are written: servers start it with
``--load-format dummy`` (random weights). It is made by the server's own Python (which has
``transformers``), once per cache directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from filelock import FileLock

BUILTIN_PREFIX = "builtin:"
BUILTINS = {"tiny-llama": "a 2-layer random-weight Llama with a 512-token BPE tokenizer"}


def is_builtin(model: str) -> bool:
    return model.startswith(BUILTIN_PREFIX)


def ensure(model: str, cache_dir: Path, python: str = sys.executable, timeout: float = 300) -> Path:
    """The directory of a built-in model, made if missing. Safe across concurrent processes."""
    name = model[len(BUILTIN_PREFIX):]
    if name not in BUILTINS:
        raise ValueError(f"unknown built-in model {model!r}; built-ins: "
                         + ", ".join(BUILTIN_PREFIX + k for k in BUILTINS))
    target = cache_dir / name
    cache_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache_dir / f"{name}.lock"), timeout=timeout):
        if (target / "config.json").exists() and (target / "tokenizer.json").exists():
            return target
        r = subprocess.run([python, "-m", "pytest_glmstack.models", name, str(target)],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"could not make {model} with {python}: {r.stderr.strip()[-2000:]}")
    return target


def _write_tiny_llama(out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    tmp = out.with_name(out.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    LlamaConfig(
        vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        bos_token_id=0, eos_token_id=1, pad_token_id=1, architectures=["LlamaForCausalLM"],
    ).save_pretrained(tmp)
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
    if name != "tiny-llama":
        sys.exit(f"unknown built-in model {name!r}")
    _write_tiny_llama(target)
