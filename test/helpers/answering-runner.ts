import type { AgentRunner, RunContext } from '../../host/router/agent-runner.ts';

/**
 * A runner whose every run replies with what `answer` makes of its context, then completes: for host tests
 * where what matters is which group's run answered, through which channel.
 */
export function answeringRunner(answer: (ctx: RunContext) => string | Promise<string>): AgentRunner {
  return {
    start(ctx, callbacks) {
      const done = (async () => {
        await callbacks.reply(await answer(ctx));
        return { ok: true as const, reason: 'completed' as const };
      })();
      return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
    },
  };
}

/** Every run answers with the id of the group it ran for. */
export const groupIdRunner: AgentRunner = answeringRunner((ctx) => `answered as ${ctx.group.id}`);
