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
import { fileURLToPath } from 'node:url';
import { createBashClassifierWithParser, loadBashParser } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

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
  const medians = new Map<string, number>();
  for (const [command, times] of perCommand) medians.set(command, percentile(times, 50));
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
    commands: commands.length,
    'calls measured': gate.samples.length,
    'classify p50 (ms)': round(p50, 4),
    'classify p99 (ms)': round(percentile(gate.samples, 99), 4),
    'parse-only p50 (ms, baseline)': round(baseP50, 4),
    'parse-only p99 (ms, baseline)': round(percentile(baseline.samples, 99), 4),
    'classify / parse-only, p50': round(p50 / baseP50, 2),
    'slowest command, median (ms)': round(slowestMs, 4),
    'slowest command': JSON.stringify(slowest.length > 60 ? `${slowest.slice(0, 59)}…` : slowest),
    [`goal p50 < ${GOAL_P50_MS} ms`]: p50 < GOAL_P50_MS ? 'met' : 'missed',
  };
}

if (isMain(import.meta.url)) printFigures('bash gate classification', await benchBashGate());
