// The package's API. The data types (options, reports, plans, …) are generated from the engine's
// Rust types into ./types.d.ts; only the classes and functions are declared here.
import type {
  AttackInfo,
  AuditOptions,
  AuditPlan,
  AuditProgress,
  AuditReport,
  Decision,
  EngineInfo,
  Limits,
  MeasuredRate,
  PrivacyAnswer,
  PrivacyQuery,
  Progress,
  ReconstructionReport,
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

/** An update a real client sent: the table's encoding (`leakscope encoding`), the update, and the
 * network the server sent (safetensors or numpy .npz; left out for a leakscope-update/1 JSON). */
export interface UpdateFiles {
  encoding: CsvInput;
  update: CsvInput;
  weights?: CsvInput;
}

/** An audit's grid: every field may be left out (the defaults fill it), `run.label` is required. */
export type AuditInput = Partial<Omit<AuditOptions, 'run'>> & { run: RunOptions };

/** Progress of a whole audit, and cancellation. */
export interface AuditControl {
  onProgress?: (p: AuditProgress) => void;
  signal?: AbortSignal;
}

export declare class Leakscope {
  /**
   * 'auto' times WebGPU and the CPU on each new problem and runs on the faster. `warm` (default
   * true): run the CPU engine's code once in the background, so that it is optimised before the
   * first run (a run asked meanwhile cuts it short).
   */
  static create(options?: { backend?: Backend; module?: WebAssembly.Module; warm?: boolean }): Promise<Leakscope>;
  /** The compiled WebAssembly module (after `create`), to hand to engines in other workers. */
  static readonly wasmModule: WebAssembly.Module | undefined;
  /** The audit's default grid (after `create`); `quick`: the smaller one the page runs. */
  static auditDefaults(quick?: boolean): AuditOptions;
  /** ε over rounds with client sampling (RDP, as Opacus), per round and against the server (after `create`). */
  static privacy(query: PrivacyQuery): PrivacyAnswer;
  readonly backend: EngineInfo;
  /** Resolves once the warm-ups `create` started are over (the GPU's kernels, which a GPU run waits for; the CPU's code run once): the GPU's seconds, or null without a GPU. */
  warmUp(): Promise<number | null>;
  readonly limits: Limits;
  /** The attacks this engine offers, with their own settings, defaults and limits. */
  readonly attacks: AttackInfo[];
  /** The options a run gets for every one it leaves out. */
  readonly defaults: Required<Omit<RunOptions, 'lr'>> & Pick<RunOptions, 'lr'>;
  /** Attack an update a real client sent; `batchSize` and `labels` only where the files do not say them. */
  attackUpdate(files: UpdateFiles, options?: Partial<RunOptions>, control?: RunControl): Promise<ReconstructionReport>;
  /** Read a CSV once (a malformed one is refused with its line); runs and audits then refer to it. */
  loadTable(csv: CsvInput): Promise<LeakscopeTable>;
}

/** A table loaded into an engine (`Leakscope` here, `LeakscopeWorker` in module workers). */
export interface Table {
  /** The CSV's size in bytes. */
  readonly bytes: number;
  /** Columns, inferred kinds, label candidates and rows with missing values. */
  inspect(): Promise<SchemaSummary>;
  /** Run one attack on a batch drawn from the table. */
  run(options: RunOptions, control?: RunControl): Promise<Report>;
  /** How the engine would run this attack: its backend, or the timing `auto` takes first, and the shares. */
  plan(options: RunOptions, workers?: number): Promise<RunPlan>;
  /** Audit the table over a grid of federated settings. */
  audit(options: AuditInput, control?: AuditControl): Promise<AuditReport>;
  /** How an audit would run: its cells, dearest first, each with its share of the work. */
  auditPlan(options: AuditInput, workers?: number): Promise<AuditPlan>;
  /** Stop every run and audit on this table: each rejects with an AbortError at its next step. */
  cancel(): void;
  /** Give the table's memory back (after cancelling what runs on it); unusable afterwards. */
  free(): Promise<void>;
}

/** The package's own table (`Leakscope.loadTable`); its `plan` and `auditPlan` take the workers a page would use (default 1). */
export interface LeakscopeTable extends Table {}
export declare const LeakscopeTable: { readonly prototype: LeakscopeTable };

export type { Decision, MeasuredRate };
