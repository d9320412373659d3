/**
 * releaseIdleMemory (run/idle-memory.ts): the waiting agent's memory-reducing collection keeps the compiled
 * code of node's HTTP parser, so the run's first answer does not compile it again.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const FIXTURE = path.join(import.meta.dirname, '../../fixtures/idle-memory-wasm.ts');

/** How many WebAssembly functions the fixture compiled with the baseline compiler (a tier-up is not a loss). */
function compiledFunctions(...args: string[]): number {
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--trace-wasm-compilation-times', FIXTURE, ...args],
    { encoding: 'utf8', timeout: 30_000 },
  );
  expect(run.status, run.stderr).toBe(0);
  return run.stdout
    .split('\n')
    .filter((line) => line.startsWith('Compiled function') && line.includes('using Liftoff')).length;
}

describe('the waiting agent’s collection', () => {
  it('leaves the HTTP parser’s compiled code in place for the next answer', () => {
    const compiledOnce = compiledFunctions('without-collection');
    // The trace shows the first request's compilation: a count that could grow.
    expect(compiledOnce).toBeGreaterThan(0);
    // A flushed parser is compiled again at the second request, nearly doubling the count (14 → 27 on Node
    // 24); a function or two more can be compiled lazily on a loaded machine, so the bound is half, not one.
    expect(compiledFunctions()).toBeLessThan(compiledOnce * 1.5);
  });
});
