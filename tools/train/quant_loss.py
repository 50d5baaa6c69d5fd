"""Held-out loss of the weights stored in a GGUF (dequantized back into the torch model),
next to the checkpoint's own: how much the export's quantization costs.

usage: /usr/bin/python3 tools/train/quant_loss.py CKPT A.gguf [B.gguf ...]"""
import os, pickle, sys
import torch
import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Model
from gguf_writer import read_gguf
from train import val_set, evaluate, DATA

NAMES = {"attn_q": "wq", "attn_k": "wk", "attn_v": "wv", "attn_output": "wo", "ffn_gate": "w_gate",
         "ffn_up": "w_up", "ffn_down": "w_down", "attn_norm": "attn_norm", "ffn_norm": "ffn_norm"}


def to_state(tens):
    sd = {}
    for k, v in tens.items():
        t = torch.from_numpy(v.copy())
        if k == "token_embd.weight":
            sd["embed.weight"] = t
        elif k == "output_norm.weight":
            sd["norm.weight"] = t
        else:
            _, i, n, _ = k.split(".")
            sd[f"blocks.{i}.{NAMES[n]}.weight"] = t
    return sd


def main():
    torch.set_num_threads(2)
    st = torch.load(sys.argv[1], map_location="cpu")
    cfg = Config(**st["cfg"])
    m = Model(cfg)
    sp = spm.SentencePieceProcessor(model_file=st["vocab_model"])
    with open(os.path.join(DATA, "corpus.pkl"), "rb") as fh:
        split = pickle.load(fh)
    vs = val_set(sp, split["val"], 24, cfg.ctx, seed=1234)  # the set train.py reports on
    for name, sd in [("checkpoint", st["model"])] + [(g, to_state(read_gguf(g)[1])) for g in sys.argv[2:]]:
        m.load_state_dict(sd)
        r = evaluate(m, vs)
        print(f"{os.path.basename(name):28s} plain {r['plain'][0]:.4f} nats/tok {r['plain'][1]:.4f} bits/byte  "
              f"fim-middle {r['fim'][0]:.4f} nats/tok {r['fim'][1]:.4f} bits/byte")


if __name__ == "__main__":
    main()
