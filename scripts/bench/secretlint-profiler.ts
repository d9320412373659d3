import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

interface ProfilerModule {
  secretLintProfiler?: {
    mark?: unknown;
    setEnabled?: (enabled: boolean) => void;
  };
}

/**
 * Turns off the profiler that @secretlint/core 11 runs on every lint.
 *
 * Why: core calls `secretLintProfiler.mark()` for every lint and every rule, and the singleton's
 * PerformanceObserver keeps every mark in an array it scans again on each new mark. In a long-lived host
 * the cost of one scan therefore grows with the number of scans so far (measured here: a 2 KiB message took
 * 6 ms after 1,000 scans and 78 ms after 6,000) and memory grows without bound. Upstream made profiling
 * opt-in in 13.x (secretlint PR #1673, `setEnabled(false)`), but 13.x needs Node 22 and Carapace supports 20.
 *
 * The singleton is resolved from @secretlint/core's own location, so the instance core really imports is
 * the one patched even if npm ever nests a second copy. Returns false when the module no longer looks like
 * the one this was written for (the caller logs it; scanning still works, only slower over time).
 */
export async function silenceSecretlintProfiler(): Promise<boolean> {
  const corePath = createRequire(import.meta.url).resolve('@secretlint/core');
  const profilerPath = createRequire(corePath).resolve('@secretlint/profiler');
  const mod = (await import(pathToFileURL(profilerPath).href)) as ProfilerModule;
  const profiler = mod.secretLintProfiler;
  if (!profiler) return false;
  if (typeof profiler.setEnabled === 'function') {
    profiler.setEnabled(false);
    return true;
  }
  if (typeof profiler.mark !== 'function') return false;
  // A third-party singleton mutated on purpose: it is the only switch 11.x offers (see above).
  profiler.mark = () => {};
  return true;
}
