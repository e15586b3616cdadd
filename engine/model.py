"""The policy: SigLIP vision encoder + Qwen2 prefix-LM backbone + flow-matching decoder.

Sequence: [16 image tokens per camera | the task's language tokens | 1 state token |
BOS + 47 action tokens]; with `history` H, the frames and states of the H past steps come
before the current ones, each marked with a learned step embedding. Each
camera's frame is encoded by the same vision encoder, its tokens projected and marked with
a learned camera embedding (so the backbone can tell the cameras apart), and the cameras'
tokens concatenated in the corpus's camera order. The task text (engine/text.py) is
embedded by the backbone's own token embedding; its padding is masked out of attention and
of the flow decoder's pooling. The prefix (images + text + state) attends bidirectionally;
action tokens are causal (prefix-LM). The flow decoder is conditioned on
the prefix hidden states only, so it never sees the teacher-forced action tokens.
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from transformers import (  # noqa: E402
    Qwen2Config,
    Qwen2Model,
    SiglipVisionConfig,
    SiglipVisionModel,
)

from .corpus import CHUNK  # noqa: E402
from .pipeline import BINS  # noqa: E402
from .synthetic import IMAGE_SIZE, MOTORS  # noqa: E402
from .text import VOCAB  # noqa: E402

SIZES = {
    "tiny": {
        "v_hidden": 32,
        "v_layers": 1,
        "v_heads": 2,
        "hidden": 64,
        "layers": 2,
        "heads": 2,
        "kv_heads": 1,
        "inter": 128,
        "flow": 128,
    },
    # ~0.3M params, sequence 65 tokens: ~0.5 CPU-seconds per batch-96 step, so the
    # 1000-step recipe stays under 12 minutes on two cores even when they are shared.
    "small": {
        "v_hidden": 48,
        "v_layers": 1,
        "v_heads": 4,
        "hidden": 64,
        "layers": 3,
        "heads": 4,
        "kv_heads": 2,
        "inter": 192,
        "flow": 160,
    },
    "base": {
        "v_hidden": 384,
        "v_layers": 6,
        "v_heads": 6,
        "hidden": 512,
        "layers": 8,
        "heads": 8,
        "kv_heads": 4,
        "inter": 1536,
        "flow": 1024,
    },
    # ~300M params (a SigLIP-base-sized vision encoder, an 18-layer 1024-wide Qwen2): a GPU's
    # size, meant for --precision bf16 and --activation-checkpointing (docs/performance.md)
    "large": {
        "v_hidden": 768,
        "v_layers": 12,
        "v_heads": 12,
        "hidden": 1024,
        "layers": 18,
        "heads": 16,
        "kv_heads": 4,
        "inter": 2816,
        "flow": 1024,
    },
}
PATCH = 8
EULER_STEPS = 10
BOS = BINS


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, device=t.device, dtype=t.dtype) / half)
    args = t[..., None] * freqs * 1000.0
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class FlowDecoder(nn.Module):
    """Predicts the flow velocity of a whole action chunk from (x_t, t, context)."""

    def __init__(self, ctx_dim: int, width: int, chunk: int = CHUNK, motors: int = MOTORS) -> None:
        super().__init__()
        self.chunk, self.motors = chunk, motors
        self.t_dim = 64
        self.ctx = nn.Sequential(nn.Linear(2 * ctx_dim, width), nn.SiLU())
        self.net = nn.Sequential(
            nn.Linear(chunk * motors + self.t_dim + width, width),
            nn.SiLU(),
            nn.Linear(width, width),
            nn.SiLU(),
            nn.Linear(width, chunk * motors),
        )

    def context(
        self, prefix_hidden: torch.Tensor, keep: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The prefix's mean and its last (state) token.

        The mean is over the positions `keep` marks (default: all).
        """
        if keep is None:
            mean = prefix_hidden.mean(dim=1)
        else:
            w = keep[..., None].to(prefix_hidden.dtype)
            mean = (prefix_hidden * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)
        pooled = torch.cat([mean, prefix_hidden[:, -1]], dim=-1)
        return self.ctx(pooled)

    def forward(self, x_t: torch.Tensor, t: torch.Tensor, ctx: torch.Tensor) -> torch.Tensor:
        """x_t (..., chunk, motors), t (...), ctx broadcastable to (..., width)."""
        lead = x_t.shape[:-2]
        feats = torch.cat(
            [
                x_t.reshape(*lead, -1),
                timestep_embedding(t, self.t_dim),
                ctx.expand(*lead, ctx.shape[-1]),
            ],
            dim=-1,
        )
        return self.net(feats).reshape(*lead, self.chunk, self.motors)


