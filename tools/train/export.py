"""Export a training checkpoint + the SentencePiece vocabulary to GGUF v3 (llama architecture).

usage: /usr/bin/python3 tools/train/export.py CKPT OUT.gguf [--type q8_0|f16|f32]
Tensor names follow llama.cpp; 2-D weights in the chosen type, norms F32. Embeddings are
tied, so there is no output.weight: the engine uses token_embd.weight as the output matrix.
No Q/K permutation: the model was trained with adjacent-pair ("NORM") RoPE, the engine's."""
import argparse, os, sys
import numpy as np
import torch
import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import (GGUFWriter, T_STRING, T_ARRAY, T_UINT32, T_FLOAT32, T_INT32, T_BOOL,
                         GGML_F32, GGML_F16, GGML_Q8_0)

FIM_NAMES = {"<|fim_prefix|>": "fim_pre", "<|fim_suffix|>": "fim_suf", "<|fim_middle|>": "fim_mid",
             "<|fim_pad|>": "fim_pad", "<|file_sep|>": "fim_sep"}


def vocab_arrays(sp):
    toks, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        p = sp.id_to_piece(i)
        if sp.is_unknown(i):
            t = 2
        elif sp.is_control(i):
            t = 3
        elif sp.is_byte(i):
            t = 6
        elif p in FIM_NAMES:
            t = 4  # user-defined: matched as a whole in text before BPE
        else:
            t = 1
        toks.append(p); scores.append(sp.get_score(i)); types.append(t)
    return toks, scores, types


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt"); ap.add_argument("out")
    ap.add_argument("--type", default="q8_0", choices=["q8_0", "f16", "f32"])
    ap.add_argument("--name", default="infill-default")
    a = ap.parse_args()
    st = torch.load(a.ckpt, map_location="cpu")
    cfg, sd = st["cfg"], st["model"]
    sp = spm.SentencePieceProcessor(model_file=st["vocab_model"])
    gt = {"q8_0": GGML_Q8_0, "f16": GGML_F16, "f32": GGML_F32}[a.type]
    w = GGUFWriter()
    w.add("general.architecture", T_STRING, "llama")
    w.add("general.name", T_STRING, a.name)
    w.add("general.file_type", T_UINT32, {"q8_0": 7, "f16": 1, "f32": 0}[a.type])
    w.add("general.alignment", T_UINT32, 32)
    w.add("llama.vocab_size", T_UINT32, cfg["vocab"])
    w.add("llama.context_length", T_UINT32, cfg["ctx"])
    w.add("llama.embedding_length", T_UINT32, cfg["d"])
    w.add("llama.block_count", T_UINT32, cfg["layers"])
    w.add("llama.feed_forward_length", T_UINT32, cfg["ffn"])
    w.add("llama.attention.head_count", T_UINT32, cfg["heads"])
    w.add("llama.attention.head_count_kv", T_UINT32, cfg["kv_heads"])
    w.add("llama.rope.dimension_count", T_UINT32, cfg["d"] // cfg["heads"])
    w.add("llama.rope.freq_base", T_FLOAT32, float(cfg["rope_base"]))
    w.add("llama.attention.layer_norm_rms_epsilon", T_FLOAT32, float(cfg["eps"]))
    toks, scores, types = vocab_arrays(sp)
    w.add("tokenizer.ggml.model", T_STRING, "llama")
    w.add("tokenizer.ggml.tokens", T_ARRAY, toks, T_STRING)
    w.add("tokenizer.ggml.scores", T_ARRAY, scores, T_FLOAT32)
    w.add("tokenizer.ggml.token_type", T_ARRAY, types, T_INT32)
    w.add("tokenizer.ggml.bos_token_id", T_UINT32, sp.bos_id())
    w.add("tokenizer.ggml.eos_token_id", T_UINT32, sp.eos_id())
    w.add("tokenizer.ggml.eot_token_id", T_UINT32, sp.eos_id())
    w.add("tokenizer.ggml.unknown_token_id", T_UINT32, sp.unk_id())
    w.add("tokenizer.ggml.add_bos_token", T_BOOL, True)
    w.add("tokenizer.ggml.add_eos_token", T_BOOL, False)
    w.add("tokenizer.ggml.add_space_prefix", T_BOOL, False)
    for piece, key in FIM_NAMES.items():
        w.add(f"tokenizer.ggml.{key}_token_id", T_UINT32, sp.piece_to_id(piece))

    def f32(name):
        return sd[name].float().numpy()

    w.add_tensor("token_embd.weight", f32("embed.weight"), gt)
    for i in range(cfg["layers"]):
        p = f"blocks.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight", f32(p + "attn_norm.weight"), GGML_F32)
        for src, dst in (("wq", "attn_q"), ("wk", "attn_k"), ("wv", "attn_v"), ("wo", "attn_output"),
                         ("w_gate", "ffn_gate"), ("w_up", "ffn_up"), ("w_down", "ffn_down")):
            w.add_tensor(f"blk.{i}.{dst}.weight", f32(p + src + ".weight"), gt)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", f32(p + "ffn_norm.weight"), GGML_F32)
    w.add_tensor("output_norm.weight", f32("norm.weight"), GGML_F32)
    w.write(a.out)
    print(f"wrote {a.out}: {os.path.getsize(a.out)/1e6:.2f} MB, {len(w.tensors)} tensors")


if __name__ == "__main__":
    main()
