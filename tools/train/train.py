"""Train the default infill model on this machine's CPUs, scheduled by wall-clock time.

usage: nice -n 5 /usr/bin/python3 tools/train/train.py RUN_NAME --minutes 75 [shape options]
Writes tools/runs/RUN_NAME/{log.txt,ckpt.pt,best.pt}. The learning rate warms up over the first
steps and then follows a cosine from the peak to 10% of it as a function of elapsed/total
time, so the run ends on schedule whatever else the machine is doing. Matrix products run in
bf16 (autocast) by default. Held-out loss is measured in float32
on fixed sequences from the validation files (plain windows and FIM middles separately)."""
import argparse, math, os, pickle, random, sys, time
import torch
import torch.nn.functional as F
import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Model
from examples import Sampler, FIM_M, EOS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tools", "data")


def val_set(sp, docs, n_seq, seq, seed):
    """Fixed validation batches: plain windows (loss on every token) and FIM sequences
    (loss on the middle and its <|endoftext|> only). Returns (ids, mask, bytes)."""
    s = Sampler(docs, sp, seed)
    out = []
    for kind in ("plain", "fim"):
        ids, masks, nbytes = [], [], 0
        for _ in range(n_seq):
            if kind == "plain":
                x = s.plain(seq + 1)
                m = [1] * seq
            else:
                x = s.fim(seq + 1)
                i = x.index(FIM_M)
                j = x.index(EOS, i)
                m = [1 if i <= k < j + 0 else 0 for k in range(seq)]  # targets x[i+1..j]
            tgt = [t for t, k in zip(x[1:], m) if k]
            nbytes += len(sp.decode([t for t in tgt if t > 7]).encode()) + sum(1 for t in tgt if t <= 7)
            ids.append(x); masks.append(m)
        out.append((kind, torch.tensor(ids), torch.tensor(masks, dtype=torch.bool), nbytes))
    return out


@torch.no_grad()
def evaluate(model, vs, bsz=8):
    model.eval()
    res = {}
    for kind, ids, mask, nbytes in vs:
        tot, n = 0.0, 0
        for i in range(0, len(ids), bsz):
            x, m = ids[i:i + bsz], mask[i:i + bsz]
            logits = model(x[:, :-1])
            l = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none")
            tot += l[m.reshape(-1)].sum().item(); n += m.sum().item()
        res[kind] = (tot / n, tot / nbytes / math.log(2))  # nats/token, bits/byte
    model.train()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--minutes", type=float, default=75)
    ap.add_argument("--vocab-model", default=os.path.join(DATA, "spm8192.model"))
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=0)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--bsz", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--eval-every", type=float, default=10, help="minutes")
    ap.add_argument("--val-seqs", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--no-bf16", dest="bf16", action="store_false",
                    help="float32 matrix products (about 3x slower on AVX512_BF16 CPUs)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    out = os.path.join(ROOT, "tools", "runs", a.name)
    os.makedirs(out, exist_ok=True)
    logf = open(os.path.join(out, "log.txt"), "a")

    def log(msg):
        line = time.strftime("%H:%M:%S ") + msg
        print(line, flush=True); logf.write(line + "\n"); logf.flush()

    sp = spm.SentencePieceProcessor(model_file=a.vocab_model)
    with open(os.path.join(DATA, "corpus.pkl"), "rb") as fh:
        split = pickle.load(fh)
    cfg = Config(vocab=sp.get_piece_size(), d=a.d, layers=a.layers, heads=a.heads,
                 kv_heads=a.kv_heads or a.heads, ctx=a.seq)
    model = Model(cfg)
    nparam = sum(p.numel() for p in model.parameters())
    log(f"config {cfg.to_dict()} params {nparam/1e6:.2f}M args {vars(a)}")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    step, tokens, elapsed0 = 0, 0, 0.0
    ck = os.path.join(out, "ckpt.pt")
    if a.resume and os.path.exists(ck):
        st = torch.load(ck)
        model.load_state_dict(st["model"]); opt.load_state_dict(st["opt"])
        step, tokens, elapsed0 = st["step"], st["tokens"], st["elapsed"]
        log(f"resumed at step {step}")
    vs = val_set(sp, split["val"], a.val_seqs, a.seq, seed=1234)
    sampler = Sampler(split["train"], sp, seed=step + 1)
    budget = a.minutes * 60
    t0 = time.time() - elapsed0
    last_eval, last_ck, best = time.time(), time.time(), float("inf")
    loss_avg = None

    def save(path, **extra):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "cfg": cfg.to_dict(),
                    "step": step, "tokens": tokens, "elapsed": time.time() - t0,
                    "vocab_model": a.vocab_model, **extra}, path + ".tmp")
        os.replace(path + ".tmp", path)

    while True:
        el = time.time() - t0
        if el >= budget:
            break
        frac = el / budget
        lr = a.lr * min(1.0, (step + 1) / a.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        x = torch.tensor([sampler.example(a.seq + 1) for _ in range(a.bsz)])
        # bf16 matrix products (oneDNN), float32 weights, optimizer state and loss: the usual
        # mixed precision; 3.3x the tokens/s of float32 at d=128 on this machine type.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += a.bsz * a.seq
        loss_avg = loss.item() if loss_avg is None else 0.98 * loss_avg + 0.02 * loss.item()
        if step % 20 == 0:
            el = time.time() - t0
            log(f"step {step} tok {tokens} loss {loss_avg:.3f} lr {lr:.2e} gn {gn:.2f} "
                f"el {el/60:.1f}m tok/s {tokens/el:.0f}")
        if time.time() - last_ck > 300:
            save(ck); last_ck = time.time()
        if time.time() - last_eval > a.eval_every * 60:
            r = evaluate(model, vs)
            log(f"EVAL step {step} tok {tokens} plain {r['plain'][0]:.4f} nats/tok {r['plain'][1]:.4f} bits/byte "
                f"fim-middle {r['fim'][0]:.4f} nats/tok {r['fim'][1]:.4f} bits/byte")
            last_eval = time.time()
    r = evaluate(model, vs)
    log(f"FINAL step {step} tok {tokens} el {(time.time()-t0)/60:.1f}m plain {r['plain'][0]:.4f} nats/tok "
        f"{r['plain'][1]:.4f} bits/byte fim-middle {r['fim'][0]:.4f} nats/tok {r['fim'][1]:.4f} bits/byte")
    save(os.path.join(out, "final.pt"), val=r)
    save(ck)


if __name__ == "__main__":
    main()
