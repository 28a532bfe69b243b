// The engine's share-level pieces, used by the package's own worker and its tests. Not a stable
// API: use `Leakscope` and its tables (./index.js).
import type { AuditReport, CellResult, MemberRange, Progress, Report, RunOptions } from './types.js';
import type { AuditControl, AuditInput, CsvInput, RunControl } from './index.js';

/** The wasm objects behind a `Leakscope` (`engine[RAW]`) or a `LeakscopeTable` (`table[RAW]`: {engine, table}). */
export declare const RAW: unique symbol;

/** The wasm-bindgen engine and table objects (opaque here). */
export type WasmEngine = object;
export type WasmTable = object;

/** One share of an ensemble, inverted: the members' relaxed rows and block probabilities, [count, B, d]. */
export interface Members {
  range: MemberRange;
  x: Float32Array;
  probs: Float32Array;
  loss_curve: [number, number][];
  /** Steps each member took before it stopped improving. */
  steps: number[];
}

export declare function toBytes(csv: CsvInput): Promise<Uint8Array>;
export declare function createEngine(backend: string, module?: WebAssembly.Module, warm?: boolean): Promise<WasmEngine>;
export declare function loadTable(csv: CsvInput): Promise<WasmTable>;
export declare function runPlanned(
  engine: WasmEngine,
  table: WasmTable,
  options: RunOptions,
  control?: RunControl & { workers?: number; runShare?: ((range: MemberRange, onProgress: (p: Progress) => void, options?: RunOptions, index?: number, request?: 'invert' | 'invertShadow') => Promise<Members>) | null },
): Promise<Report>;
export declare function runAudit(
  engine: WasmEngine,
  table: WasmTable,
  options: AuditInput,
  control?: AuditControl & {
    workers?: number;
    runRemote?: ((index: number, onStep: (step: number) => void, signal: AbortSignal) => Promise<CellResult>)[];
  },
): Promise<AuditReport>;
/** Invert members first .. first + count of the ensemble only (one share of a split ensemble). */
export declare function invertMembers(engine: WasmEngine, table: WasmTable, options: RunOptions, range: MemberRange, control?: RunControl): Promise<Members>;
/** Invert members first .. first + count of the shadow client's ensemble (one share, where the engine's `shadowShares` asks for them). */
export declare function invertShadow(engine: WasmEngine, table: WasmTable, options: RunOptions, range: MemberRange, control?: RunControl): Promise<Members>;
/**
 * Join shares covering the ensemble once into the report one run would give; `seconds`: wall time
 * measured; `shadow`: the shadow client's shares, where the engine's `shadowShares` asked for them.
 */
export declare function assess(engine: WasmEngine, table: WasmTable, options: RunOptions, parts: Members[], seconds: number, workers?: number, shadow?: Members[] | null): Promise<Report>;
/** Run cell `index` of an audit (one worker's part of a split audit). */
export declare function runAuditCell(engine: WasmEngine, table: WasmTable, options: AuditInput, index: number, control?: RunControl): Promise<CellResult>;
/** The joined progress of a split run from each share's latest report (null until all reported). */
export declare function combineProgress(latest: (Progress | null)[], shares: MemberRange[]): Progress | null;
/** Test hook: make the engine panic with `message`; rejects with a RuntimeError carrying it. */
export declare function panicForTests(message: string): Promise<never>;
