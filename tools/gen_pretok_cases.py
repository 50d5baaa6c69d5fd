#!/usr/bin/python3
"""Write tests/infer/tokenizer_data/pretok_cases.txt: expected pre-tokenizer splits.

The splits come from the real regexes of each model family, run with the
`regex` module (Debian: python3-regex, for /usr/bin/python3). A chain of
regexes is applied as llama.cpp applies it: each regex splits every piece the
previous one left, and the text between matches stays a piece of its own.
Non-ASCII white space is replaced by \\v before the deepseek CJK range regex,
as the engines it was written for did.

Line format (one case per line, fields separated by tabs, bytes in hex):
    <pre-name> TAB <hex of input> TAB <hex piece>,<hex piece>,...

Usage: /usr/bin/python3 tools/gen_pretok_cases.py > tests/infer/tokenizer_data/pretok_cases.txt
"""
import sys

import regex

GPT2 = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
         r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
CHAINS = {
    'gpt2': [GPT2],
    'starcoder': [r"\p{N}", GPT2],
    'llama3': [LLAMA3],
    'qwen2': [QWEN2],
    'deepseek-coder': ["[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"],
}

WS = regex.compile(r"\s")


def split(text, chain):
    pieces = [text]
    for rx in chain:
        out = []
        for p in pieces:
            subject = p
            if rx == CJK:
                subject = ''.join('\v' if ord(c) > 0x7f and WS.match(c) else c for c in p)
            pos = 0
            for m in regex.finditer(rx, subject):
                if m.start() > pos:
                    out.append(p[pos:m.start()])
                out.append(p[m.start():m.end()])
                pos = m.end()
            if pos < len(p):
                out.append(p[pos:])
        pieces = out
    return pieces


EXTRA = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "#include <stdio.h>\r\n\r\nint main(void) {\r\n\tprintf(\"%d\\n\", 12345);\r\n\treturn 0;\r\n}\r\n",
    "const f = (x) => { return x ** 2; };  // done\n\n\n  \t  \n",
    "I'M SURE THEY'LL SAY IT'S FINE, WE'VE SEEN 'EM; he'D, she'Re",
    "x = 1_000_000 + 3.14159e-10 - 0x1F; y=[1,2,3]",
    "tabs\tand  double  spaces   triple\t\t\tend   ",
    "naïve café résumé Ω≈ç√∫ 東京タワー 한국어 テスト ١٢٣ ½ ²",
    "emoji 🦙🚀 mixed😁text ✅done",
    "   leading and trailing   \n",
    "a\u00a0b\u2003c\u3000d \u2028e",
    "<｜fim▁begin｜>def add(a, b):\n    <｜fim▁hole｜>\n\nprint(add(1, 2))<｜fim▁end｜>",
    "''' docstring ''' \"\"\"more\"\"\" ``` code ```",
    "\n\n\n",
    "!!! ??? ... ---- ==== **** //// \\\\\\\\",
    "e\u0301 combining a\u0308 marks \u0915\u093f",
]


def main():
    sep = "\n__ggml_vocab_test__\n"
    inp = open(sys.argv[1] if len(sys.argv) > 1 else
               '../shared/testdata/vocab/ggml-vocab-deepseek-coder.gguf.inp',
               encoding='utf-8').read()
    tests = inp.split(sep)[:-1] + EXTRA
    for name, chain in CHAINS.items():
        for t in tests:
            if not t:
                continue
            pieces = split(t, chain)
            assert ''.join(pieces) == t
            sys.stdout.write('%s\t%s\t%s\n' % (
                name, t.encode().hex(), ','.join(p.encode().hex() for p in pieces)))


if __name__ == '__main__':
    main()
