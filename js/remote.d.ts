import type { Backend, CsvInput, Progress, Report, RunOptions, SchemaSummary } from './index.js';

/** `Leakscope`'s API with the engine in a module Web Worker (the package's `leakscope/worker` entry). */
export declare class LeakscopeWorker {
  static create(options?: { backend?: Backend; workerUrl?: string | URL }): Promise<LeakscopeWorker>;
  /** The backend and adapter that really run, e.g. "wgpu (WebGPU: nvidia ampere)" or "cpu (…); no WebGPU adapter". */
  readonly backend: string;
  inspect(csv: CsvInput): Promise<SchemaSummary>;
  /** Aborting `signal` cancels at the next progress report; a worker that does not answer within 3 s is replaced. */
  run(
    csv: CsvInput,
    options: RunOptions,
    control?: { onProgress?: (p: Progress) => void; signal?: AbortSignal },
  ): Promise<Report>;
  terminate(): void;
}
