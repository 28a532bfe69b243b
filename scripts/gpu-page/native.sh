#!/bin/bash
# The native CLI on the same machine as the page's bench: one thread at B = 32 and 8, all cores at B = 128.
PY=$(command -v python3 || command -v python)
"$PY" -c "import lzma,shutil,sys;shutil.copyfileobj(lzma.open(sys.argv[1]),open('/tmp/leakscope','wb'))" "$(dirname "$0")/leakscope.xz" && chmod +x /tmp/leakscope
: > "$OUT/native.jsonl"
one() { # threads batch
  local t0=$(date +%s.%N)
  RAYON_NUM_THREADS=$1 /tmp/leakscope attack --csv data/adult-sample.csv --label salary --batch-size $2 --seed 0 --quiet --json /tmp/n.json >/tmp/n.out 2>&1
  local rc=$?
  "$PY" - "$1" "$2" "$rc" "$t0" "$(date +%s.%N)" >> "$OUT/native.jsonl" <<'PYEOF'
import json, sys
t, b, rc, t0, t1 = sys.argv[1:]
try:
    r = json.load(open('/tmp/n.json'))
    out = {'threads': int(t), 'batch': int(b), 'rc': int(rc), 'wall_s': float(t1) - float(t0), 'seconds': r['seconds'], 'accuracy': r['accuracy'], 'timing': r.get('timing')}
except Exception as e:
    out = {'threads': int(t), 'batch': int(b), 'rc': int(rc), 'error': str(e), 'log': open('/tmp/n.out').read()[-500:]}
print(json.dumps(out))
PYEOF
}
one 1 32; one 1 8; one 1 32; one 1 8; one 16 128; one 16 32
cat "$OUT/native.jsonl"
