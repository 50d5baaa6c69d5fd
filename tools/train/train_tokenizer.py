"""Train the SentencePiece BPE vocabulary on lines sampled from the training split.
Special pieces: <unk>=0, <s>=1 (BOS), <|endoftext|>=2 (EOS, also ends every FIM middle),
then the FIM pieces as user-defined symbols. Newline and other unseen bytes come out as
byte-fallback pieces <0x0A> etc. (sentencepiece trains on single lines)."""
import os, pickle, random, sys
import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tools", "data")
FIM = ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|file_sep|>"]


def main():
    vocab = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    with open(os.path.join(DATA, "corpus.pkl"), "rb") as fh:
        split = pickle.load(fh)
    rng = random.Random(1)
    quota = {"python": 300_000, "c": 200_000, "js": 120_000}
    lines = {k: [] for k in quota}
    for lang, _, t in split["train"]:
        lines[lang].extend(l for l in t.split("\n") if l.strip())
    out = os.path.join(DATA, "spm_lines.txt")
    with open(out, "w") as fh:
        for k, q in quota.items():
            ls = lines[k]
            rng.shuffle(ls)
            fh.write("\n".join(ls[:q]) + "\n")
    spm.SentencePieceTrainer.train(
        input=out, model_prefix=os.path.join(DATA, f"spm{vocab}"), model_type="bpe",
        vocab_size=vocab, character_coverage=0.9995, byte_fallback=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=False, split_digits=True, allow_whitespace_only_pieces=True,
        split_by_whitespace=True, max_sentencepiece_length=16,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        unk_piece="<unk>", bos_piece="<s>", eos_piece="<|endoftext|>",
        user_defined_symbols=FIM, input_sentence_size=2_000_000, shuffle_input_sentence=True,
        num_threads=2, train_extremely_large_corpus=False)


if __name__ == "__main__":
    main()
