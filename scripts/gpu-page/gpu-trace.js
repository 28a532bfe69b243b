// WebGPU calls counted in a worker, for the bench: every GPUDevice/GPUQueue/GPUBuffer/encoder method
// the engine (wgpu's WebGPU backend) calls is wrapped to count its calls and the milliseconds the call
// itself took on this thread; promises (mapAsync, popErrorScope) also record when they settled, and
// submits and reads are kept as a timeline. Loaded before the engine's worker by bench-worker.js; the
// page asks on the BroadcastChannel 'leakscope-gpu-trace': 'reset' clears, 'get' answers with the
// counters of this worker since the last reset.
const counts = {};
const times = {};
const events = [];
const MAX_EVENTS = 3000;
let t0 = performance.now();

function note(name, ms) {
  counts[name] = (counts[name] ?? 0) + 1;
  times[name] = (times[name] ?? 0) + ms;
}
function event(name, at) {
  if (events.length < MAX_EVENTS) events.push([name, Math.round((at - t0) * 100) / 100]);
}

function wrap(cls, names, { settles = false, timeline = false } = {}) {
  const proto = globalThis[cls]?.prototype;
  if (!proto) return;
  for (const name of names) {
    const f = proto[name];
    if (typeof f !== 'function') continue;
    const label = `${cls}.${name}`;
    proto[name] = function traced(...args) {
      const start = performance.now();
      const out = f.apply(this, args);
      note(label, performance.now() - start);
      if (timeline) event(args[0]?.label ? `${label} ${args[0].label}` : label, start);
      if (settles && out && typeof out.then === 'function') {
        out.then(
          () => {
            const end = performance.now();
            note(`${label} (until settled)`, end - start);
            if (timeline) event(`${label} settled`, end);
          },
          () => {},
        );
      }
      return out;
    };
  }
}

wrap('GPUDevice', ['createBuffer', 'createBindGroup', 'createBindGroupLayout', 'createPipelineLayout',
  'createShaderModule', 'createCommandEncoder', 'createQuerySet', 'pushErrorScope']);
wrap('GPUDevice', ['createComputePipeline'], { timeline: true });
wrap('GPUDevice', ['createComputePipelineAsync', 'popErrorScope'], { settles: true });
wrap('GPUQueue', ['writeBuffer']);
wrap('GPUQueue', ['submit'], { timeline: true });
wrap('GPUQueue', ['onSubmittedWorkDone'], { settles: true, timeline: true });
wrap('GPUBuffer', ['mapAsync'], { settles: true, timeline: true });
wrap('GPUBuffer', ['getMappedRange', 'unmap', 'destroy']);
wrap('GPUCommandEncoder', ['beginComputePass', 'copyBufferToBuffer', 'clearBuffer', 'finish']);
wrap('GPUComputePassEncoder', ['setPipeline', 'setBindGroup', 'dispatchWorkgroups', 'dispatchWorkgroupsIndirect', 'end']);

const channel = new BroadcastChannel('leakscope-gpu-trace');
channel.onmessage = ({ data }) => {
  if (data === 'reset') {
    for (const k of Object.keys(counts)) delete counts[k];
    for (const k of Object.keys(times)) delete times[k];
    events.length = 0;
    t0 = performance.now();
  } else if (data === 'get') {
    channel.postMessage({ counts: { ...counts }, times: { ...times }, events: events.slice(), span_ms: performance.now() - t0 });
  }
};
