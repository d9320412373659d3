/**
 * Gives back what a waiting agent no longer needs, once it has booted and rehearsed a run's start: one
 * full garbage collection of the kind V8 runs when memory is short ("last resort"), which also shrinks the
 * young generation that `--min-semi-space-size` keeps large for the boot. A pre-started container holds
 * its memory for as long as it waits; this took a waiting agent from ~32 to ~24 MiB (DESIGN.md,
 * "Containers"). Node has no API for it: V8's `gc` function is exposed for a moment and the flag set back,
 * so nothing else in the process sees it.
 *
 * Such a collection also throws away the compiled code of WebAssembly functions that never reached the
 * optimising tier: node's HTTP parser (llhttp), which the rehearsal has just run, would then be compiled
 * again while the run's first answer arrives, 2–6 ms on the way to the reply. Its code (~0.1 MiB) is kept.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** Collects with memory reduction; resolves how long it took (ms), or why it could not. */
export function releaseIdleMemory(): { ms: number } | { failed: string } {
  try {
    v8.setFlagsFromString('--expose-gc');
    let gc: GcFunction;
    try {
      gc = vm.runInNewContext('gc') as GcFunction;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
    const start = performance.now();
    v8.setFlagsFromString('--no-flush-liftoff-code');
    try {
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    } finally {
      v8.setFlagsFromString('--flush-liftoff-code');
    }
    return { ms: Math.round((performance.now() - start) * 10) / 10 };
  } catch (error) {
    return { failed: error instanceof Error ? error.message : String(error) };
  }
}
