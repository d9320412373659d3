import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import { buildSecretCorpus } from '../../test/fixtures/secret-corpus/cases.ts';
import { scoreCorpus, type CorpusScore } from '../../test/fixtures/secret-corpus/score.ts';
import { createSecretlintBaseline } from './secretlint-baseline.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

/**
 * Secret scanning: speed and accuracy of host/security/secrets against a baseline measured in the same
 * run, secretlint's recommended preset (the scanner Carapace used before).
 *
 * Speed: p50/p99 of one scan of a clean 4 KiB and a clean 100 KiB message (chat, code, commands, digests,
 * ids: the corpus's look-alikes, repeated) and of the 4 KiB one with a secret in it; `redact` (on every
 * log line) on the 4 KiB message; mean CPU time per scan beside the wall clock. Goals: p50 under 1 ms
 * for 4 KiB and under 20 ms for 100 KiB.
 * Accuracy: recall per family and the false-positive rate on the corpus, for both scanners.
 *
 * Run: node --import tsx scripts/bench/bench-secret-scan.ts
 */

const WARMUP = 100;
const ROUNDS = { small: 1_000, large: 100 };

function message(corpusTexts: string[], size: number, extra = ''): string {
  let text = '';
  for (let i = 0; text.length + extra.length < size; i++) text += `${corpusTexts[i % corpusTexts.length]}\n`;
  return (text.slice(0, size - extra.length) + extra).slice(0, size);
}

/**
 * Wall-clock p50/p99 per call, and the process's mean CPU time per call: on a machine shared with other
 * work the wall clock includes waiting for a core, the CPU time does not.
 */
async function timeEach(
  rounds: number,
  fn: () => unknown,
): Promise<{ p50: number; p99: number; cpu: number }> {
  for (let i = 0; i < Math.min(WARMUP, rounds); i++) await fn();
  const samples: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    cpu: (cpu.user + cpu.system) / 1000 / rounds,
  };
}

function familyFigures(prefix: string, score: CorpusScore): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [family, [found, total]] of [...score.families].sort(([a], [b]) => a.localeCompare(b))) {
    out[`${prefix}_recall_${family}`] = `${found}/${total}`;
  }
  return out;
}

export async function benchSecretScan(): Promise<Record<string, number | string>> {
  const corpus = buildSecretCorpus();
  const scanner = createSecretScanner({
    heldSecrets: [...corpus.held, `sk-host-${randomBytes(24).toString('hex')}`],
  });
  const baseline = await createSecretlintBaseline();

  const cleanTexts = corpus.negatives.map((n) => n.text);
  const small = message(cleanTexts, 4 * 1024);
  const large = message(cleanTexts, 100 * 1024);
  const secret = corpus.positives.find((p) => p.family === 'stripe')?.text ?? '';
  const dirty = message(cleanTexts, 4 * 1024, `\n${secret}`);
  if ((await scanner.scan(dirty)).length === 0)
    throw new Error('bench: the message with a secret is not found');

  const ours = await scoreCorpus(corpus, (t) => scanner.scan(t));
  const theirs = await scoreCorpus(corpus, baseline);

  const base4k = await timeEach(ROUNDS.small, () => baseline(small));
  const scan4k = await timeEach(ROUNDS.small, () => scanner.scan(small));
  const scanDirty = await timeEach(ROUNDS.small, () => scanner.scan(dirty));
  const base100k = await timeEach(ROUNDS.large, () => baseline(large));
  const scan100k = await timeEach(ROUNDS.large, () => scanner.scan(large));
  const redact4k = await timeEach(ROUNDS.small, () => scanner.redact(small));

  return {
    corpus_positives: corpus.positives.length,
    corpus_negatives: corpus.negatives.length,
    scanner_recall: `${round(ours.recall * 100, 1)} %`,
    scanner_false_positives: `${round(ours.falsePositiveRate * 100, 1)} %`,
    baseline_secretlint_recall: `${round(theirs.recall * 100, 1)} %`,
    baseline_secretlint_false_positives: `${round(theirs.falsePositiveRate * 100, 1)} %`,
    baseline_secretlint_4k_p50_ms: round(base4k.p50),
    scan_4k_p50_ms: round(scan4k.p50),
    scan_4k_p99_ms: round(scan4k.p99),
    scan_4k_with_secret_p50_ms: round(scanDirty.p50),
    scan_4k_p50_vs_baseline: `${round(scan4k.p50 / base4k.p50, 2)}x`,
    baseline_secretlint_4k_cpu_ms: round(base4k.cpu),
    scan_4k_cpu_ms: round(scan4k.cpu),
    baseline_secretlint_100k_p50_ms: round(base100k.p50),
    scan_100k_p50_ms: round(scan100k.p50),
    scan_100k_p99_ms: round(scan100k.p99),
    scan_100k_p50_vs_baseline: `${round(scan100k.p50 / base100k.p50, 2)}x`,
    baseline_secretlint_100k_cpu_ms: round(base100k.cpu),
    scan_100k_cpu_ms: round(scan100k.cpu),
    redact_4k_p50_ms: round(redact4k.p50),
    ...familyFigures('scanner', ours),
    ...familyFigures('baseline_secretlint', theirs),
  };
}

if (isMain(import.meta.url)) printFigures('secret scanning', await benchSecretScan());
