import type { Backend, CsvInput, Report, RunControl, RunOptions, SchemaSummary } from './index.js';

/** `Leakscope`'s API with the engine in a module Web Worker (the package's `leakscope/worker` entry). */
export declare class LeakscopeWorker {
  /** `workers`: how many module workers may split a TabLeak ensemble on the CPU (default: logical cores, ≤ 8). */
  static create(options?: { backend?: Backend; workers?: number; workerUrl?: string | URL }): Promise<LeakscopeWorker>;
  /** The backend and adapter that really run, e.g. "wgpu (WebGPU: nvidia ampere)" or "cpu (…); no WebGPU adapter". */
  readonly backend: string;
  /** Workers a run uses at most: 1 on WebGPU. */
  readonly workers: number;
  inspect(csv: CsvInput): Promise<SchemaSummary>;
  /** Aborting `signal` cancels at the next progress report; a worker that does not answer within 3 s is replaced. */
  run(csv: CsvInput, options: RunOptions, control?: RunControl): Promise<Report>;
  terminate(): void;
}
