#!/usr/bin/env bash
# Run the leakscope page's engine (WebGPU and CPU) in Debian's chromium-headless-shell on a machine with
# no browser, no internet and no apt. The bundle travels in two folders of the repo, one per call (files
# under /tmp survive from one call to the next while the machine stays warm, ~30 s):
#   .gpu1/  the headless shell + its libraries as chs.tar.xz, first piece (chs.tar.xz.00), the Vulkan/EGL
#           loader debs (debs/), MANIFEST (sha256 of the pieces), this script
#   .gpu2/  chs.tar.xz's second piece, the built page (page.tar.xz), bench.html + bench.js, server.py, this
#           script, MANIFEST, the debs again
#
#   copy 1, .gpu1 only:  bash .gpu1/run.sh stage1   keep the piece, the debs and MANIFEST in $CHS
#   copy 2, .gpu2 only:  bash .gpu2/run.sh stage2   the rest: unpack, set up, probe, bench
#   one line for both calls:  if [ -f .gpu2/run.sh ]; then bash .gpu2/run.sh stage2; else bash .gpu1/run.sh stage1; fi
#   bash .gpu2/run.sh all      when both folders travel in one call;  status: what $CHS holds
#
# Environment (all optional): CHS (/tmp/chs), OUT (./out), DEB_ROOT (/: where the
# loader debs are unpacked; another folder keeps / untouched, for local tests),
# VARIANTS ("A B C D S": browser-flag sets probed in turn until one shows a hardware WebGPU adapter; S is
# the project's tests' SwiftShader setting, a control), PROBE_TIMEOUT (30 s per probe), BENCH_TIMEOUT (240 s),
# BENCH_QUERY (extra URL options for bench.js, e.g. "batches=32&webgpuSteps=5,10"), EXTRA_FLAGS (appended to
# every launch), CHROME_WRAP (a command the browser is started under, for tests).
# $OUT gets four files: result.json, log.txt, chrome-stderr.txt, env.txt.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
CHS=${CHS:-/tmp/chs}
OUT=${OUT:-$PWD/out}
DEB_ROOT=${DEB_ROOT:-/}
VARIANTS=${VARIANTS:-A C B D S}
PROBE_TIMEOUT=${PROBE_TIMEOUT:-30}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-240}
BASE_TIMEOUT=${BASE_TIMEOUT:-150}
BASE_QUERY=${BASE_QUERY:-}
BENCH_QUERY=${BENCH_QUERY:-}
EXTRA_FLAGS=${EXTRA_FLAGS:-}
PY=$(command -v python3 || command -v python)
export PATH="$PATH:/usr/local/nvidia/bin" HOME="${HOME:-/root}"
T0=$SECONDS

say() { echo "[run.sh +$((SECONDS - T0))s] $*"; [ -d "$CHS" ] && echo "[run.sh $(date -u +%T) +$((SECONDS - T0))s] $*" >>"$CHS/run.log"; }
mkdir -p "$CHS"

# ---- part 1: chunks -> /tmp/chs/chs ----------------------------------------------------------------------
manifest() { for m in "$HERE/MANIFEST" "$REPO/.gpu2/MANIFEST" "$REPO/.gpu1/MANIFEST" "$CHS/MANIFEST"; do [ -f "$m" ] && { echo "$m"; return; }; done; }

