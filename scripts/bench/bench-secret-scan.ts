import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createSecretScanner } from '../../host/security/secret-scanner.ts';

/**
 * Secret scanning cost on a 2 KiB chat message, without secrets and with one (a Slack token), as p50/p99
 * in microseconds and as ratios to a baseline measured in the same run: a JSON round trip of the same
 * message (what handling one IPC frame costs anyway). `redact` (synchronous, on every log line) is
 * measured on the clean message.
 *
 * Run: node --import tsx scripts/bench/bench-secret-scan.ts
 */

const WARMUP = 300;
const ITERATIONS = 3_000;

function message2k(extra = ''): string {
  const sentence = 'Could you summarise the meeting notes and remind everyone about Friday? ';
  let text = '';
  while (text.length + sentence.length + extra.length < 2048) text += sentence;
  return (text + extra).padEnd(2048, '.');
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] as number;
}

async function timeEach(fn: () => unknown): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const t0 = performance.now();
    await fn();
    samples.push((performance.now() - t0) * 1000);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const round = (n: number) => Math.round(n * 100) / 100;

export async function benchSecretScan(): Promise<Record<string, number | string>> {
  const held = [
    `sk-host-${randomBytes(24).toString('hex')}`,
    `${randomBytes(8).toString('hex')}:AAH${randomBytes(16).toString('hex')}`,
  ];
  const scanner = createSecretScanner({ heldSecrets: held });
  const clean = message2k();
  const slack = ['xox', 'b-', '123456789012-1234567890123-', 'abcdefghijklmnopqrstuvwx'].join('');
  const dirty = message2k(` token: ${slack}`);
  if ((await scanner.scan(clean)).length !== 0) throw new Error('bench: the clean message has findings');
  if ((await scanner.scan(dirty)).length !== 1)
    throw new Error('bench: the message with a secret is not found');

  const baseline = await timeEach(() => JSON.parse(JSON.stringify({ text: clean })));
  const scanClean = await timeEach(() => scanner.scan(clean));
  const scanDirty = await timeEach(() => scanner.scan(dirty));
  const redactClean = await timeEach(() => scanner.redact(clean));
  return {
    message_bytes: clean.length,
    iterations: ITERATIONS,
    baseline_json_roundtrip_p50_us: round(baseline.p50),
    scan_clean_p50_us: round(scanClean.p50),
    scan_clean_p99_us: round(scanClean.p99),
    scan_with_secret_p50_us: round(scanDirty.p50),
    scan_with_secret_p99_us: round(scanDirty.p99),
    redact_clean_p50_us: round(redactClean.p50),
    scan_clean_p50_vs_baseline: `${round(scanClean.p50 / baseline.p50)}x`,
    scan_with_secret_p50_vs_baseline: `${round(scanDirty.p50 / baseline.p50)}x`,
    redact_clean_p50_vs_baseline: `${round(redactClean.p50 / baseline.p50)}x`,
  };
}

const runDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
if (runDirectly) {
  const result = await benchSecretScan();
  for (const [k, v] of Object.entries(result)) console.log(`${k.padEnd(36)} ${v}`);
}
