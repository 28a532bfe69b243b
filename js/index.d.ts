// The package's API. The data types (options, reports, plans, …) are generated from the engine's
// Rust types into ./types.d.ts; only the classes and functions are declared here.
import type {
  AttackInfo,
  AuditOptions,
  AuditPlan,
  AuditProgress,
  AuditReport,
  CellResult,
  Decision,
  EngineInfo,
  Limits,
  MeasuredRate,
  MemberRange,
  Progress,
  Report,
  RunOptions,
  RunPlan,
  SchemaSummary,
} from './types.js';

export type * from './types.js';

export type Backend = 'auto' | 'webgpu' | 'cpu';
export type CsvInput = string | Uint8Array | ArrayBuffer | Blob;

/** Progress events, and cancellation: an aborted signal stops the run at its next progress report. */
export interface RunControl {
  onProgress?: (p: Progress) => void;
  signal?: AbortSignal;
}

/** An audit's grid: every field may be left out (the defaults fill it), `run.label` is required. */
export type AuditInput = Partial<Omit<AuditOptions, 'run'>> & { run: RunOptions };

/** Progress of a whole audit, and cancellation. */
export interface AuditControl {
  onProgress?: (p: AuditProgress) => void;
  signal?: AbortSignal;
}

/** One share of an ensemble, inverted: the members' relaxed rows and block probabilities, [count, B, d]. */
export interface Members {
  range: MemberRange;
  x: Float32Array;
  probs: Float32Array;
  loss_curve: [number, number][];
  /** Steps each member took before it stopped improving. */
  steps: number[];
}

export declare class Leakscope {
  /** 'auto' times WebGPU and the CPU on each new problem and runs on the faster. */
  static create(options?: { backend?: Backend; module?: WebAssembly.Module }): Promise<Leakscope>;
  /** The compiled WebAssembly module (after `create`), to hand to engines in other workers. */
  static readonly wasmModule: WebAssembly.Module | undefined;
  /** The joined progress of a split run from each share's latest report (null until all reported). */
  static combineProgress(latest: (Progress | null)[], shares: MemberRange[]): Progress | null;
  /** The audit's default grid; `quick`: the smaller one the page runs. */
  static auditDefaults(quick?: boolean): AuditOptions;
  readonly backend: EngineInfo;
  readonly limits: Limits;
  /** The attacks this engine offers, with their own settings, defaults and limits. */
  readonly attacks: AttackInfo[];
  /** The options a run gets for every one it leaves out. */
  readonly defaults: Required<Omit<RunOptions, 'lr'>> & Pick<RunOptions, 'lr'>;
  inspect(csv: CsvInput): Promise<SchemaSummary>;
  run(csv: CsvInput, options: RunOptions, control?: RunControl): Promise<Report>;
  /** How a page with `workers` workers would run this attack. */
  plan(csv: CsvInput, options: RunOptions, workers?: number): Promise<RunPlan>;
  /** Invert members first .. first + count of the ensemble only (one share of a split ensemble). */
  invertMembers(csv: CsvInput, options: RunOptions, range: MemberRange, control?: RunControl): Promise<Members>;
  /** Join shares covering the ensemble once into the report one run would give; `seconds`: wall time measured. */
  assess(csv: CsvInput, options: RunOptions, parts: Members[], seconds: number, workers?: number): Promise<Report>;
  /** Audit the table over a grid of federated settings, every cell on this engine. */
  audit(csv: CsvInput, options: AuditInput, control?: AuditControl): Promise<AuditReport>;
  /** How an audit would run over `workers` workers: its cells, dearest first, each with its share of the work. */
  auditPlan(csv: CsvInput, options: AuditInput, workers?: number): Promise<AuditPlan>;
  /** Run cell `index` of an audit (one worker's part of a split audit). */
  runAuditCell(csv: CsvInput, options: AuditInput, index: number, control?: RunControl): Promise<CellResult>;
  /** The audit's report from every cell's result. */
  auditReport(csv: CsvInput, options: AuditInput, results: CellResult[]): Promise<AuditReport>;
}

/** An audit's cells over this engine and `runRemote`'s runners, each taking the next cell; the report joined. */
export declare function runAudit(
  engine: Leakscope,
  bytes: Uint8Array,
  options: AuditInput,
  control?: AuditControl & {
    workers?: number;
    runRemote?: ((index: number, onStep: (step: number) => void, signal: AbortSignal) => Promise<CellResult>)[];
  },
): Promise<AuditReport>;

/** One attack as the engine plans it (timing `auto`'s candidates first when needed), optionally split over `runShare`. */
export declare function runPlanned(
  engine: Leakscope,
  bytes: Uint8Array,
  options: RunOptions,
  control?: RunControl & {
    workers?: number;
    runShare?: ((range: MemberRange, onProgress: (p: Progress) => void) => Promise<Members>) | null;
  },
): Promise<Report>;

export declare function toBytes(csv: CsvInput): Promise<Uint8Array>;

/** Test hook: make the engine panic with `message`; rejects with a RuntimeError carrying it. */
export declare function panicForTests(message: string): Promise<never>;

export type { Decision, MeasuredRate };