ingest() {
  mkdir -p "$CHS/parts" "$CHS/debs"
  local f n=0
  for f in "$REPO"/.gpu1/chs.tar.xz.* "$REPO"/.gpu1/*/chs.tar.xz.* "$REPO"/.gpu2/chs.tar.xz.* "$REPO"/.gpu2/*/chs.tar.xz.*; do
    [ -f "$f" ] || continue
    cp -f "$f" "$CHS/parts/" && n=$((n + 1))
  done
  for f in "$REPO"/.gpu1/debs/*.deb "$REPO"/.gpu2/debs/*.deb; do [ -f "$f" ] && cp -f "$f" "$CHS/debs/"; done
  local m; m=$(manifest); [ -n "$m" ] && [ "$m" != "$CHS/MANIFEST" ] && cp -f "$m" "$CHS/MANIFEST"
  say "ingested $n chunk(s) from the carried tree; $CHS/parts holds: $(cd "$CHS/parts" && ls | tr '\n' ' ')"
}

# Unpack when every chunk named in the MANIFEST is present and sound. Returns 0 when $CHS/chs is ready.
unpack() {
  [ -f "$CHS/MANIFEST" ] || { say "no MANIFEST yet (copy .gpu1 or .gpu2 over)"; return 1; }
  if [ -f "$CHS/chs/.complete" ] && cmp -s "$CHS/chs/.complete" "$CHS/MANIFEST"; then say "part 1 already unpacked in $CHS/chs"; return 0; fi
  local missing="" bad="" name sum
  while read -r sum name; do
    case "$name" in chs.tar.xz.*) ;; *) continue;; esac
    if [ ! -f "$CHS/parts/$name" ]; then missing="$missing $name"
    elif [ "$(sha256sum "$CHS/parts/$name" | cut -d' ' -f1)" != "$sum" ]; then bad="$bad $name"; rm -f "$CHS/parts/$name"; fi
  done < <(grep -v '^#' "$CHS/MANIFEST")
  if [ -n "$bad" ]; then say "corrupt chunk(s), removed:$bad"; fi
  if [ -n "$missing$bad" ]; then say "part 1 not complete yet: missing$missing$bad"; return 1; fi
  say "all chunks present; unpacking to $CHS/chs"
  rm -rf "$CHS/chs.new"; mkdir -p "$CHS/chs.new"
  local chunks; chunks=$(grep -v '^#' "$CHS/MANIFEST" | awk '$2 ~ /^chs\.tar\.xz\./ {print $2}' | sort)
  # python's lzma (the image may have no xz binary); tar -xJ as a fallback
  if (cd "$CHS/parts" && cat $chunks) | "$PY" -c '
import sys, tarfile
t = tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz")
try:
    t.extractall(sys.argv[1], filter="fully_trusted")
except TypeError:
    t.extractall(sys.argv[1])
' "$CHS/chs.new" 2>"$CHS/unpack.err" || (cd "$CHS/parts" && cat $chunks) | tar -xJf - -C "$CHS/chs.new"; then
    rm -rf "$CHS/chs"; mv "$CHS/chs.new/chs" "$CHS/chs" && rm -rf "$CHS/chs.new"
    cp "$CHS/MANIFEST" "$CHS/chs/.complete"
    say "part 1 unpacked: $(du -sh "$CHS/chs" | cut -f1)"
    return 0
  fi
  say "unpacking failed: $(tail -3 "$CHS/unpack.err")"; return 1
}

# ---- part 2 ------------------------------------------------------------------------------------------------
loaders() {
  local f n=0
  for f in "$CHS"/debs/*.deb; do [ -f "$f" ] || continue; dpkg -x "$f" "$DEB_ROOT" && n=$((n + 1)); done
  if [ "$DEB_ROOT" = / ]; then ldconfig; fi
  say "loader debs unpacked into $DEB_ROOT: $n"
}

# The browser's library path: the carried libraries, the loaders when unpacked elsewhere than /, the driver's.
chrome_ld() {
  local p="$CHS/chs/lib" d
  [ "$DEB_ROOT" != / ] && p="$p:$DEB_ROOT/usr/lib/x86_64-linux-gnu"
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [ -d "$d" ] && p="$p:$d"; done
  echo "$p${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

run_vulkaninfo() { # $1: label
  local lib; lib=$(chrome_ld)
  echo "== vulkaninfo --summary ($1; VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset})"
  if command -v vulkaninfo >/dev/null; then timeout 30 vulkaninfo --summary 2>&1 | head -60
  else # the carried one (Debian's vulkan-tools); the system's loader, else the browser's copy of it
    LD_LIBRARY_PATH="$lib" timeout 30 "$CHS/chs/vulkaninfo" --summary 2>&1 | head -60
    if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' && [ "$DEB_ROOT" = / ]; then
      echo "== (no libvulkan.so.1 in ldconfig: with the browser's copy)"
      LD_LIBRARY_PATH="$lib:$CHS/chs" timeout 30 "$CHS/chs/vulkaninfo" --summary 2>&1 | head -60
    fi
  fi
}

environment() {
  local env="$CHS/env.txt"; : >"$env"
  {
    echo "== date: $(date -u)   host: $(uname -a)"
    grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release 2>/dev/null
    echo "== cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc); mem: $(free -g 2>/dev/null | awk '/Mem:/ {print $2 " GiB"}')"
    echo "== python: $("$PY" --version 2>&1)   xz: $(command -v xz || echo none)   dpkg: $(command -v dpkg || echo none)"
    echo "== nvidia-smi -L"; (command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi -L) 2>&1 || echo "no nvidia-smi"
    (command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv) 2>&1
    echo "== /dev: $(ls /dev | grep -E '^(nvidia|dri)' | tr '\n' ' ')"
    echo "== /usr/local/nvidia:"; ls /usr/local/nvidia /usr/local/nvidia/lib64 2>&1 | head -40 | tr '\n' ' '; echo
    echo "== ICD / vendor files:"
    ls -l /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d \
      /usr/share/glvnd/egl_vendor.d /usr/local/nvidia/share/glvnd/egl_vendor.d 2>&1
    cat /usr/local/nvidia/share/vulkan/icd.d/*.json 2>/dev/null
    echo "== ldconfig -p (vulkan, EGL, GLX, GLdispatch, nvidia):"
    ldconfig -p 2>/dev/null | grep -iE 'vulkan|libEGL|libGLX|GLdispatch|nvidia' | head -40
  } >>"$env" 2>&1
  # The Vulkan driver: as the system finds it, then (if no NVIDIA device shows) through the driver's own json.
  local ICD_NV=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json EGL_NV=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  local first; first=$(run_vulkaninfo "as found" 2>&1); echo "$first" >>"$env"
  if ! echo "$first" | grep -qiE 'vendorID *= *0x10de|deviceName *= *NVIDIA' && [ -f "$ICD_NV" ]; then
    export VK_DRIVER_FILES=$ICD_NV VK_ICD_FILENAMES=$ICD_NV
    say "no NVIDIA Vulkan device as found: VK_DRIVER_FILES=$ICD_NV"
    run_vulkaninfo "with VK_DRIVER_FILES" >>"$env" 2>&1
  fi
  if ! ls /usr/share/glvnd/egl_vendor.d/ /etc/glvnd/egl_vendor.d/ 2>/dev/null | grep -qi nvidia && [ -f "$EGL_NV" ]; then
    export __EGL_VENDOR_LIBRARY_FILENAMES=$EGL_NV
    say "no NVIDIA EGL vendor file in the standard places: __EGL_VENDOR_LIBRARY_FILENAMES=$EGL_NV"
  fi
  CHROME_LD=$(chrome_ld)
  {
    echo "== chrome: $(LD_LIBRARY_PATH=$CHROME_LD "$CHS/chs/chromium-headless-shell" --version 2>&1 | head -1)"
    echo "== ldd, unresolved: $(LD_LIBRARY_PATH=$CHROME_LD ldd "$CHS/chs/chromium-headless-shell" | grep -c 'not found')"
    LD_LIBRARY_PATH=$CHROME_LD ldd "$CHS/chs/chromium-headless-shell" | grep 'not found'
    echo "== chrome LD_LIBRARY_PATH=$CHROME_LD"
    echo "== env: $(env | grep -E '^(VK_|__EGL|__GLX|DISPLAY|WAYLAND|XDG_)' | tr '\n' ' ')"
  } >>"$env" 2>&1
  say "environment written ($(grep -c . "$env") lines); nvidia-smi -L: $(command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi -L 2>&1 | head -2 | tr '\n' ' ')"
  grep -E 'deviceName|driverName|driverInfo|apiVersion|ERROR' "$env" | sort -u | head -12 | sed 's/^/    /'
}

# Flag sets, probed in this order. A: the combination known to give Chrome a hardware WebGPU adapter in
# headless Linux (ANGLE on Vulkan, Viz/Skia on Vulkan, no Vulkan surface). B: GL on SwiftShader (so GL init
# cannot fail), Skia and Dawn on Vulkan. C: ANGLE on Vulkan for GL, without the Vulkan feature (Skia on GL:
# here a Vulkan driver Skia rejects, e.g. lavapipe without samplerYcbcrConversion, made A and B hang).
# D: GL through the native EGL (glvnd + the NVIDIA vendor file), Vulkan feature on. S: the project's tests'
# flags (headless' default GL, SwiftShader): a control, and the bench's fallback when no variant shows a
# hardware adapter.
COMMON=(--no-sandbox --headless --enable-logging=stderr --v=0 --disable-dev-shm-usage --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost')
flags() {
  case "$1" in
    A) echo "--enable-gpu --enable-unsafe-webgpu --enable-features=Vulkan --use-angle=vulkan --disable-vulkan-surface --ignore-gpu-blocklist --use-vulkan" ;;
    B) echo "--enable-unsafe-webgpu --enable-features=Vulkan --use-vulkan=native --use-angle=swiftshader --disable-vulkan-surface --ignore-gpu-blocklist" ;;
    C) echo "--enable-gpu --enable-unsafe-webgpu --use-angle=vulkan --ignore-gpu-blocklist" ;;
    D) echo "--enable-gpu --enable-unsafe-webgpu --use-gl=angle --use-angle=gl-egl --enable-features=Vulkan --disable-vulkan-surface --ignore-gpu-blocklist" ;;
    S) echo "--enable-unsafe-webgpu" ;;
    *) echo "" ;;
  esac
}

CPID=""; SPID=""
cleanup() {
  [ -n "$CPID" ] && { kill -TERM -- "-$CPID" 2>/dev/null; sleep 1; kill -KILL -- "-$CPID" 2>/dev/null; }
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  CPID=""; SPID=""
}
trap cleanup EXIT

# launch NAME VARIANT QUERY TIMEOUT [PAGE]: one browser run of bench.html (or PAGE, e.g. base/bench.html);
# its files land in $CHS/run/NAME
launch() {
  local name=$1 v=$2 query=$3 limit=$4 page=${5:-bench.html} d="$CHS/run/$1"
  rm -rf "$d"; mkdir -p "$d"
  OUT="$d" "$PY" "$HERE/server.py" --root "$CHS/www" --port 0 --port-file "$d/port" --timeout $((limit + 15)) >"$d/server.out" 2>&1 &
  SPID=$!
  local i; for i in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
  if [ ! -s "$d/port" ]; then say "$name: the server did not start: $(tail -3 "$d/server.out")"; cleanup; return 1; fi
  local url="http://127.0.0.1:$(cat "$d/port")/$page?variant=$v${query:+&$query}"
  local f; f="$(flags "$v") $EXTRA_FLAGS"
  echo "$f" >"$d/flags"
  say "$name: launching variant $v ($f) on $url, limit ${limit}s"
  # Job control on for this one job: the browser and its children get a process group of their own, ended
  # together below (and, unlike setsid, no session of their own, so whatever ends this script still ends them if this
  # script is killed).
  set -m
  # shellcheck disable=SC2086
  ${CHROME_WRAP:-} env LD_LIBRARY_PATH="$CHROME_LD" "$CHS/chs/chromium-headless-shell" "${COMMON[@]}" $f \
    --user-data-dir="$d/profile" "$url" >"$d/chrome-stdout.txt" 2>"$d/chrome-stderr.txt" </dev/null &
  CPID=$!
  set +m
  local end=$((SECONDS + limit)) why="result posted"
  while kill -0 "$SPID" 2>/dev/null; do
    if ! kill -0 "$CPID" 2>/dev/null; then why="the browser exited first"; sleep 1; break; fi
    if [ $SECONDS -ge $end ]; then why="timeout (${limit}s)"; break; fi
    sleep 0.5
  done
  cleanup          # the browser runs until it is ended: end its process group, then the server
  wait 2>/dev/null
  echo "$why" >"$d/why"
  say "$name: $why after $((SECONDS - end + limit))s; $(grep -c . "$d/log.txt" 2>/dev/null || echo 0) log lines; result: $([ -f "$d/result.json" ] && echo yes || echo none)"
}

classify() { # prints hardware | software | none | noresult for $CHS/run/$1/result.json
  "$PY" - "$CHS/run/$1/result.json" <<'EOF'
import json, sys
try:
    a = json.load(open(sys.argv[1])).get('adapter') or {}
except Exception:
    print('noresult'); sys.exit()
print('none' if not a.get('found') else ('software' if a.get('software') else 'hardware'))
EOF
}

collect() { # merge the runs into $OUT's four files
  mkdir -p "$OUT"
  cp -f "$CHS/env.txt" "$OUT/env.txt" 2>/dev/null
  : >"$OUT/log.txt"; : >"$OUT/chrome-stderr.txt"
  { echo "##### run.sh"; cat "$CHS/run.log" 2>/dev/null; } >>"$OUT/log.txt"
  local d
  for d in "$CHS"/run/*/; do
    [ -d "$d" ] || continue
    local n; n=$(basename "$d")
    { echo; echo "##### $n: flags: $(cat "$d/flags" 2>/dev/null); ended: $(cat "$d/why" 2>/dev/null)"; cat "$d/log.txt" 2>/dev/null; tail -5 "$d/server.out" 2>/dev/null; } >>"$OUT/log.txt"
    { echo; echo "##### $n: flags: $(cat "$d/flags" 2>/dev/null); $(wc -c <"$d/chrome-stderr.txt" 2>/dev/null) B"
      if [ "$(wc -c <"$d/chrome-stderr.txt" 2>/dev/null || echo 0)" -gt 1500000 ]; then
        echo "### most repeated lines:"; sed -E 's/^\[[0-9\/.:]+//' "$d/chrome-stderr.txt" | sort | uniq -c | sort -rn | head -15 | cut -c1-400
        echo "### first 400 kB:"; head -c 400000 "$d/chrome-stderr.txt"; echo; echo "### last 600 kB:"; tail -c 600000 "$d/chrome-stderr.txt"
      else cat "$d/chrome-stderr.txt" 2>/dev/null; fi; } >>"$OUT/chrome-stderr.txt"
  done
  "$PY" - "$CHS/run" "$OUT/result.json" "${CHOSEN:-}" <<'EOF'
import glob, json, os, sys
runs, out, chosen = sys.argv[1], sys.argv[2], sys.argv[3]
merged = {'chosen_variant': chosen or None, 'probes': {}, 'bench': None, 'base': None}
for d in sorted(glob.glob(os.path.join(runs, '*'))):
    name = os.path.basename(d)
    def read(f, default=None):
        try:
            return open(os.path.join(d, f)).read().strip()
        except OSError:
            return default
    try:
        r = json.load(open(os.path.join(d, 'result.json')))
    except Exception:
        r = None
    entry = {'flags': read('flags'), 'ended': read('why')}
    if name.startswith('probe-'):
        entry['adapter'] = (r or {}).get('adapter')
        entry['adapter_high_performance'] = (r or {}).get('adapter_high_performance')
        entry['errors'] = (r or {}).get('errors')
        merged['probes'][name[6:]] = entry
    else:
        entry['result'] = r
        merged['base' if name.startswith('base-') else 'bench'] = entry
json.dump(merged, open(out, 'w'), indent=2)
b = (merged['bench'] or {}).get('result') or {}
print('== summary')
for v, p in merged['probes'].items():
    a = p.get('adapter') or {}
    print(f"probe {v}: {'adapter ' + json.dumps(a.get('info')) + (' SOFTWARE' if a.get('software') else ' hardware') if a.get('found') else 'no adapter: ' + str(a.get('error'))} ({p['ended']})")
if b:
    a = b.get('adapter') or {}
    print(f"bench variant {b.get('variant')}: finished={b.get('finished')} elapsed={b.get('elapsed_s', 0):.1f}s adapter={json.dumps(a.get('info'))} software={a.get('software')}")
    for r in b.get('runs', []):
        if r.get('ok'):
            print(f"  {r['tag']:<34} wall {r['wall_ms']:9.0f} ms  engine {r['report_seconds']:8.3f} s  {r['ms_per_step']:8.3f} ms/step  "
                  f"acc {100 * (r.get('accuracy_total') or 0):5.1f}%  answered@{r.get('answered_after')}  [{r.get('backend_label')}]")
        else:
            print(f"  {r['tag']:<34} {'skipped: ' + r['skipped'] if r.get('skipped') else 'FAILED: ' + str(r.get('error'))}")
    for e in b.get('webgpu_extrapolated', []):
        print(f"  webgpu B={e['batch']}: {e['ms_per_step']:.3f} ms/step, setup {e['setup_s']:.2f} s, {e['iterations']} steps ~ {e['full_estimate_s']:.1f} s")
    for s in b.get('skipped', []):
        print(f"  skipped: {s}")
    for e in b.get('errors', [])[:10]:
        print(f"  error: {e}")
EOF
  say "collected into $OUT: $(ls "$OUT" | tr '\n' ' ')"
}

