export type Backend = 'auto' | 'webgpu' | 'cpu';
export type ColumnKind = 'categorical' | 'continuous';
export type AttackKind = 'tableak' | 'cosine' | 'dlg' | 'random';

export interface ColumnInfo {
  name: string;
  kind: ColumnKind;
  distinct: number;
  missing: number;
  examples: string[];
}

export interface SchemaSummary {
  columns: ColumnInfo[];
  rows: number;
  /** Rows with a missing value in any column; they are dropped before an attack. */
  rows_with_missing: number;
  label_candidates: string[];
}

export interface RunOptions {
  /** Name of the label column. */
  label: string;
  /** Override inferred kinds by column name. */
  kinds?: Record<string, ColumnKind>;
  ignore?: string[];
  attack?: AttackKind;
  batchSize?: number;
  ensemble?: number;
  iterations?: number;
  seed?: number;
  labels?: 'known' | 'restored';
  hidden?: number[];
  /** Adam's step; default 0.1 for TabLeak, 0.06 for the baselines. */
  lr?: number;
  /** Report progress (and check for cancellation) every this many steps. */
  reportEvery?: number;
}

export interface Progress {
  phase: string;
  step: number;
  of: number;
  loss: number | null;
  elapsed: number;
}

export interface Accuracy {
  total: number;
  categorical: number | null;
  continuous: number | null;
  per_feature: number[];
  /** Share of rows with every cell right. */
  exact_rows: number;
}

export interface RowReport {
  truth: string[];
  reconstructed: string[];
  correct: boolean[];
  /** Per cell, lower = more confident; null without an ensemble. */
  entropy: (number | null)[];
}

export interface Report {
  attack: AttackKind;
  backend: string;
  seconds: number;
  accuracy: Accuracy;
  random_baseline: number;
  random_accuracy: Accuracy;
  gain_over_random: number;
  label_accuracy: number;
  features: { name: string; kind: ColumnKind }[];
  rows: RowReport[];
  entropy_buckets: { kind: ColumnKind; from: number; to: number; cells: number; accuracy: number | null }[];
  loss_curve: [number, number][];
  table_rows: number;
  dropped_rows: number;
  warnings: string[];
  config: Record<string, unknown>;
}

export type CsvInput = string | Uint8Array | ArrayBuffer | Blob;

/** Progress events, and cancellation: an aborted signal stops the run at its next progress report. */
export interface RunControl {
  onProgress?: (p: Progress) => void;
  signal?: AbortSignal;
}

export declare class Leakscope {
  static create(options?: { backend?: Backend }): Promise<Leakscope>;
  readonly backend: string;
  inspect(csv: CsvInput): Promise<SchemaSummary>;
  run(csv: CsvInput, options: RunOptions, control?: RunControl): Promise<Report>;
  /** Invert members first .. first + count of the ensemble only (one share of a split ensemble). */
  invertMembers(csv: CsvInput, options: RunOptions, range: MemberRange, control?: RunControl): Promise<Members>;
  /** Join shares covering the ensemble once into the report one run would give; `seconds`: wall time measured. */
  assess(csv: CsvInput, options: RunOptions, parts: Members[], seconds: number): Promise<Report>;
}

export interface MemberRange {
  first: number;
  count: number;
}

export interface Members {
  range: MemberRange;
  x: Float32Array;
  probs: Float32Array;
  loss_curve: [number, number][];
}
