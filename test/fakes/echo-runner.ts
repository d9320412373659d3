import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentRunner, RunOutcome } from '../../host/router/agent-runner.ts';
import type { StoredMessage } from '../../host/store/messages-store.ts';

/**
 * A runner double that answers every triggering message with "echo: <text>". Directives in the text
 * steer it: "[slow N]" waits N ms before answering, "[hang]" answers and then never finishes,
 * "[fail-once]" fails before answering on a first attempt, "[until-restart]" does not answer while `holding()`
 * says so (a crash test's first host process: the run is still in flight when that host dies, however
 * slow the machine). Test-only; never wired into `carapace start`.
 */
export function createEchoRunner(opts: { holding?: () => boolean } = {}): AgentRunner {
  return {
    start(ctx, callbacks) {
      let stop!: (reason: string) => void;
      const stopped = new Promise<string>((r) => (stop = r));
      const queue: StoredMessage[][] = [ctx.messages];
      let finishing = false;
      let wake: (() => void) | undefined;

      const answer = async (messages: StoredMessage[]): Promise<'hang' | 'hold' | 'fail' | 'ok'> => {
        for (const m of messages.filter((m) => m.triggers)) {
          const slow = /\[slow (\d+)\]/.exec(m.text);
          if (slow) await sleep(Number(slow[1]));
          if (m.text.includes('[until-restart]') && opts.holding?.()) return 'hold';
          if (m.text.includes('[fail-once]') && ctx.attempt === 1) return 'fail';
          // Each echo is that message's whole answer.
          await callbacks.reply(`echo: ${m.text}`, { final: true });
          if (m.text.includes('[hang]')) return 'hang';
        }
        return 'ok';
      };

      const done = (async (): Promise<RunOutcome> => {
        for (;;) {
          const batch = queue.shift();
          if (!batch) {
            // Linger briefly for follow-ups, like an agent finishing its turn.
            const more = await Promise.race([
              sleep(50).then(() => false),
              new Promise<boolean>((r) => (wake = () => r(true))),
            ]);
            if (!more) break;
            continue;
          }
          const result = await answer(batch);
          if (result === 'fail') return { ok: false, reason: 'scripted failure' };
          if (result === 'hang' || result === 'hold')
            return { ok: false, reason: `stopped: ${await stopped}` };
        }
        finishing = true;
        return { ok: true, reason: 'completed' };
      })();

      return {
        accepted: Promise.resolve(),
        async input(messages) {
          if (finishing) return false;
          queue.push(messages);
          wake?.();
          return true;
        },
        stop,
        done,
      };
    },
  };
}
