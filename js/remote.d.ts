import type { Backend, CsvInput, Leakscope, RunControl, Table, UpdateFiles } from './index.js';
import type { AttackInfo, AuditOptions, EngineInfo, Limits, ReconstructionReport, RunOptions } from './types.js';

/**
 * Compile the package's WebAssembly module as it streams in (`url`: the package's own by default),
 * on the calling thread, to hand to `LeakscopeWorker.create({ module })` while the page loads.
 */
export declare function compileEngine(url?: string | URL): Promise<WebAssembly.Module>;

/** `Leakscope`'s API with the engine in module Web Workers (the package's `leakscope/remote` entry). */
export declare class LeakscopeWorker {
  /**
   * `workers`: how many CPU workers may split a TabLeak ensemble or an audit (default: logical cores;
   * the engine caps it). `module`: the engine's module compiled on this thread (`compileEngine()`),
   * or a promise of it; without it the first worker fetches and compiles the module itself.
   */
  static create(options?: {
    backend?: Backend;
    workers?: number;
    workerUrl?: string | URL;
    module?: WebAssembly.Module | Promise<WebAssembly.Module>;
    /** Run the CPU engine's code once in the coordinating worker after it starts (default true). */
    warm?: boolean;
  }): Promise<LeakscopeWorker>;
  /** What the engine runs on; after a run, `report.backend` says what really ran and why. */
  readonly backend: EngineInfo;
  /** Resolves once the warm-ups are over in the engine's worker (the GPU's kernels, which a GPU run waits for; the CPU's code run once): the GPU's seconds, or null without a GPU. */
  warmUp(): Promise<number | null>;
  readonly limits: Limits;
  /** The options a run gets for every one it leaves out. */
  readonly defaults: Leakscope['defaults'];
  /** The attacks the engine offers, with their own settings, defaults and limits. */
  readonly attacks: AttackInfo[];
  /** The audit's default grids: `quick` (the page's) and `full` (the CLI's). */
  readonly auditDefaults: { quick: AuditOptions; full: AuditOptions };
  /** CPU workers a run may split its ensemble over. */
  readonly workers: number;
  /**
   * Send a CSV to the engine's worker once (a File is read there). The table's `plan` and
   * `auditPlan` plan for this engine's `workers`; aborting a run's signal (or `table.cancel()`)
   * stops it at the next progress report, and a worker that does not answer within 3 s is replaced.
   */
  loadTable(csv: CsvInput): Promise<Table>;
  /** Attack an update a real client sent, in the engine's worker (see `Leakscope.attackUpdate`). */
  attackUpdate(files: UpdateFiles, options?: Partial<RunOptions>, control?: RunControl): Promise<ReconstructionReport>;
  /** Stop the workers; the object and its tables are unusable afterwards. */
  terminate(): void;
}
