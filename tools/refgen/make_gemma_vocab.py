#!/usr/bin/python3
"""Make a small CodeGemma-like vocabulary for the tiny gemma test model.

CodeGemma's own vocabulary is 256,000 SentencePiece tokens; the tests need
only its special tokens. This copies every key of a small SentencePiece test
vocabulary (tests/infer/tokenizer_data/ggml-vocab-spm-code-noprefix.gguf:
<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|> as user-defined tokens, no
dummy-prefix space, as gemma's converter writes add_space_prefix = false)
and appends CodeGemma's two other special tokens, <|file_separator|> and
<end_of_turn>, as control tokens, with the keys llama.cpp's gemma converter
writes for them (conversion/gemma.py: fim_pre/suf/mid/sep and eot ids).

Usage: /usr/bin/python3 tools/refgen/make_gemma_vocab.py IN.gguf OUT.gguf
Pure Python (no numpy): reads and writes GGUF v3 metadata-only files.
"""
import struct
import sys

SCALAR = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}


def read_gguf(data):
    magic, version, n_tensors, n_kv = struct.unpack_from('<4sIQQ', data, 0)
    assert magic == b'GGUF' and version == 3 and n_tensors == 0, 'a metadata-only GGUF v3'
    off = 24

    def rstr(o):
        n, = struct.unpack_from('<Q', data, o)
        return data[o + 8:o + 8 + n].decode('utf-8'), o + 8 + n

    def rval(t, o):
        if t == 8:
            return rstr(o)
        if t == 9:
            et, n = struct.unpack_from('<IQ', data, o)
            o += 12
            vals = []
            for _ in range(n):
                v, o = rval(et, o)
                vals.append(v)
            return (et, vals), o
        fmt = '<' + SCALAR[t]
        return struct.unpack_from(fmt, data, o)[0], o + struct.calcsize(fmt)

    kv = []
    for _ in range(n_kv):
        key, off = rstr(off)
        t, = struct.unpack_from('<I', data, off)
        off += 4
        v, off = rval(t, off)
        kv.append([key, t, v])
    return kv


def write_gguf(kv):
    out = bytearray(struct.pack('<4sIQQ', b'GGUF', 3, 0, len(kv)))

    def wstr(s):
        b = s.encode('utf-8')
        out.extend(struct.pack('<Q', len(b)) + b)

    def wval(t, v):
        if t == 8:
            wstr(v)
        elif t == 9:
            et, vals = v
            out.extend(struct.pack('<IQ', et, len(vals)))
            for x in vals:
                wval(et, x)
        else:
            out.extend(struct.pack('<' + SCALAR[t], v))

    for key, t, v in kv:
        wstr(key)
        out.extend(struct.pack('<I', t))
        wval(t, v)
    out.extend(b'\0' * ((-len(out)) % 32))
    return bytes(out)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    kv = read_gguf(open(src, 'rb').read())
    d = {k: (t, v) for k, t, v in kv}
    tokens = d['tokenizer.ggml.tokens'][1][1]
    scores = d['tokenizer.ggml.scores'][1][1]
    types = d['tokenizer.ggml.token_type'][1][1]
    added = {}
    for text in ('<|file_separator|>', '<end_of_turn>'):
        assert text not in tokens
        added[text] = len(tokens)
        tokens.append(text)
        scores.append(0.0)
        types.append(3)  # control, as in CodeGemma's vocabulary

    ids = {
        'tokenizer.ggml.fim_pre_token_id': tokens.index('<|fim_prefix|>'),
        'tokenizer.ggml.fim_suf_token_id': tokens.index('<|fim_suffix|>'),
        'tokenizer.ggml.fim_mid_token_id': tokens.index('<|fim_middle|>'),
        'tokenizer.ggml.fim_sep_token_id': added['<|file_separator|>'],
        'tokenizer.ggml.eot_token_id': added['<end_of_turn>'],
    }
    out = [e for e in kv if e[0] not in ids]
    for k, v in ids.items():
        out.append([k, 4, v])
    keys = [e[0] for e in out]
    if 'tokenizer.ggml.add_space_prefix' in keys:
        out[keys.index('tokenizer.ggml.add_space_prefix')][2] = False
    else:
        out.append(['tokenizer.ggml.add_space_prefix', 7, False])
    open(dst, 'wb').write(write_gguf(out))
    print('%s: %d tokens, <|file_separator|> %d, <end_of_turn> %d' %
          (dst, len(tokens), added['<|file_separator|>'], added['<end_of_turn>']))


main()
