"""Training / validation sequences: half plain left-to-right windows, half fill-in-the-middle
in prefix-suffix-middle (PSM) order:
    <s><|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>M<|endoftext|>
P, S and M are cut from the text at character positions and tokenized separately, exactly
as the engine tokenizes a prompt. A sequence that ends early is filled with plain text from
another file (<s> then tokens), so no compute goes to padding."""
import bisect, random

BOS, EOS, FIM_P, FIM_S, FIM_M = 1, 2, 3, 4, 5
LANG_WEIGHTS = {"python": 0.5, "c": 0.3, "js": 0.2}


class Sampler:
    def __init__(self, docs, sp, seed):
        self.sp, self.rng = sp, random.Random(seed)
        self.by = {}
        for lang, _, t in docs:
            self.by.setdefault(lang, []).append(t)
        self.cum = {}
        for lang, ts in self.by.items():
            c, acc = [], 0
            for t in ts:
                acc += len(t); c.append(acc)
            self.cum[lang] = c
        self.langs = [l for l in LANG_WEIGHTS if l in self.by]
        self.weights = [LANG_WEIGHTS[l] for l in self.langs]

    def doc(self):
        lang = self.rng.choices(self.langs, self.weights)[0]
        c = self.cum[lang]
        return self.by[lang][bisect.bisect_right(c, self.rng.randrange(c[-1]))]

    def plain(self, n):
        """n tokens: <s> then text from a random line start (or random char) of a random file."""
        out = []
        while len(out) < n:
            t = self.doc()
            s = self.rng.randrange(len(t))
            if self.rng.random() < 0.7:
                s = t.rfind("\n", 0, s) + 1
            if self.rng.random() < 0.15:
                s = 0
            out.append(BOS)
            out.extend(self.sp.encode(t[s:s + 4 * (n - len(out)) + 16]))
            if s + 4 * n >= len(t):
                out.append(EOS)
        return out[:n]

    def middle_span(self, t):
        r, rng = self.rng.random(), self.rng
        a = rng.randrange(len(t))
        ls = t.rfind("\n", 0, a) + 1
        if r < 0.3:  # from inside a line to the end of that line
            e = t.find("\n", a)
            return a, (len(t) if e < 0 else e)
        if r < 0.6 or r < 0.85:  # whole lines (1..3) or a block (2..20 lines)
            k = rng.randint(1, 3) if r < 0.6 else rng.randint(2, 20)
            e = ls
            for _ in range(k):
                f = t.find("\n", e)
                e = len(t) if f < 0 else f + 1
                if e == len(t):
                    break
            return ls, e
        return a, min(len(t), a + rng.randint(1, 200))  # arbitrary span

    def fim(self, n):
        rng = self.rng
        while True:
            t = self.doc()
            a, b = self.middle_span(t)
            m = self.sp.encode(t[a:b])
            if len(m) <= n // 3:
                break
        budget = n - len(m) - 5
        p = self.sp.encode(t[max(0, a - 4 * budget):a])
        s = self.sp.encode(t[b:b + 4 * budget])
        # share the budget between prefix and suffix; sometimes short contexts on purpose
        ns = min(len(s), int(budget * rng.uniform(0.1, 0.6)))
        if rng.random() < 0.1:
            ns = min(ns, rng.randint(0, 16))
        np_ = min(len(p), budget - ns)
        ns = min(len(s), budget - np_)
        p = p[len(p) - np_:]
        s = s[:ns]
        seq = [BOS, FIM_P] + p + [FIM_S] + s + [FIM_M] + m + [EOS]
        if len(seq) < n:
            seq += self.plain(n - len(seq))
        return seq[:n]

    def example(self, n):
        return self.fim(n) if self.rng.random() < 0.5 else self.plain(n)
