/**
 * Gives back what a waiting agent no longer needs, once it has booted and rehearsed a run's start: one
 * full garbage collection of the kind V8 runs when memory is short ("last resort"), which also shrinks the
 * young generation that `--min-semi-space-size` keeps large for the boot. A pre-started container holds
 * its memory for as long as it waits; this took a waiting agent from ~32 to ~24 MiB (DESIGN.md,
 * "Containers"). Node has no API for it: V8's `gc` function is exposed for a moment and the flag set back,
 * so nothing else in the process sees it.
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
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    return { ms: Math.round((performance.now() - start) * 10) / 10 };
  } catch (error) {
    return { failed: error instanceof Error ? error.message : String(error) };
  }
}
