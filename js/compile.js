// The engine's WebAssembly module compiled, once per caller: in Node from the file, in a browser as
// it streams in. A compiled WebAssembly.Module can be posted to workers, which then share its
// machine code (and its optimised tier) instead of each compiling the module again.
const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;

/** Compile the module at `url` (the package's own by default). */
export async function compileModule(url = new URL('../pkg/leakscope_bg.wasm', import.meta.url)) {
  if (isNode) return WebAssembly.compile(await (await import('node:fs/promises')).readFile(url));
  if (WebAssembly.compileStreaming) {
    try {
      return await WebAssembly.compileStreaming(fetch(url));
    } catch {
      // Served without the application/wasm type: compile from the bytes instead.
    }
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`the engine's module could not be fetched from ${url}: HTTP ${response.status}`);
  return WebAssembly.compile(await response.arrayBuffer());
}
