#!/bin/sh
# Export the finished run to models/infill-default.gguf (Q8_0) and check it against torch.
# usage: tools/train/finalize.sh RUN_NAME   (run from the repository root)
set -e
run=tools/runs/$1
py=/usr/bin/python3
nice -n 5 $py tools/train/export.py $run/final.pt models/infill-default.gguf --type q8_0
nice -n 5 $py tools/train/export.py $run/final.pt $run/f32.gguf --type f32
echo "== F32 export vs torch"
OMP_NUM_THREADS=1 nice -n 5 $py tools/train/check_gguf.py $run/f32.gguf $run/final.pt
echo "== Q8_0 export vs torch (reference json written from the Q8_0 weights)"
OMP_NUM_THREADS=1 nice -n 5 $py tools/train/check_gguf.py models/infill-default.gguf $run/final.pt \
    --json models/infill-default.reference.json
nice -n 5 $py tools/train/export.py $run/final.pt $run/f16.gguf --type f16
echo "== held-out loss of the exported weights"
nice -n 5 $py tools/train/quant_loss.py $run/final.pt models/infill-default.gguf $run/f16.gguf
sha256sum models/infill-default.gguf
