/**
 * Bash gate speed: classifies every command of the test corpus many times and reports the p50/p99 of
 * one `classify()` call, next to a baseline measured in the same run: tree-sitter parsing the same
 * command and nothing else. Goal: p50 under 0.5 ms.
 *
 *   node --import tsx scripts/bench/bench-bash-gate.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createBashClassifierWithParser, loadBashParser } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';

const ROUNDS = 60;
const WARMUP_ROUNDS = 10;
const GOAL_P50_MS = 0.5;

const corpusPath = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'test',
  'fixtures',
  'bash-gate-corpus.jsonl',
);

function loadCommands(): string[] {
  return fs
    .readFileSync(corpusPath, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { cmd: string }).cmd);
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

function round(ms: number): number {
  return Math.round(ms * 10_000) / 10_000;
}

/** Times `run` once per command per round; returns every sample (ms) and each command's median. */
function measure(
  commands: readonly string[],
  run: (command: string) => void,
): { samples: number[]; medians: Map<string, number> } {
  for (let r = 0; r < WARMUP_ROUNDS; r++) for (const command of commands) run(command);
  const perCommand = new Map<string, number[]>(commands.map((c) => [c, []]));
  const samples: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const command of commands) {
      const start = performance.now();
      run(command);
      const elapsed = performance.now() - start;
      samples.push(elapsed);
      perCommand.get(command)?.push(elapsed);
    }
  }
  samples.sort((a, b) => a - b);
  const medians = new Map<string, number>();
  for (const [command, times] of perCommand)
    medians.set(
      command,
      percentile(
        [...times].sort((a, b) => a - b),
        50,
      ),
    );
  return { samples, medians };
}

export async function benchBashGate(): Promise<Record<string, number | string>> {
  const commands = loadCommands();
  const parser = await loadBashParser(resolveBashGateWasmPaths());
  const classifier = createBashClassifierWithParser(parser);

  const baseline = measure(commands, (command) => parser.parse(command)?.delete());
  const gate = measure(commands, (command) => {
    classifier.classify(command);
  });

  const p50 = percentile(gate.samples, 50);
  const p99 = percentile(gate.samples, 99);
  const baseP50 = percentile(baseline.samples, 50);
  let slowest = '';
  let slowestMs = -1;
  for (const [command, median] of gate.medians) {
    if (median > slowestMs) {
      slowest = command;
      slowestMs = median;
    }
  }
  return {
    'bash-gate commands': commands.length,
    'bash-gate calls measured': gate.samples.length,
    'bash-gate classify p50 (ms)': round(p50),
    'bash-gate classify p99 (ms)': round(p99),
    'bash-gate parse-only p50 (ms, baseline)': round(baseP50),
    'bash-gate parse-only p99 (ms, baseline)': round(percentile(baseline.samples, 99)),
    'bash-gate classify/parse p50 ratio': Math.round((p50 / baseP50) * 100) / 100,
    'bash-gate slowest command median (ms)': round(slowestMs),
    'bash-gate slowest command': JSON.stringify(slowest.length > 60 ? `${slowest.slice(0, 59)}…` : slowest),
    'bash-gate goal p50 < 0.5 ms': p50 < GOAL_P50_MS ? 'met' : 'missed',
  };
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  const figures = await benchBashGate();
  for (const [name, value] of Object.entries(figures)) console.log(`${name}: ${value}`);
}
