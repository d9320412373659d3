import pino from 'pino';
import { createGateway, createSqliteUsageStore } from '../../host/gateway/index.ts';
import type { HostDeps } from '../../host/app/host.ts';
import type { RunOutcome } from '../../host/router/agent-runner.ts';
import { createFinalFailures } from '../../host/router/final-failures.ts';
import { gatewayEvents } from '../../host/router/gateway-events.ts';
import { systemClock } from '../../host/time/clock.ts';

/**
 * A runtime for a real host whose runs spend as the agent does, through the real gateway with the run's
 * own key, wired to the host as `carapace start` wires it (the usage table, `gatewayEvents`, the final
 * failures a run's end reads); only the container is left out. Each run asks the model once per
 * triggering message and posts the text as that message's whole answer; a refused request ends the run
 * with the gateway's reason. Follow-ups are not taken into a running run: they wait for the next one.
 * Test-only; never wired into `carapace start`.
 */
export function gatewayRunnerFactory(): HostDeps['createRunner'] {
  return async ({ store, enqueueNotice, notifyOwner, config: source }) => {
    const config = source.current();
    const finalFailures = createFinalFailures();
    const gateway = createGateway({
      config: () => source.current().gateway,
      provider: config.provider,
      providerApiKey: 'not-checked-by-the-fake',
      usageStore: createSqliteUsageStore(store.db),
      clock: systemClock,
      timezone: () => source.current().assistant.timezone,
      logger: pino({ level: 'silent' }),
      maxOutputTokens: config.runs.max_output_tokens,
      ...gatewayEvents({ store, finalFailures, enqueueNotice, notifyOwner }),
    });
    await gateway.listen(['127.0.0.1']);
    const baseUrl = gateway.baseUrlFor('127.0.0.1');

    const ask = async (
      key: string,
      text: string,
    ): Promise<{ ok: true; text: string } | { ok: false; reason: string }> => {
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: config.provider.model, messages: [{ role: 'user', content: text }] }),
      });
      const body = (await res.json()) as {
        choices?: { message: { content: string } }[];
        error?: { message: string };
      };
      const answer = body.choices?.[0]?.message.content;
      return res.ok && answer !== undefined
        ? { ok: true, text: answer }
        : { ok: false, reason: `LLM request failed with HTTP ${res.status}: ${body.error?.message ?? ''}` };
    };

    return {
      runner: {
        start(ctx, callbacks) {
          const keys = gateway.issueKey({ runId: String(ctx.runId), groupId: ctx.group.id });
          const run = async (): Promise<RunOutcome> => {
            for (const message of ctx.messages.filter((m) => m.triggers)) {
              const answer = await ask(keys.key, message.text);
              if (!answer.ok) return { ok: false, reason: answer.reason };
              await callbacks.reply(answer.text, { final: true });
            }
            return { ok: true, reason: 'completed' };
          };
          const done = run()
            .catch((err: unknown): RunOutcome => ({ ok: false, reason: String(err) }))
            .then((outcome) => finalFailures.settle(ctx.runId, outcome))
            .finally(() => keys.revoke());
          return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
        },
      },
      close: () => gateway.close(),
    };
  };
}
