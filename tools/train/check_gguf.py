"""Check an exported GGUF against the torch checkpoint it came from, with an independent
float64 numpy forward pass written from the engine's reference math
(../../../shared/testdata/models/README.md), and a pure-Python llama-SPM tokenizer that reads
the vocabulary from the GGUF and must agree with sentencepiece.

usage: /usr/bin/python3 tools/train/check_gguf.py MODEL.gguf CKPT [--json OUT.json]
--json writes reference numbers for the C engine: per prompt the token ids, all last-position
logits (of this numpy forward over the GGUF weights), and 16 greedy tokens."""
import argparse, json, math, os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import read_gguf

PROMPTS = [
    ("python", "def fibonacci(n):\n    if n < 2:\n        return n\n    return "),
    ("c", "#include <stdio.h>\n\nint main(int argc, char **argv)\n{\n    for (int i = 0; i < argc; i++)\n"),
    ("js", "function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = "),
    ("fim-python", "<|fim_prefix|>import os\n\ndef list_files(path):\n    result = []\n    for name in os.listdir(path):\n        <|fim_suffix|>\n    return result\n<|fim_middle|>"),
    ("fim-c", "<|fim_prefix|>static int max(int a, int b)\n{\n    return <|fim_suffix|>;\n}\n<|fim_middle|>"),
    ("unicode", "# Σ — ü ï ½ 日本\nx = '\t'  # tab\n"),
]


class SpmTokenizer:
    """llama.cpp-style SPM tokenizer: split out user-defined (and, with special=True, control)
    tokens by longest match, map ' ' to U+2581, merge the adjacent pair whose concatenation is
    in the vocabulary with the highest score (leftmost on ties) until none is, and emit
    unknown symbols as byte tokens <0xXX>."""

    def __init__(self, kv):
        self.toks = kv["tokenizer.ggml.tokens"]
        self.scores = kv["tokenizer.ggml.scores"]
        self.types = kv["tokenizer.ggml.token_type"]
        self.id = {t: i for i, t in enumerate(self.toks)}
        self.bos = kv["tokenizer.ggml.bos_token_id"]

    def _bpe(self, text):
        sym = list(text.replace(" ", "\u2581"))
        while len(sym) > 1:
            best, bi = None, -1
            for i in range(len(sym) - 1):
                j = self.id.get(sym[i] + sym[i + 1])
                if j is not None and (best is None or self.scores[j] > best):
                    best, bi = self.scores[j], i
            if bi < 0:
                break
            sym[bi:bi + 2] = [sym[bi] + sym[bi + 1]]
        out = []
        for s in sym:
            if s in self.id and self.types[self.id[s]] in (1, 4):
                out.append(self.id[s])
            else:
                out.extend(self.id["<0x%02X>" % b] for b in s.encode("utf-8"))
        return out

    def encode(self, text, bos=True, special=True):
        specials = sorted((t for i, t in enumerate(self.toks)
                           if self.types[i] == 4 or (special and self.types[i] == 3)),
                          key=len, reverse=True)
        out, i, start = ([self.bos] if bos else []), 0, 0
        while i < len(text):
            m = next((s for s in specials if text.startswith(s, i)), None)
            if m:
                if start < i:
                    out += self._bpe(text[start:i])
                out.append(self.id[m]); i += len(m); start = i
            else:
                i += 1
        if start < len(text):
            out += self._bpe(text[start:])
        return out


def rmsnorm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


