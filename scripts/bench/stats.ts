/** Percentile of already collected samples (nearest-rank). */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export const median = (samples: number[]) => percentile(samples, 50);

export const round = (n: number, digits = 3) => Number(n.toFixed(digits));

/** Prints a benchmark's figures as aligned "name  value" lines. */
export function printFigures(title: string, figures: Record<string, number | string>): void {
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  process.stdout.write(`\n${title}\n`);
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`  ${k.padEnd(width)}  ${v}\n`);
}

/** True when the module that calls it is the script node was started with. */
export function isMain(metaUrl: string): boolean {
  return process.argv[1] !== undefined && metaUrl === new URL(`file://${process.argv[1]}`).href;
}
