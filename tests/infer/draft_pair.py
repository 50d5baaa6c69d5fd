#!/usr/bin/env python3
"""Writes the tiny target/draft pairs test_engine_draft.c reads, with
`infill mkmodel`, into a scratch folder, then runs that test on them.

    draft_pair.py INFILL TEST_EXE VOCAB.gguf

The draft has 2 layers; the targets 6, their first 2 the draft's and the
rest perturbing it by 0 ("same"), 0.05 ("near"), 0.2 ("mid") and 3 ("far");
"near" and "mid" again with their vocabulary padded, and the draft padded."""
import os
import subprocess
import sys
import tempfile


def main():
    infill, test_exe, vocab = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as d:
        common = [infill, "mkmodel", "--shape", "tiny", "--type", "q8_0", "--vocab", vocab,
                  "--seed", "11"]
        jobs = [("draft.gguf", ["--layers", "2"]),
                ("target-same.gguf", ["--layers", "6", "--pair-layers", "2", "--perturb", "0"]),
                ("target-near.gguf", ["--layers", "6", "--pair-layers", "2", "--perturb", "0.05"]),
                ("target-mid.gguf", ["--layers", "6", "--pair-layers", "2", "--perturb", "0.2"]),
                ("target-far.gguf", ["--layers", "6", "--pair-layers", "2", "--perturb", "3"]),
                # "near" with 64 unused tokens after the vocabulary (Qwen2.5-Coder's
                # larger models pad theirs further than its 0.5B draft)
                ("target-near-padded.gguf", ["--layers", "6", "--pair-layers", "2",
                                             "--perturb", "0.05", "--pad-vocab", "64"]),
                ("target-mid-padded.gguf", ["--layers", "6", "--pair-layers", "2",
                                            "--perturb", "0.2", "--pad-vocab", "64"]),
                ("draft-padded.gguf", ["--layers", "2", "--pad-vocab", "64"])]
        for name, opts in jobs:
            subprocess.run(common + opts + ["-o", os.path.join(d, name)], check=True,
                           stderr=subprocess.DEVNULL)
        env = dict(os.environ, INFILL_DRAFT_DIR=d)
        return subprocess.run([test_exe], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
