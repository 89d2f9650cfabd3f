"""pytest-glmstack: integration tests for LLM serving stacks (SGLang, torch, FlashInfer, NCCL)."""

__version__ = "0.1.0"
