import type { Backend, CsvInput, Leakscope, RunControl } from './index.js';
import type { EngineInfo, Limits, Report, RunOptions, SchemaSummary } from './types.js';

/** `Leakscope`'s API with the engine in module Web Workers (the package's `leakscope/worker` entry). */
export declare class LeakscopeWorker {
  /** `workers`: how many CPU workers may split a TabLeak ensemble (default: logical cores; the engine caps it). */
  static create(options?: { backend?: Backend; workers?: number; workerUrl?: string | URL }): Promise<LeakscopeWorker>;
  /** What the engine runs on; after a run, `report.backend` says what really ran and why. */
  readonly backend: EngineInfo;
  readonly limits: Limits;
  /** The options a run gets for every one it leaves out. */
  readonly defaults: Leakscope['defaults'];
  /** CPU workers a run may split its ensemble over. */
  readonly workers: number;
  inspect(csv: CsvInput): Promise<SchemaSummary>;
  /** Aborting `signal` cancels at the next progress report; a worker that does not answer within 3 s is replaced. */
  run(csv: CsvInput, options: RunOptions, control?: RunControl): Promise<Report>;
  terminate(): void;
}
