import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createPrivateTextCheck } from '../../host/security/private-text/private-text-check.ts';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import type { RunIdentity } from '../../host/security/decisions.ts';
import { seededRandom } from '../../test/helpers/seeded-random.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

/**
 * The private-text check (host/security/private-text/): what it costs per outgoing payload and per run,
 * against the host work already done at the same points, measured in the same run.
 *
 * Per payload: p50/p99 of checking a 4 KiB payload that quotes nothing private (the common case) and one
 * that quotes a private line, against a group folder of 1 MiB of private text (256 files of 4 KiB prose),
 * with the run's last payloads joined before it (the split-across-calls state, so every check reads 8 KiB);
 * the baseline is the secret scan of the same payload, which the host runs on every payload already.
 * Goal: p50 under 1 ms for 4 KiB. Per run: the index built cold (a group's first run after the host
 * started), brought up to date when nothing changed (every later run: a walk and a stat per file) and
 * after one file changed; the baseline is the secret scan of a run's 20 payloads of 4 KiB.
 *
 * Run: node --import tsx scripts/bench/bench-private-text.ts
 */

const ROUNDS = 1_000;
const WARMUP = 100;
const RUNS = 20;

function prose(random: () => number, words: string[], size: number): string {
  let text = '';
  while (text.length < size) {
    const sentence = Array.from(
      { length: 6 + Math.floor(random() * 10) },
      () => words[Math.floor(random() * words.length)],
    );
    text += `${sentence.join(' ')}. `;
    if (random() < 0.1) text += '\n\n';
  }
  return text.slice(0, size);
}

function vocabulary(random: () => number, n: number): string[] {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  return Array.from({ length: n }, () =>
    Array.from({ length: 3 + Math.floor(random() * 7) }, () => letters[Math.floor(random() * 26)]).join(''),
  );
}

async function timeEach(
  rounds: number,
  fn: () => Promise<unknown> | unknown,
): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < Math.min(WARMUP, rounds); i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

export async function benchPrivateText(): Promise<Record<string, number | string>> {
  const random = seededRandom(40);
  const words = vocabulary(random, 5_000);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-private-'));
  try {
    const folder = path.join(root, 'team');
    for (let i = 0; i < 256; i++) {
      const dir = path.join(folder, `notes-${i % 16}`);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `day-${i}.md`), prose(random, words, 4096));
    }
    const privateLine = fs.readFileSync(path.join(folder, 'notes-3', 'day-19.md'), 'utf8').slice(1000, 1080);
    const benign = prose(seededRandom(7), vocabulary(seededRandom(8), 5_000), 4096);
    const quoting = `${benign.slice(0, 2000)} ${privateLine} ${benign.slice(2000, 4096 - privateLine.length - 2)}`;
    const group = { id: 'team', isAdmin: false } as RunIdentity['group'];
    const identity = (runId: number): RunIdentity => ({ runId, group, secretMounts: [] });
    const scanner = createSecretScanner({ heldSecrets: [] });

    // Per run: the index built cold, then brought up to date unchanged, then after one file changed.
    const cold = createPrivateTextCheck({ groupFolder: (id) => path.join(root, id) });
    let t0 = performance.now();
    await cold.prepare(identity(1));
    const buildColdMs = performance.now() - t0;
    const refresh: number[] = [];
    for (let run = 2; run < 2 + RUNS; run++) {
      t0 = performance.now();
      await cold.prepare(identity(run));
      refresh.push(performance.now() - t0);
    }
    const changed: number[] = [];
    for (let run = 100; run < 100 + RUNS; run++) {
      fs.appendFileSync(path.join(folder, 'notes-0', 'day-0.md'), ` ${run}`);
      t0 = performance.now();
      await cold.prepare(identity(run));
      changed.push(performance.now() - t0);
    }
    const scanRun = await timeEach(50, () => {
      for (let i = 0; i < RUNS; i++) scanner.scan(benign);
    });

    // Per payload, in one run whose earlier payloads are joined before each new one.
    const steady = identity(1_000);
    await cold.prepare(steady);
    const check = await timeEach(ROUNDS, () => cold.check(steady, 'elsewhere', { text: benign }));
    const matched = await timeEach(ROUNDS, () => cold.check(identity(2_000), 'elsewhere', { text: quoting }));
    const found = await cold.check(identity(3_000), 'elsewhere', { text: quoting });
    if (!found.match) throw new Error('the payload quoting a private line was not matched');
    const scan = await timeEach(ROUNDS, () => scanner.scan(benign));
    const refreshP50 = percentile(refresh, 50);
    return {
      private_text_kib: round(1024),
      check_4kib_p50_ms: round(check.p50),
      check_4kib_p99_ms: round(check.p99),
      check_4kib_quoting_p50_ms: round(matched.p50),
      secret_scan_4kib_p50_ms: round(scan.p50),
      check_vs_secret_scan_p50: `${round(check.p50 / scan.p50, 2)}×`,
      index_build_cold_ms: round(buildColdMs, 1),
      index_refresh_unchanged_p50_ms: round(refreshP50, 2),
      index_refresh_one_changed_p50_ms: round(percentile(changed, 50), 2),
      secret_scan_run_of_20_payloads_p50_ms: round(scanRun.p50, 2),
      refresh_vs_run_scans: `${round(refreshP50 / scanRun.p50, 2)}×`,
      cold_build_vs_run_scans: `${round(buildColdMs / scanRun.p50, 2)}×`,
    };
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('private-text check', await benchPrivateText());
