"""`--init`: what a run starts from, an engine checkpoint or a Hugging Face model folder.

- An engine checkpoint (a `step-NNNNNN` folder with model.safetensors and meta.json, or a run
  or checkpoints folder holding some; the newest complete one is taken): every weight,
  decoder included when the recipe says `--flow-decoder-init inherit`, and the architecture
  its meta.json records; its stats.json is the run's stats unless `--recompute-stats`.
- A Hugging Face model folder, read locally with `from_pretrained` (never a hub download):
  `config.json` with `model.safetensors` or a sharded `model.safetensors.index.json`. Its
  `model_type` says which part it is: `siglip_vision_model` or `siglip` (a full SigLIP: its
  vision tower) for the vision encoder, `qwen2` (a Qwen2Model or Qwen2ForCausalLM) for the
  backbone. A folder holding `vision/` and `backbone/` sub-folders of that kind gives both.
  The parts keep their own architecture (hidden sizes, layers, the vision encoder's image
  and patch size: the frames are decoded at its image size); the projections, the action
  head and the flow decoder are new (the recipe's model size sets the decoder's width), so
  `--flow-decoder-init` defaults to `random` for it and `inherit` is refused. The weights are
  cast to fp32 at load (released ones are often bf16; the engine's parameters are fp32 and
  bf16 is its autocast), and a backbone whose vocabulary is smaller than the engine's action
  tokens (256 bins + BOS) has its embeddings resized to fit (`TOKENS`).

`describe` validates without torch (one line per problem, InitError); `vision_backbone`
builds the parts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

VISION_TYPES = ("siglip_vision_model", "siglip")
BACKBONE_TYPES = ("qwen2",)
WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
FULL_HASH_BYTES = 256 << 20  # weight files up to this size are hashed whole


class InitError(ValueError):
    """--init names something that is not a starting point of this engine; one line."""


@dataclass(frozen=True)
class Init:
    kind: str  # "engine" or "hf"
    path: Path  # the checkpoint folder, or the HF folder given
    parts: dict[str, Path] = field(default_factory=dict)  # hf: "vision"/"backbone" -> folder
    meta: dict = field(default_factory=dict)  # engine: the checkpoint's meta.json

    def architecture(self) -> dict[str, dict]:
        """The configs the init fixes: {"vision": config dict, "backbone": config dict}.

        Empty: the recipe's model size decides.
        """
        if self.kind == "engine":
            return dict(self.meta.get("architecture") or {})
        return {name: _config(folder) for name, folder in self.parts.items()}

    def image_size(self, default: int) -> int:
        vision = self.architecture().get("vision")
        if not vision:
            return default
        vision = vision.get("vision_config", vision)  # a full SigLIP's config nests its tower
        return int(vision.get("image_size", default))

    def identity(self) -> dict[str, object]:
        """For the meta record: the kind, the folder and a sha256 of the weight files."""
        folders = [self.path] if self.kind == "engine" else list(self.parts.values())
        h = hashlib.sha256()
        files = []
        for folder in folders:
            for p in sorted(folder.iterdir()):
                if p.is_file() and (
                    p.suffix == ".safetensors" or p.name in WEIGHTS or p.name == "config.json"
                ):
                    files.append(p)
                    h.update(p.name.encode() + b"\0" + _file_digest(p))
        return {
            "kind": self.kind,
            "path": str(self.path),
            "sha256": h.hexdigest(),
            "files": len(files),
            **({"parts": {k: str(v) for k, v in self.parts.items()}} if self.parts else {}),
        }


def _file_digest(path: Path) -> bytes:
    size = path.stat().st_size
    if size <= FULL_HASH_BYTES:
        return hashlib.sha256(path.read_bytes()).digest()
    with open(path, "rb") as f:  # a multi-GB shard: its size, first and last MiB
        head = f.read(1 << 20)
        f.seek(-(1 << 20), 2)
        tail = f.read()
    return hashlib.sha256(str(size).encode() + head + tail).digest()


def _config(folder: Path) -> dict:
    try:
        doc = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise InitError(f"--init {folder}: config.json unreadable ({exc})") from None
    if not isinstance(doc, dict):
        raise InitError(f"--init {folder}: config.json is not a JSON object")
    return doc


def _hf_part(folder: Path) -> str:
    """Which part an HF folder is, or InitError."""
    doc = _config(folder)
    kind = doc.get("model_type")
    if not any((folder / w).is_file() for w in WEIGHTS):
        raise InitError(
            f"--init {folder}: config.json but no weights (expected "
            f"{' or '.join(WEIGHTS)}: safetensors, written by save_pretrained)"
        )
    if kind in VISION_TYPES:
        return "vision"
    if kind in BACKBONE_TYPES:
        return "backbone"
    raise InitError(
        f"--init {folder}: model_type {kind!r} (expected a vision encoder: "
        f"{', '.join(VISION_TYPES)}, or a backbone: {', '.join(BACKBONE_TYPES)})"
    )


def describe(value: str) -> Init | None:
    """The starting point `--init VALUE` names (None for ""), or InitError."""
    if not value:
        return None
    path = Path(value)
    if not path.is_dir():
        raise InitError(
            f"--init {value}: no such folder (expected an engine checkpoint or a "
            "Hugging Face model folder)"
        )
    if (path / "config.json").is_file():
        part = _hf_part(path)
        return Init("hf", path, {part: path})
    subs = {
        name: path / name
        for name in ("vision", "backbone")
        if (path / name / "config.json").is_file()
    }
    if subs:
        parts = {}
        for name, folder in subs.items():
            held = _hf_part(folder)
            if held != name:
                raise InitError(f"--init {folder}: holds a {held} model (expected a {name})")
            parts[name] = folder
        return Init("hf", path, parts)
    from .checkpoint import latest

    found = (
        path
        if (path / "model.safetensors").is_file() and (path / "meta.json").is_file()
        else next((c for c in (latest(path / "checkpoints"), latest(path)) if c is not None), None)
    )
    if found is None:
        raise InitError(
            f"--init {value}: expected an engine checkpoint (step-NNNNNN with "
            "model.safetensors and meta.json, or a run folder holding one) or a "
            "Hugging Face model folder (config.json + safetensors)"
        )
    try:
        meta = json.loads((found / "meta.json").read_text())
    except (OSError, ValueError) as exc:
        raise InitError(f"--init {found}: meta.json unreadable ({exc})") from None
    return Init("engine", found, meta=meta if isinstance(meta, dict) else {})


TOKENS = 257  # the engine's action tokens: 256 bins and BOS (engine/model.py)


def vision_backbone(init: Init | None):
    """(vision, backbone) modules loaded with from_pretrained from an HF init.

    None for a part it does not give; local files only, SDPA attention, fp32 weights
    whatever dtype they were saved in. A backbone vocabulary under TOKENS is resized to
    TOKENS: the engine's tokens are its own action bins, learned anew on any vocabulary.
    """
    if init is None or init.kind != "hf":
        return None, None
    import torch
    from transformers import PreTrainedModel, Qwen2Model, SiglipVisionModel

    out: dict[str, PreTrainedModel | None] = {}
    for name, cls in (("vision", SiglipVisionModel), ("backbone", Qwen2Model)):
        folder = init.parts.get(name)
        if folder is None:
            out[name] = None
            continue
        try:
            out[name] = cls.from_pretrained(
                str(folder),
                local_files_only=True,
                attn_implementation="sdpa",
                dtype=torch.float32,  # a released bf16 checkpoint: the engine's fp32
            )
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            raise InitError(f"--init {folder}: from_pretrained failed ({first.strip()})") from None
    backbone = out["backbone"]
    if backbone is not None and int(backbone.config.vocab_size) < TOKENS:
        backbone.resize_token_embeddings(TOKENS, mean_resizing=False)
    return out["vision"], backbone


def resized_note(init: Init | None) -> str:
    """What the start event says of a backbone vocabulary resized to TOKENS ("" if none)."""
    folder = init.parts.get("backbone") if init is not None and init.kind == "hf" else None
    if folder is None:
        return ""
    vocab = _config(folder).get("vocab_size")
    if isinstance(vocab, int) and vocab < TOKENS:
        return f"; backbone vocabulary {vocab} resized to {TOKENS} (the action tokens)"
    return ""
