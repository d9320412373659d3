/**
 * Liveness on Telegram through the real host wiring (startHost), the real grammY channel and a fake Bot API
 * that is a real HTTP server, with an in-process runner whose run makes a 90 s tool call and then waits for
 * the owner's approval: the triggering message gets a reaction, typing is renewed through the tool call and
 * the wait, the group reads one "waiting for the owner's OK" line that says nothing of the request and
 * goes once the owner answered, and typing stops with the run. The host's clock is a fake the test moves; the channel polls on real time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { ApprovalService } from '../../../host/admin/approval-service.ts';
import { WAITING_FOR_OWNER_LINE } from '../../../host/admin/waiting-line.ts';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { createTelegramChannel } from '../../../host/channels/telegram/telegram-channel.ts';
import { telegramConfigSchema } from '../../../host/channels/telegram/telegram-config.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import type { AgentRunner } from '../../../host/router/agent-runner.ts';
import { eventually } from '../../e2e/e2e-harness.ts';
import { startFakeTelegram } from '../../fakes/fake-telegram-api.ts';
import { openStateFile } from '../../fakes/telegram-test-host.ts';
import { RISKY_PARAMS } from '../../helpers/ask-risky-command.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';

const OWNER = 5150;
const FAMILY = { id: -1001001, type: 'supergroup' as const, title: 'Family' };
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A runner whose run makes one tool call (it ends when the test says), then asks the owner, then replies. */
function toolCallingRunner(approvals: () => ApprovalService, toolCall: Promise<void>): AgentRunner {
  return {
    start(ctx, callbacks) {
      const done = (async () => {
        await toolCall;
        const r = await approvals().request({
          runId: ctx.runId,
          groupId: ctx.group.id,
          operation: 'bash',
          reason: 'the agent wants to run a risky command',
          params: RISKY_PARAMS,
        });
        await callbacks.reply(`outcome: ${r.outcome}`);
        return { ok: true as const, reason: 'completed' as const };
      })();
      return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
    },
  };
}

async function start(toolCall: Promise<void>) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-tg-live-')));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  const tg = await startFakeTelegram();
  cleanups.push(() => tg.close());
  const state = openStateFile(dir);
  cleanups.push(() => state.close());
  // The channel's poll and its watchdog stay on real time; the host's typing renewals run on the fake clock.
  const telegram = createTelegramChannel({
    config: telegramConfigSchema.parse({ owner_user_id: OWNER, api_root: tg.apiRoot, poll_timeout_s: 1 }),
    token: tg.token,
    triggerWord: '@Andy',
    state,
    logger: pino({ level: 'silent' }),
  });
  const time = fakeClock(Date.now());
  let approvals: ApprovalService | undefined;
  const host: RunningHost = await startHost({
    paths,
    config: hostConfigSchema.parse({ outbox: { retry_base_ms: 10, retry_max_ms: 100 } }),
    logger: pino({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' }),
    redact: (s) => s,
    extraChannels: [telegram],
    clock: time.clock,
    createRunner: async (deps) => {
      approvals = deps.approvals;
      return {
        runner: toolCallingRunner(() => approvals as ApprovalService, toolCall),
        close: async () => undefined,
      };
    },
  });
  cleanups.push(() => host.stop('test over'));
  host.store.groups.add({
    id: 'family',
    channel: 'telegram',
    chatId: String(FAMILY.id),
    name: 'Family',
    isAdmin: false,
  });
  return { tg, host, time };
}

/** Moves the host's clock on by `ms`, a second at a time, as time passes during a run. */
function pass(time: ReturnType<typeof fakeClock>, ms: number): void {
  for (let t = 0; t < ms; t += 1_000) time.advance(1_000);
}

it("acknowledges the trigger, keeps typing through a 90 s tool call and the owner's approval, and tells the group it waits", async () => {
  let endToolCall!: () => void;
  const toolCall = new Promise<void>((r) => (endToolCall = r));
  const { tg, host, time } = await start(toolCall);
  // A failed check must not leave the run in its tool call, or the host's stop would wait for it.
  cleanups.push(() => endToolCall());
  const inGroup = () =>
    tg
      .sent()
      .filter((s) => s.chat_id === FAMILY.id)
      .map((s) => s.text);
  const typings = () =>
    tg.calls.filter((c) => c.method === 'sendChatAction' && c.params.chat_id === FAMILY.id).length;

  const { messageId } = tg.message({
    chat: FAMILY,
    from: { id: 42, first_name: 'Mia' },
    text: '@Andy fix the garden',
  });
  await eventually('the reaction on the message', () => tg.reactions(FAMILY.id, messageId).length > 0);
  expect(tg.reactions(FAMILY.id, messageId)).toEqual(['👀']);
  await eventually('typing shown', () => typings() >= 1);

  // The tool call: 90 s in which the run says nothing. Telegram's "typing…" lasts 5 s: it is renewed.
  pass(time, 90_000);
  await eventually('typing renewed through the tool call', () => typings() >= 1 + Math.floor(90_000 / 5_000));
  endToolCall();

  // The run waits for the owner: the group is told so once, without what the request is.
  await eventually('the waiting line', () => inGroup().includes(WAITING_FOR_OWNER_LINE));
  const id = await eventually('the pending request', () => host.store.approvals.listPending()[0]?.id);
  expect(inGroup()).toEqual([WAITING_FOR_OWNER_LINE]);
  expect(inGroup().join('\n')).not.toMatch(/bash|risky|rm -rf/i);
  const beforeWait = typings();
  pass(time, 30_000);
  await eventually(
    'typing renewed through the wait',
    () => typings() >= beforeWait + Math.floor(30_000 / 5_000),
  );

  tg.message({ chat: { id: OWNER, type: 'private' }, from: { id: OWNER }, text: `approve ${id}` });
  await eventually('the reply', () => inGroup().includes('outcome: approved'));
  expect(inGroup()).toEqual([WAITING_FOR_OWNER_LINE, 'outcome: approved']);
  // The owner answered: the line is no longer true, and it goes (deleteMessage), once.
  const line = tg.sent().find((s) => s.chat_id === FAMILY.id && s.text === WAITING_FOR_OWNER_LINE);
  await eventually('the waiting line deleted', () => tg.deleted().length > 0);
  expect(tg.deleted()).toEqual([{ chat_id: FAMILY.id, message_id: line?.message_id }]);
  await host.whenIdle();
  // The indicator saw the run end: its renewal (every 4 s on Telegram) is no longer armed on the clock.
  await eventually('typing no longer renewed', () => !time.live().some((t) => t.ms === 4_000));

  // The run is over: nothing renews typing, however far the clock moves.
  const atEnd = typings();
  pass(time, 60_000);
  await host.stop('test over');
  expect(typings()).toBe(atEnd);
}, 30_000);
