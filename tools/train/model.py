"""Small Llama-architecture model in torch, matching the math the infill engine runs
(see ../../../shared/testdata/models/README.md): RMSNorm, adjacent-pair ("NORM") RoPE,
causal attention with scores / sqrt(head_dim), SwiGLU feed-forward, no biases,
tied input/output embeddings (GGUF file then has no output.weight)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    def __init__(self, vocab=8192, d=256, layers=6, heads=4, kv_heads=4, ffn=None,
                 ctx=512, rope_base=10000.0, eps=1e-5):
        self.vocab, self.d, self.layers, self.heads, self.kv_heads = vocab, d, layers, heads, kv_heads
        # SwiGLU width ~ 8/3 d rounded to a multiple of 32
        self.ffn = ffn or int(math.ceil(8 * d / 3 / 32) * 32)
        self.ctx, self.rope_base, self.eps = ctx, rope_base, eps

    def to_dict(self):
        return dict(self.__dict__)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(hd, ctx, base):
    i = torch.arange(hd // 2, dtype=torch.float64)
    inv = base ** (-2.0 * i / hd)
    ang = torch.arange(ctx, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    # x: [B, H, T, hd]; rotate adjacent pairs (x[2i], x[2i+1])
    B, H, T, hd = x.shape
    xr = x.view(B, H, T, hd // 2, 2)
    a, b = xr[..., 0], xr[..., 1]
    c, s = cos[:T], sin[:T]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).view(B, H, T, hd)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, hd = cfg.d, cfg.d // cfg.heads
        self.cfg, self.hd = cfg, hd
        self.attn_norm = RMSNorm(d, cfg.eps)
        self.wq = nn.Linear(d, cfg.heads * hd, bias=False)
        self.wk = nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.wv = nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.heads * hd, d, bias=False)
        self.ffn_norm = RMSNorm(d, cfg.eps)
        self.w_gate = nn.Linear(d, cfg.ffn, bias=False)
        self.w_up = nn.Linear(d, cfg.ffn, bias=False)
        self.w_down = nn.Linear(cfg.ffn, d, bias=False)

    def forward(self, x, cos, sin, mask):
        cfg, hd = self.cfg, self.hd
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, cfg.heads, hd).transpose(1, 2)
        k = self.wk(h).view(B, T, cfg.kv_heads, hd).transpose(1, 2)
        v = self.wv(h).view(B, T, cfg.kv_heads, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cfg.kv_heads != cfg.heads:
            rep = cfg.heads // cfg.kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        att = att.masked_fill(mask[:T, :T], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, cfg.heads * hd)
        x = x + self.wo(y)
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.d)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.d, cfg.eps)
        cos, sin = rope_tables(cfg.d // cfg.heads, cfg.ctx, cfg.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        mask = torch.triu(torch.ones(cfg.ctx, cfg.ctx, dtype=torch.bool), 1)
        self.register_buffer("mask", mask, persistent=False)
        self.apply(self._init)
        for b in self.blocks:  # scaled init of residual projections (GPT-2 style)
            nn.init.normal_(b.wo.weight, std=0.02 / math.sqrt(2 * cfg.layers))
            nn.init.normal_(b.w_down.weight, std=0.02 / math.sqrt(2 * cfg.layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, ids):
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x, self.cos, self.sin, self.mask)
        x = self.norm(x)
        return x @ self.embed.weight.t()  # tied output layer