stage2() {
  ingest
  unpack || { say "stage2 needs every piece of chs.tar.xz: run stage1 with .gpu1 first (within ~30 s)"; collect; return 1; }
  [ -f "$HERE/page.tar.xz" ] || { say "no page.tar.xz beside run.sh: run stage2 from .gpu2"; return 1; }
  rm -rf "$CHS/www"; mkdir -p "$CHS/www"
  "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$HERE/page.tar.xz" "$CHS/www" \
    || tar -xJf "$HERE/page.tar.xz" -C "$CHS/www"
  cp -f "$HERE/bench.html" "$HERE/bench.js" "$HERE/bench-worker.js" "$HERE/gpu-trace.js" "$CHS/www/"
  # An earlier build of the page, benched the same way after this one (page-base.tar.xz, optional).
  if [ -f "$HERE/page-base.tar.xz" ]; then
    mkdir -p "$CHS/www/base"
    "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$HERE/page-base.tar.xz" "$CHS/www/base" \
      || tar -xJf "$HERE/page-base.tar.xz" -C "$CHS/www/base"
    cp -f "$HERE/bench.html" "$HERE/bench.js" "$HERE/bench-worker.js" "$HERE/gpu-trace.js" "$CHS/www/base/"
  fi
  say "page in $CHS/www: $(find "$CHS/www" -type f | wc -l) files, $(du -sh "$CHS/www" | cut -f1)"
  loaders
  environment
  rm -rf "$CHS/run"; CHOSEN=""
  local v c soft=""
  for v in $VARIANTS; do
    launch "probe-$v" "$v" "probe=1" "$PROBE_TIMEOUT"
    c=$(classify "probe-$v"); say "probe $v: $c"
    if [ "$c" = hardware ]; then CHOSEN=$v; break; fi
    [ "$c" = software ] && [ -z "$soft" ] && soft=$v
  done
  # no hardware adapter: the first variant with any (SwiftShader) adapter, else the first
  CHOSEN=${CHOSEN:-${soft:-${VARIANTS%% *}}}
  say "bench with variant $CHOSEN"
  local deadline=$((BENCH_TIMEOUT - 30))
  launch "bench-$CHOSEN" "$CHOSEN" "deadline=$deadline${BENCH_QUERY:+&$BENCH_QUERY}" "$BENCH_TIMEOUT"
  if [ -d "$CHS/www/base" ]; then
    say "bench of the earlier build (page-base.tar.xz) with variant $CHOSEN"
    launch "base-$CHOSEN" "$CHOSEN" "deadline=$((BASE_TIMEOUT - 30))${BASE_QUERY:+&$BASE_QUERY}" "$BASE_TIMEOUT" base/bench.html
  fi
  collect
  local f table
  for f in bench base; do
    table=$("$PY" "$HERE/summary.py" "$OUT/result.json" "$f") && printf '== %s\n%s\n' "$f" "$table" | tee -a "$OUT/summary.md"
  done
}

case "${1:-}" in
  stage1) ingest; unpack; say "stage1 done: $CHS holds $(ls "$CHS/parts" | tr '\n' ' ')(the rest travels with .gpu2)"; ls -l "$CHS/parts" ;;
  stage2) stage2 ;;
  all) stage2 ;;
  status) ingest; unpack; ls -la "$CHS" "$CHS/parts" ;;
  *) echo "usage: $0 stage1|stage2|all|status" >&2; exit 2 ;;
esac
