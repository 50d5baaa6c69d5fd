#!/usr/bin/env python3
"""emu_prep.py IN.cu OUT.cc - rewrites CUDA launches for cuda_emu.h:
`kernel<tmpl><<<grid, block, smem, stream>>>(args)` becomes
`emu::launcher(grid, block, smem, stream).bind(kernel<tmpl>)(args)`.
Everything else is left as it is (the file keeps its line numbers)."""
import re
import sys

src = open(sys.argv[1], encoding='utf-8').read()
pat = re.compile(r'([A-Za-z_][A-Za-z_0-9]*(?:<[^<>;()]*>)?)<<<(.*?)>>>', re.S)
out, n = pat.subn(lambda m: 'emu::launcher(%s).bind(%s)' % (m.group(2), m.group(1)), src)
if n == 0:
    pass  # a file without launches (backend.cu) is fine
with open(sys.argv[2], 'w', encoding='utf-8') as f:
    f.write('#line 1 "%s"\n' % sys.argv[1])
    f.write(out)
