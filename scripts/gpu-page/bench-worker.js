// The engine's own worker with the WebGPU call counter installed first (bench.js starts this one when
// its `trace` option is on, the default).
import './gpu-trace.js';
import './leakscope/js/worker.js';
