"""Measure training throughput (fwd+bwd+AdamW) of candidate shapes for ~N seconds each.
usage: [BF16=0] python3 bench_shapes.py SECONDS "d=192,layers=6,heads=3,bsz=4" ..."""
import sys, time, torch
sys.path.insert(0, __import__("os").path.dirname(__file__))
from model import Config, Model
torch.set_num_threads(int(__import__("os").environ.get("THREADS", "2")))
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 30
bf16 = __import__("os").environ.get("BF16", "1") != "0"  # as train.py: bf16 matrix products
shapes = [eval("dict(%s)" % a) for a in sys.argv[2:]]
for s in shapes:
    seq = s.pop("seq", 512); bsz = s.pop("bsz", 8)
    cfg = Config(ctx=seq, **s)
    m = Model(cfg)
    n = sum(p.numel() for p in m.parameters())
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    ids = torch.randint(0, cfg.vocab, (bsz, seq + 1))
    toks, t0, steps = 0, None, 0
    while True:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = m(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, cfg.vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        steps += 1
        if steps == 1: t0 = time.time(); continue
        toks += bsz * seq
        if time.time() - t0 > secs: break
    print(f"{s} seq={seq} bsz={bsz} params={n/1e6:.2f}M tok/s={toks/(time.time()-t0):.0f}", flush=True)
