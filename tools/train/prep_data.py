"""Collect source files on this Debian machine, split them into train / val / eval-only
by a hash of the path, and write the corpus (tools/data/corpus.pkl) plus the file lists
(models/*-files.txt) the eval harness uses to stay off training data.

Split: bucket = sha1(path) % 100; bucket < 10 -> eval-only (never trained on, never used
for validation), 10..14 -> validation (held-out loss), rest -> train. Files whose content
is identical to an eval or val file are dropped from train too."""
import hashlib, os, pickle, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tools", "data")
MODELS = os.path.join(ROOT, "models")

CXX_DIRS = {"boost", "ATen", "llvm-14", "c++", "eigen3", "torch", "node", "google", "unicode",
            "c10", "caffe2", "pybind11", "tbb", "oneapi", "llvm-c-14", "clang", "qt5",
            "nlohmann", "absl", "grpc", "grpcpp", "fmt", "spdlog", "gtest", "gmock", "catch2"}

SOURCES = [
    # (lang, root, extensions, eval-eligible)
    ("python", "/usr/lib/python3.11", (".py",), True),
    ("python", "/usr/lib/python3/dist-packages", (".py",), False),
    ("c", "/usr/include", (".h",), True),
    ("c", "/usr/share/doc", (".c",), False),
    ("c", "/usr/lib/python3/dist-packages/numpy", (".c", ".h"), False),
    ("js", "/usr/lib/node_modules", (".js", ".mjs", ".cjs"), True),
    ("js", "/usr/share/javascript", (".js",), True),
]


def ok_text(b):
    if not (200 <= len(b) <= 300_000):
        return None
    try:
        t = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = t.split("\n")
    if max(len(l) for l in lines) > 400 or len(t) / max(1, len(lines)) > 100:
        return None  # minified or generated
    if "\x00" in t or "\r" in t:
        return None
    return t


def walk(root, exts, skip_top):
    for d, dirs, files in os.walk(root):
        if d == root and skip_top:
            dirs[:] = [x for x in dirs if x not in CXX_DIRS]
        dirs[:] = sorted(x for x in dirs if x not in ("__pycache__", "site-packages", "test", "tests")
                         or root != "/usr/lib/python3.11")
        for f in sorted(files):
            if f.endswith(exts) and not f.endswith(".min.js"):
                yield os.path.join(d, f)


def bucket(path):
    return int(hashlib.sha1(path.encode()).hexdigest(), 16) % 100


def drop_near_copies(evals, train):
    """Drop eval files whose parent-dir/name also occurs in train: vendored or backported
    copies of stdlib modules (setuptools/_distutils, future/backports, ...) differ by a few
    lines, so the model may have seen most of their text."""
    tails = {"/".join(p.split("/")[-2:]) for _, p, _ in train}
    return [e for e in evals if "/".join(e[1].split("/")[-2:]) not in tails]


def filter_eval_list():
    """Re-apply drop_near_copies to models/eval-files.txt without rebuilding the corpus."""
    def load(name):
        with open(os.path.join(MODELS, name)) as fh:
            return [tuple(l.rstrip("\n").split("\t")) + (None,) for l in fh if l.strip()]
    kept = drop_near_copies(load("eval-files.txt"), load("train-files.txt"))
    with open(os.path.join(MODELS, "eval-files.txt"), "w") as fh:
        fh.write("".join(f"{lang}\t{p}\n" for lang, p, _ in kept))


def main():
    os.makedirs(DATA, exist_ok=True)
    split = {"train": [], "val": [], "eval": []}
    for lang, root, exts, can_eval in SOURCES:
        for p in walk(root, exts, root == "/usr/include"):
            if "/.git/" in p or "test" in os.path.basename(p).lower() and lang == "js":
                continue
            try:
                with open(p, "rb") as fh:
                    t = ok_text(fh.read())
            except OSError:
                continue
            if t is None:
                continue
            b = bucket(p)
            s = "eval" if (b < 10 and can_eval) else "val" if b < 15 else "train"
            split[s].append((lang, p, t))
    held = {hashlib.sha1(t.encode()).digest() for s in ("val", "eval") for _, _, t in split[s]}
    seen, train = set(), []
    for lang, p, t in split["train"]:
        h = hashlib.sha1(t.encode()).digest()
        if h in held or h in seen:
            continue
        seen.add(h)
        train.append((lang, p, t))
    split["train"] = train
    split["eval"] = drop_near_copies(split["eval"], split["train"])
    for s, items in split.items():
        by = {}
        for lang, _, t in items:
            by.setdefault(lang, [0, 0]); by[lang][0] += 1; by[lang][1] += len(t)
        print(s, {k: f"{n} files {b/1e6:.1f} MB" for k, (n, b) in by.items()})
        with open(os.path.join(MODELS, f"{s}-files.txt"), "w") as fh:
            fh.write("".join(f"{lang}\t{p}\n" for lang, p, _ in items))
    with open(os.path.join(DATA, "corpus.pkl"), "wb") as fh:
        pickle.dump(split, fh)


if __name__ == "__main__":
    filter_eval_list() if sys.argv[1:] == ["--filter-eval"] else main()
