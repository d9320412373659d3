import type { AgentRunner, RunCallbacks, RunContext, RunOutcome } from '../../host/router/agent-runner.ts';
import type { StoredMessage } from '../../host/store/messages-store.ts';

/** One run of the scripted runner, steered by the test step by step. */
export interface ScriptedRun {
  ctx: RunContext;
  callbacks: RunCallbacks;
  inputs: StoredMessage[][];
  /** Whether `input()` reports the follow-up as taken in. */
  acceptInputs: boolean;
  accept(): void;
  finish(outcome: RunOutcome): void;
  stopped?: string;
}

/**
 * An in-process runner for router tests: it does nothing until the test tells a run to accept, reply
 * or finish. It lives under test/ and is never wired into `carapace start`.
 */
export function createScriptedRunner() {
  const runs: ScriptedRun[] = [];
  const waiters: { n: number; resolve: (r: ScriptedRun) => void }[] = [];
  const runner: AgentRunner = {
    start(ctx, callbacks) {
      let accept!: () => void;
      let finish!: (o: RunOutcome) => void;
      const accepted = new Promise<void>((r) => (accept = r));
      const done = new Promise<RunOutcome>((r) => (finish = r));
      let finished = false;
      const run: ScriptedRun = {
        ctx,
        callbacks,
        inputs: [],
        acceptInputs: true,
        accept,
        finish: (o) => {
          finished = true;
          finish(o);
        },
      };
      runs.push(run);
      for (const w of waiters.filter((w) => w.n === runs.length)) w.resolve(run);
      return {
        accepted,
        async input(messages) {
          if (finished || !run.acceptInputs) return false;
          run.inputs.push(messages);
          return true;
        },
        stop(reason) {
          run.stopped = reason;
          run.finish({ ok: false, reason: `stopped: ${reason}` });
        },
        done,
      };
    },
  };
  return {
    runner,
    runs,
    /** Resolves with the n-th run (1-based) once it has started. */
    run(n: number): Promise<ScriptedRun> {
      const existing = runs[n - 1];
      if (existing) return Promise.resolve(existing);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
  };
}
