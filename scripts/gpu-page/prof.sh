#!/bin/bash
# Per-kernel GPU times natively (wgpu on Vulkan, the page's kernels): CubeCL's profiler, one sync per kernel.
PY=$(command -v python3 || command -v python)
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f $ICD ] && export VK_DRIVER_FILES=$ICD VK_ICD_FILENAMES=$ICD
[ -x /tmp/leakscope ] || "$PY" -c "import lzma,shutil,sys;shutil.copyfileobj(lzma.open(sys.argv[1]),open('/tmp/leakscope','wb'))" "$(dirname "$0")/leakscope.xz"; chmod +x /tmp/leakscope
: > "$OUT/prof.txt"
for b in 128 32; do
  rm -f /tmp/prof-$b.log
  CUBECL_DEBUG_OPTION=profile CUBECL_DEBUG_LOG=/tmp/prof-$b.log timeout 120 /tmp/leakscope attack --csv data/adult-sample.csv --label salary --batch-size $b --seed 0 --iterations 40 --backend wgpu --quiet --json /tmp/p.json > /tmp/p.out 2>&1
  echo "== B=$b rc=$? $(tail -c 300 /tmp/p.out | tr '\n' ' ')" >> "$OUT/prof.txt"
  "$PY" - /tmp/prof-$b.log >> "$OUT/prof.txt" <<'PYEOF'
import re, sys, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'\|\s*([\d.]+)(ns|µs|us|ms|s)\s*\|\s*(\S+)', line)
    if m:
        t[m.group(3)].append(float(m.group(1)) * {'ns': 1e-9, 'µs': 1e-6, 'us': 1e-6, 'ms': 1e-3, 's': 1}[m.group(2)])
tot = sum(sum(v) for v in t.values()) or 1
for k, v in sorted(t.items(), key=lambda kv: -sum(kv[1])):
    print(f'{k:30s} n={len(v):5d} total={sum(v)*1e3:9.2f}ms mean={1e6*sum(v)/len(v):9.1f}us median={1e6*sorted(v)[len(v)//2]:9.1f}us {100*sum(v)/tot:5.1f}%')
PYEOF
done
for b in 128 32; do
  /tmp/leakscope attack --csv data/adult-sample.csv --label salary --batch-size $b --seed 0 --backend wgpu --quiet --json /tmp/w.json > /dev/null 2>&1
  "$PY" -c "import json;r=json.load(open('/tmp/w.json'));print('native wgpu B=$b', r['seconds'], r['accuracy']['total'], r['timing'])" >> "$OUT/prof.txt"
done
cat "$OUT/prof.txt"
