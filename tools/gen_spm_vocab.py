#!/usr/bin/python3
"""Make the SentencePiece test vocabularies in tests/infer/tokenizer_data/.

Trains two small BPE models with Debian's python3-sentencepiece on Python
standard-library source, the way a code model's vocabulary would be trained
(normalization off, whitespace kept, byte fallback, FIM tokens as
user-defined symbols), one with the dummy-prefix space and one without. Each
is written as a vocabulary-only GGUF (tokenizer.ggml.model = "llama") with
its test strings and the ids sentencepiece's own encoder gives for them, in
the .inp/.out format of ../shared/testdata/vocab/ (no BOS; the FIM tokens in
the strings are single ids, as sentencepiece matches user-defined symbols).

Usage: /usr/bin/python3 tools/gen_spm_vocab.py OUTDIR [VOCAB_TEST_INP]
"""
import glob
import io
import os
import struct
import sys

import sentencepiece as spm

FIM = ['<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>']
SEP = '\n__ggml_vocab_test__\n'


def training_lines():
    lines = []
    for path in sorted(glob.glob('/usr/lib/python3.11/[a-m]*.py'))[:40]:
        with open(path, encoding='utf-8', errors='replace') as f:
            lines.extend(l.rstrip('\n') for l in f if l.strip())
    return lines


def gguf_bytes(kv):
    """A GGUF v3 file with metadata only (no tensors)."""
    out = io.BytesIO()
    out.write(b'GGUF')
    out.write(struct.pack('<IQQ', 3, 0, len(kv)))

    def s(x):
        b = x.encode('utf-8')
        out.write(struct.pack('<Q', len(b)))
        out.write(b)

    for key, (typ, val) in kv.items():
        s(key)
        if typ == 'str':
            out.write(struct.pack('<I', 8))
            s(val)
        elif typ == 'u32':
            out.write(struct.pack('<II', 4, val))
        elif typ == 'bool':
            out.write(struct.pack('<IB', 7, 1 if val else 0))
        elif typ == 'strs':
            out.write(struct.pack('<IIQ', 9, 8, len(val)))
            for v in val:
                s(v)
        elif typ == 'f32s':
            out.write(struct.pack('<IIQ', 9, 6, len(val)))
            out.write(struct.pack('<%df' % len(val), *val))
        elif typ == 'i32s':
            out.write(struct.pack('<IIQ', 9, 5, len(val)))
            out.write(struct.pack('<%di' % len(val), *val))
    # metadata-only files still pad to the alignment
    pad = (-out.tell()) % 32
    out.write(b'\0' * pad)
    return out.getvalue()


def piece_type(sp, i):
    if sp.IsUnknown(i):
        return 2
    if sp.IsControl(i):
        return 3
    if sp.IsUnused(i):
        return 5
    if sp.IsByte(i):
        return 6
    if sp.id_to_piece(i) in FIM:
        return 4  # user-defined
    return 1


EXTRA_TESTS = [
    'def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n',
    'class LRUCache:\n    def __init__(self, capacity: int) -> None:\n        self.capacity = capacity\n',
    '<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n\nprint(add(1, 2))<|fim_middle|>',
    '<|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>',
    'import os\nimport sys\n\n\n\t\tx = {"k": [1, 2, 3]}  # comment ü € 🦙\n',
    '    ',
    '\n',
    'if (x != NULL && y->next) { return -1; }',
]


def main():
    outdir = sys.argv[1]
    inp_path = sys.argv[2] if len(sys.argv) > 2 else '../shared/testdata/vocab/ggml-vocab-llama-spm.gguf.inp'
    with open(inp_path, encoding='utf-8') as f:
        tests = f.read().split(SEP)[:-1] + EXTRA_TESTS
    lines = training_lines()
    for name, dummy in (('spm-code-prefix', True), ('spm-code-noprefix', False)):
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=model, model_type='bpe',
            vocab_size=1200, normalization_rule_name='identity',
            remove_extra_whitespaces=False, add_dummy_prefix=dummy, byte_fallback=True,
            allow_whitespace_only_pieces=True, split_digits=True, character_coverage=1.0,
            user_defined_symbols=FIM, max_sentence_length=8192, num_threads=1,
            minloglevel=2)
        sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
        n = sp.get_piece_size()
        kv = {
            'general.architecture': ('str', 'llama'),
            'general.name': ('str', name),
            'tokenizer.ggml.model': ('str', 'llama'),
            'tokenizer.ggml.tokens': ('strs', [sp.id_to_piece(i) for i in range(n)]),
            'tokenizer.ggml.scores': ('f32s', [sp.get_score(i) for i in range(n)]),
            'tokenizer.ggml.token_type': ('i32s', [piece_type(sp, i) for i in range(n)]),
            'tokenizer.ggml.bos_token_id': ('u32', sp.bos_id()),
            'tokenizer.ggml.eos_token_id': ('u32', sp.eos_id()),
            'tokenizer.ggml.unknown_token_id': ('u32', sp.unk_id()),
            'tokenizer.ggml.add_bos_token': ('bool', True),
            'tokenizer.ggml.add_space_prefix': ('bool', dummy),
        }
        base = os.path.join(outdir, 'ggml-vocab-%s.gguf' % name)
        with open(base, 'wb') as f:
            f.write(gguf_bytes(kv))
        with open(base + '.inp', 'w', encoding='utf-8', newline='') as f:
            for t in tests:
                f.write(t + SEP)
        with open(base + '.out', 'w', encoding='utf-8', newline='') as f:
            for t in tests:
                ids = sp.encode(t) if t else []
                f.write(''.join(' %d' % i for i in ids) + '\n')


if __name__ == '__main__':
    main()
