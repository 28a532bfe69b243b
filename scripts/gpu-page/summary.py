#!/usr/bin/env python3
"""The bench's result (bench.js's JSON, or run.sh's merged result.json) as Markdown tables: each run's
time, accuracy and backend, then where the engine's time went (the report's `timing`) and the WebGPU
calls it made (gpu-trace.js), per step.

  python3 scripts/gpu-page/summary.py out/bench-page/result.json
  python3 scripts/gpu-page/summary.py out/result.json base     run.sh's file: the earlier build's bench

Exits 1 where the file holds no such bench.
"""
import json
import sys


def load(path, which='bench'):
    r = json.load(open(path))
    if 'bench' in r:  # run.sh's merged file: its 'bench' or 'base'
        r = (r.get(which) or {}).get('result') or {}
    return r


def main(path, which='bench'):
    r = load(path, which)
    if not r:
        sys.exit(1)
    a = r.get('adapter') or {}
    info = a.get('info') or {}
    print(f"adapter: {json.dumps(info)}{' (software)' if a.get('software') else ''}; "
          f"{r.get('hardware_concurrency')} cores; {r.get('user_agent', '')[:90]}")
    for key, e in (r.get('engines') or {}).items():
        w = e.get('warm_up') or {}
        print(f"engine {key}: created in {e.get('create_ms', 0):.0f} ms, table {e.get('load_table_ms', 0):.0f} ms"
              + (f", kernels compiled {w.get('engine_s'):.2f} s (ready {w.get('ready_ms', 0) / 1000:.2f} s after create began)"
                 if w.get('engine_s') is not None else '') + (f"; {e['error']}" if e.get('error') else ''))
    print()
    print('| run | backend | wall s | engine s | ms/step | first step ms | accuracy % | answered after |')
    print('|---|---|---|---|---|---|---|---|')
    for x in r.get('runs', []):
        if not x.get('ok'):
            print(f"| {x['tag']} | {'skipped: ' + x['skipped'] if x.get('skipped') else 'FAILED: ' + str(x.get('error'))} |||||||")
            continue
        first = x.get('first_step_ms')
        print(f"| {x['tag']} | {x.get('backend_label')} | {x['wall_ms'] / 1000:.2f} | {x['report_seconds']:.2f} | "
              f"{x['ms_per_step']:.2f} | {'' if first is None else f'{first:.0f}'} | {100 * (x.get('accuracy_total') or 0):.1f} | "
              f"{x.get('answered_after') or ''} |")
    for e in r.get('webgpu_extrapolated', []):
        print(f"\nWebGPU B={e['batch']}: {e['ms_per_step']:.3f} ms a step from the {e['short']}- and {e['long']}-step runs; "
              f"set-up {e['setup_s']:.2f} s; {e['iterations']} steps ~ {e['full_estimate_s']:.1f} s")
    rows = [x for x in r.get('runs', []) if x.get('ok') and (x.get('timing') or (x.get('webgpu_calls') or {}).get('counts'))]
    if not rows:
        return
    calls = ['GPUQueue.submit', 'GPUComputePassEncoder.dispatchWorkgroups', 'GPUDevice.createBindGroup', 'GPUDevice.createBuffer',
             'GPUQueue.writeBuffer', 'GPUBuffer.mapAsync', 'GPUDevice.createComputePipeline']
    short = ['submit', 'dispatch', 'bind group', 'buffer', 'write', 'mapAsync', 'pipeline']
    print('\nWhere the time went (report.timing; WebGPU calls per step from gpu-trace.js):\n')
    print('| run | inversions | steps | issuing ms/step | readbacks | waiting s | first losses s | '
          + ' | '.join(short) + ' | mapAsync waited s |')
    print('|---|---|---|---|---|---|---|' + '---|' * len(short) + '---|')
    for x in rows:
        t = x.get('timing') or {}
        steps = t.get('steps') or x['iterations']
        c = (x.get('webgpu_calls') or {}).get('counts', {})
        ms = (x.get('webgpu_calls') or {}).get('ms', {})
        per = ' | '.join(f"{c.get(k, 0) / steps:.2f}" for k in calls)
        waited = ms.get('GPUBuffer.mapAsync (until settled)')
        first = t.get('first_loss_seconds')
        print(f"| {x['tag']} | {t.get('inversions', '')} | {steps} | {1000 * t.get('issue_seconds', 0) / steps:.3f} | "
              f"{t.get('readbacks', '')} | {t.get('wait_seconds', 0):.2f} | {'' if first is None else f'{first:.2f}'} | {per} | "
              f"{'' if waited is None else f'{waited / 1000:.2f}'} |")


if __name__ == '__main__':
    main(*(sys.argv[1:3] or ['result.json']))
