import type { Backend, CsvInput, Leakscope, RunControl } from './index.js';
import type { AuditControl, AuditInput } from './index.js';
import type { AttackInfo, AuditOptions, AuditPlan, AuditReport, EngineInfo, Limits, Report, RunOptions, SchemaSummary } from './types.js';

/** `Leakscope`'s API with the engine in module Web Workers (the package's `leakscope/worker` entry). */
export declare class LeakscopeWorker {
  /** `workers`: how many CPU workers may split a TabLeak ensemble (default: logical cores; the engine caps it). */
  static create(options?: { backend?: Backend; workers?: number; workerUrl?: string | URL }): Promise<LeakscopeWorker>;
  /** What the engine runs on; after a run, `report.backend` says what really ran and why. */
  readonly backend: EngineInfo;
  readonly limits: Limits;
  /** The options a run gets for every one it leaves out. */
  readonly defaults: Leakscope['defaults'];
  /** The attacks the engine offers, with their own settings, defaults and limits. */
  readonly attacks: AttackInfo[];
  /** CPU workers a run may split its ensemble over. */
  readonly workers: number;
  inspect(csv: CsvInput): Promise<SchemaSummary>;
  /** Aborting `signal` cancels at the next progress report; a worker that does not answer within 3 s is replaced. */
  run(csv: CsvInput, options: RunOptions, control?: RunControl): Promise<Report>;
  /** The audit's default grids: `quick` (the page's) and `full` (the CLI's). */
  readonly auditDefaults: { quick: AuditOptions; full: AuditOptions };
  /** Audit the table over a grid of settings, the cells run side by side on the workers. */
  audit(csv: CsvInput, options: AuditInput, control?: AuditControl): Promise<AuditReport>;
  /** How an audit would run on these workers: its cells, dearest first, each with its share of the work. */
  auditPlan(csv: CsvInput, options: AuditInput): Promise<AuditPlan>;
  terminate(): void;
}