class NumpyLlama:
    def __init__(self, kv, t):
        self.kv, self.t = kv, {k: v.astype(np.float64) for k, v in t.items()}
        self.nl = kv["llama.block_count"]; self.nh = kv["llama.attention.head_count"]
        self.nkv = kv["llama.attention.head_count_kv"]; self.d = kv["llama.embedding_length"]
        self.hd = self.d // self.nh; self.eps = kv["llama.attention.layer_norm_rms_epsilon"]
        self.base = kv["llama.rope.freq_base"]
        self.out = self.t.get("output.weight", self.t["token_embd.weight"])

    def rope(self, x):  # x [T, H, hd], adjacent pairs
        T = x.shape[0]
        i = np.arange(self.hd // 2)
        ang = np.arange(T)[:, None] * self.base ** (-2.0 * i / self.hd)[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        y = np.empty_like(x)
        y[..., 0::2] = a * c - b * s
        y[..., 1::2] = a * s + b * c
        return y

    def forward(self, ids):
        t, T = self.t, len(ids)
        x = t["token_embd.weight"][ids]
        mask = np.triu(np.full((T, T), -np.inf), 1)
        for l in range(self.nl):
            p = f"blk.{l}."
            h = rmsnorm(x, t[p + "attn_norm.weight"], self.eps)
            q = self.rope((h @ t[p + "attn_q.weight"].T).reshape(T, self.nh, self.hd))
            k = self.rope((h @ t[p + "attn_k.weight"].T).reshape(T, self.nkv, self.hd))
            v = (h @ t[p + "attn_v.weight"].T).reshape(T, self.nkv, self.hd)
            o = np.empty((T, self.nh, self.hd))
            g = self.nh // self.nkv
            for hh in range(self.nh):
                sc = q[:, hh] @ k[:, hh // g].T / math.sqrt(self.hd) + mask
                sc = np.exp(sc - sc.max(-1, keepdims=True)); sc /= sc.sum(-1, keepdims=True)
                o[:, hh] = sc @ v[:, hh // g]
            x = x + o.reshape(T, -1) @ t[p + "attn_output.weight"].T
            h = rmsnorm(x, t[p + "ffn_norm.weight"], self.eps)
            gt = h @ t[p + "ffn_gate.weight"].T
            x = x + ((gt / (1 + np.exp(-gt))) * (h @ t[p + "ffn_up.weight"].T)) @ t[p + "ffn_down.weight"].T
        return rmsnorm(x, t["output_norm.weight"], self.eps) @ self.out.T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf"); ap.add_argument("ckpt")
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    import sentencepiece as spm
    from model import Config, Model
    kv, tens, types = read_gguf(a.gguf)
    st = torch.load(a.ckpt, map_location="cpu")
    cfg = Config(**st["cfg"])
    m = Model(cfg); m.load_state_dict(st["model"]); m.eval()
    sp = spm.SentencePieceProcessor(model_file=st["vocab_model"])
    tok = SpmTokenizer(kv)
    ref = NumpyLlama(kv, tens)
    ok = True
    # tokenizer agreement on the prompts and on some validation text
    texts = [p for _, p in PROMPTS]
    here = os.path.dirname(os.path.abspath(__file__))
    for f in sorted(os.listdir(here))[:6]:
        if f.endswith(".py"):
            texts.append(open(os.path.join(here, f)).read()[:3000])
    for s in texts:
        a_ids = tok.encode(s, bos=False, special=False)  # sentencepiece never parses control pieces
        b_ids = sp.encode(s)  # sentencepiece also matches user-defined pieces in text
        if a_ids != b_ids:
            ok = False
            print("TOKENIZER MISMATCH", repr(s[:60]), len(a_ids), len(b_ids))
    print("tokenizer: pure-python llama-SPM", "agrees" if ok else "DISAGREES", "with sentencepiece on", len(texts), "texts")
    eos = kv["tokenizer.ggml.eos_token_id"]
    out = {"model_file": os.path.basename(a.gguf), "prompts": []}
    worst = 0.0
    for name, text in PROMPTS:
        ids = tok.encode(text)
        lg = ref.forward(ids)
        with torch.no_grad():
            lt = m(torch.tensor([ids]))[0].double().numpy()
        diff = np.abs(lg - lt).max()
        worst = max(worst, diff)
        agree = (lg.argmax(-1) == lt.argmax(-1)).mean()
        # greedy 16 with the numpy model (recompute; small)
        g, seq = [], list(ids)
        for _ in range(16):
            nxt = int(ref.forward(seq)[-1].argmax()) if g else int(lg[-1].argmax())
            g.append(nxt); seq.append(nxt)
            if nxt == eos:
                break
        print(f"{name:11s} n={len(ids):3d} max|numpy-torch| {diff:.2e} argmax agree {agree:.3f} "
              f"greedy: {sp.decode([i for i in g if i != eos])!r}{' <EOT>' if eos in g else ''}")
        out["prompts"].append({"name": name, "prompt": text, "token_ids": ids,
                               "last_logits": [float("%.7g" % v) for v in lg[-1]],
                               "greedy16": g})
    print(f"worst max abs logit diff {worst:.3e}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