class Policy(nn.Module):
    """The policy: `chunk` x `motors` actions per prediction and a `state_dim` state.

    The sizes come from the dataset's info.json (the generated corpus: 8 x 6 and 6).
    """

    def __init__(
        self,
        size: str,
        chunk: int = CHUNK,
        motors: int = MOTORS,
        state_dim: int | None = None,
        vision: SiglipVisionModel | None = None,
        backbone: Qwen2Model | None = None,
        architecture: dict[str, dict] | None = None,
        cameras: int = 1,
        history: int = 0,
    ) -> None:
        """Build the policy of a size, for the data's shape, its parts given or built fresh.

        `cameras`: the frames per sample, each encoded on its own. `history`: the past
        steps (frames and states) each sample sees besides its own.
        `vision` / `backbone`: pretrained parts (engine/init.py) used as they are.
        `architecture`: the parts' configs an engine checkpoint recorded, built fresh (its
        weights are loaded after). Otherwise both come from SIZES[size]."""
        super().__init__()
        c = SIZES[size]
        self.size = size
        self.chunk, self.motors, self.cameras, self.history = chunk, motors, cameras, history
        arch = architecture or {}
        if vision is None and "vision" in arch:
            vision = SiglipVisionModel(_sdpa(SiglipVisionConfig.from_dict(arch["vision"])))
        if vision is None:
            vcfg = SiglipVisionConfig(
                hidden_size=c["v_hidden"],
                intermediate_size=4 * c["v_hidden"],
                num_hidden_layers=c["v_layers"],
                num_attention_heads=c["v_heads"],
                image_size=IMAGE_SIZE,
                patch_size=PATCH,
                vision_use_head=False,
                attention_dropout=0.0,
            )
            vcfg._attn_implementation = "sdpa"
            vision = SiglipVisionModel(vcfg)
        if getattr(vision, "head", None) is not None:
            # a pretrained pooling head: the policy reads the patch tokens, never the pooled one
            vision.head.requires_grad_(False)
        self.vision = vision
        vcfg = vision.config
        side, patch = vcfg.image_size, vcfg.patch_size  # the config's types allow pairs too
        if not isinstance(side, int) or not isinstance(patch, int):
            raise ValueError(
                f"vision encoder image_size {side!r}, patch_size {patch!r}: "
                "expected one side each (square images and patches)"
            )
        self.image_size, self.patch = side, patch
        # the image and state tokens; a batch's task text adds its own between them
        self.prefix_len = (history + 1) * (cameras * (self.image_size // self.patch) ** 2 + 1)
        seq = self.prefix_len + chunk * motors
        if backbone is None and "backbone" in arch:
            backbone = Qwen2Model(_sdpa(Qwen2Config.from_dict(arch["backbone"])))
        if backbone is None:
            bcfg = Qwen2Config(
                vocab_size=VOCAB,  # action bins, BOS, the task text's bytes
                hidden_size=c["hidden"],
                intermediate_size=c["inter"],
                num_hidden_layers=c["layers"],
                num_attention_heads=c["heads"],
                num_key_value_heads=c["kv_heads"],
                max_position_embeddings=max(128, seq),
                tie_word_embeddings=False,
                attention_dropout=0.0,
                use_sliding_window=False,
            )
            bcfg._attn_implementation = "sdpa"
            backbone = Qwen2Model(bcfg)
        self.backbone = backbone
        hidden = int(backbone.config.hidden_size)
        self.img_proj = nn.Linear(int(vcfg.hidden_size), hidden)
        self.camera_embed = nn.Embedding(cameras, hidden)
        nn.init.normal_(self.camera_embed.weight, std=0.02)
        if history:
            self.step_embed = nn.Embedding(history + 1, hidden)
            nn.init.normal_(self.step_embed.weight, std=0.02)
        self.state_proj = nn.Linear(state_dim or motors, hidden)
        self.lm_head = nn.Linear(hidden, BINS, bias=False)
        self.flow = FlowDecoder(hidden, c["flow"], chunk, motors)

    def backbone_parameters(self):
        """Everything upstream of the flow decoder's conditioning."""
        for name, p in self.named_parameters():
            if not name.startswith(("flow.", "lm_head.")):
                yield name, p

    def encode(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Backbone hidden states: (prefix (B, P, H), action positions (B, 48, H))."""
        steps = self.history + 1
        pixels = batch["images"]  # (B, steps x cameras, C, H, W); (B, C, H, W): one camera
        if pixels.dim() == 4:
            pixels = pixels[:, None]
        b, frames = pixels.shape[:2]
        if frames != steps * self.cameras:
            raise ValueError(
                f"a batch of {frames} frame(s) per sample for a policy of {self.cameras} "
                f"camera(s) x {steps} step(s)"
            )
        feats = self.vision(pixel_values=pixels.flatten(0, 1)).last_hidden_state
        feats = self.img_proj(feats).unflatten(0, (b, steps, self.cameras))  # (B, T, C, P, H)
        feats = feats + self.camera_embed.weight[None, None, :, None].to(feats.dtype)
        state = self.state_proj(batch["state"].reshape(b, steps, -1))  # (B, T, H)
        if self.history:  # which past step a frame and a state token come from
            feats = feats + self.step_embed.weight[None, :, None, None].to(feats.dtype)
            state = state + self.step_embed.weight[None].to(state.dtype)
        parts = [feats.flatten(1, 3)]
        text = batch.get("text")
        if text is not None and text.shape[1]:
            parts.append(self.backbone.embed_tokens(text))
        parts.append(state)  # the current state last: the flow decoder pools it
        prefix = torch.cat(parts, dim=1)
        tokens = batch["tokens"]
        bos = torch.full_like(tokens[:, :1], BOS)
        ar_in = self.backbone.embed_tokens(torch.cat([bos, tokens[:, :-1]], dim=1))
        x = torch.cat([prefix, ar_in], dim=1)
        p, s = prefix.shape[1], x.shape[1]
        i = torch.arange(s, device=x.device)
        allowed = ((i[None, :] < p) | (i[None, :] <= i[:, None]))[None, None]
        keep = self.prefix_keep(batch)
        if keep is not None:  # no position attends to the task text's padding
            keys = torch.cat([keep, keep.new_ones(b, s - p)], dim=1)
            allowed = allowed & keys[:, None, None, :]
        mask = allowed.expand(b, 1, s, s)
        h = self.backbone(inputs_embeds=x, attention_mask=mask).last_hidden_state
        return h[:, :p], h[:, p:]

    def prefix_keep(self, batch: dict[str, torch.Tensor]) -> torch.Tensor | None:
        """The prefix's mask, (B, prefix) bool, or None when nothing is padded.

        False at the task text's padding and at past steps before the episode's start
        (`observation_is_pad`).
        """
        text_mask, past = batch.get("text_mask"), batch.get("observation_is_pad")
        if text_mask is not None and not text_mask.shape[1]:
            text_mask = None
        if text_mask is None and past is None:
            return None
        b, steps = batch["state"].shape[0], self.history + 1
        device = batch["state"].device
        seen = ~past if past is not None else torch.ones(b, steps, dtype=torch.bool, device=device)
        per_step = self.prefix_len // steps - 1  # image tokens per step
        parts = [seen.repeat_interleave(per_step, dim=1)]
        if text_mask is not None:
            parts.append(text_mask)
        return torch.cat([*parts, seen], dim=1)

    def forward(
        self, batch: dict[str, torch.Tensor], objective: str = "joint", insulate: bool = False
    ) -> dict[str, torch.Tensor]:
        prefix_h, act_h = self.encode(batch)
        return self.heads(prefix_h, act_h, batch, objective, insulate)

    def heads(
        self,
        prefix_h: torch.Tensor,
        act_h: torch.Tensor,
        batch: dict[str, torch.Tensor],
        objective: str = "joint",
        insulate: bool = False,
    ) -> dict[str, torch.Tensor]:
        """AR cross-entropy and flow-matching loss from backbone hidden states."""
        logits = self.lm_head(act_h)
        keep = step_weights(batch, self.chunk)  # (B, chunk): 0 where action_is_pad
        ce = F.cross_entropy(
            logits.reshape(-1, BINS).float(), batch["tokens"].reshape(-1), reduction="none"
        )
        ar_ce = masked_mean(ce.view(keep.shape[0], self.chunk, -1), keep[:, :, None])
        ctx_in = prefix_h.detach() if insulate else prefix_h
        # (B, 1, W): shared by the K time samples
        ctx = self.flow.context(ctx_in, self.prefix_keep(batch))[:, None]
        a = batch["actions"][:, None]  # (B, 1, chunk, motors)
        t = batch["flow_t"]  # (B, K)
        eps = batch["flow_noise"]  # (B, K, chunk, motors)
        tt = t[..., None, None]
        x_t = tt * eps + (1.0 - tt) * a
        sq = (self.flow(x_t, t, ctx).float() - (eps - a).float()) ** 2
        flow_loss = masked_mean(sq, keep[:, None, :, None])
        if objective == "ar":
            loss = ar_ce
        elif objective == "flow":
            loss = flow_loss
        else:
            loss = ar_ce + flow_loss
        return {"loss": loss, "ar_ce": ar_ce.detach(), "flow_loss": flow_loss.detach()}

    @torch.no_grad()
    def sample(
        self,
        prefix_h: torch.Tensor,
        noise: torch.Tensor,
        steps: int = EULER_STEPS,
        keep: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Euler-integrate the flow from noise (t=1) to actions (t=0) in `steps` steps.

        The actions are in normalized units. `keep`: the prefix positions pooled
        (Policy.prefix_keep).
        """
        ctx = self.flow.context(prefix_h, keep)
        x = noise
        dt = -1.0 / steps
        for k in range(steps):
            t = torch.full(x.shape[:1], 1.0 + k * dt, device=x.device, dtype=x.dtype)
            x = x + dt * self.flow(x, t, ctx)
        return x


def step_weights(batch: dict[str, torch.Tensor], chunk: int) -> torch.Tensor:
    """The chunk steps' weights, (B, chunk) float: 1 inside the episode, 0 for a padded step.

    They come from the batch's `action_is_pad`, as lerobot builds it; all ones without that
    key.
    """
    pad = batch.get("action_is_pad")
    if pad is None:
        return torch.ones(batch["tokens"].shape[0], chunk, device=batch["tokens"].device)
    return (~pad).float()


def masked_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Each sample's mean over the elements whose (broadcast) weight is 1, then the samples' mean.

    Padded action steps count neither in the sum nor in the count, and every sample weighs the
    same, so a batch's loss is the same however it is cut into chunks.
    """
    w = weights.expand_as(values)
    per = (values * w).flatten(1).sum(1) / w.flatten(1).sum(1).clamp_min(1.0)
    return per.mean()


def _sdpa(config):
    config._attn_implementation = "sdpa"
    return config


def architecture(model: Policy) -> dict[str, dict]:
    """The vision encoder's and backbone's configs, as a checkpoint's meta.json records them."""
    return {"vision": model.vision.config.to_dict(), "backbone": model.backbone.config.to_dict()}


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
