import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import { SPEND_CAP_LINE } from '../../../host/router/spend-notices.ts';
import { createScriptedRunner } from '../../fakes/scripted-runner.ts';
import { createRouterHarness } from '../../helpers/router-harness.ts';

type Harness = ReturnType<typeof createRouterHarness>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const NOW = Date.UTC(2026, 2, 31, 12, 0);
const DAY = '2026-03-31';
const CAP_MESSAGE =
  'daily spend cap of $0.01 reached for group fam; raise [gateway].daily_cap_usd or wait until tomorrow';
const OWNER_NOTICE = `Group fam gets no answers until tomorrow: ${CAP_MESSAGE}.`;

/** A router over a real database whose groups' cap is $0.01, with an admin group and `fam`. */
function capped() {
  const scripted = createScriptedRunner();
  h = createRouterHarness({ runner: scripted.runner, gateway: { daily_cap_usd: 0.01 }, capNow: () => NOW });
  h.addGroup('main', true);
  h.addGroup('fam');
  const usage = createSqliteUsageStore(h.store.db);
  /** What the gateway records when a request of the group settles. */
  const spend = (groupId: string, micros: number) =>
    usage.recordUsage({
      runId: '1',
      groupId,
      day: DAY,
      model: 'm',
      promptTokens: 1,
      completionTokens: 1,
      costMicros: micros,
    });
  return { h, scripted, spend };
}

const texts = (h: Harness, chat: string) =>
  h.channel.sent.filter((m) => m.chatId === chat).map((m) => m.text);

describe('messages at the spend cap', () => {
  it('ends the run that crossed the cap with its answer alone, and refuses the next message without a run', async () => {
    const { h, scripted, spend } = capped();
    h.say('fam', '@Andy what is for dinner?');
    const run = await scripted.run(1);
    run.accept();
    spend('fam', 12_000); // the request that wrote the answer crossed the cap
    await run.callbacks.reply('Pasta at eight.', { final: true });
    run.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
    await h.delivered(1);
    expect(texts(h, 'chat-fam')).toEqual(['Pasta at eight.']);
    expect(h.store.outbox.pendingCount()).toBe(0);
    expect(h.executor.capRefusal('fam')).toBeUndefined();

    const { messageId } = h.say('fam', '@Andy and dessert?');
    await h.queue.whenIdle();
    await h.delivered(3);
    expect(scripted.runs).toHaveLength(1);
    expect(texts(h, 'chat-fam')).toEqual(['Pasta at eight.', SPEND_CAP_LINE]);
    expect(texts(h, 'chat-main')).toEqual([OWNER_NOTICE]);
    expect(h.store.groups.get('fam')?.agentCursor).toBe(messageId);
    expect(h.executor.capRefusal('fam')).toEqual({
      after: messageId! - 1,
      through: messageId,
      reason: CAP_MESSAGE,
    });
  });

  it('tells the line once a day, and records every refusal for the console', async () => {
    const { h, scripted, spend } = capped();
    spend('fam', 10_000);
    const first = h.say('fam', '@Andy one').messageId!;
    h.say('fam', 'just context');
    const second = h.say('fam', '@Andy two').messageId!;
    await h.queue.whenIdle();
    await h.delivered(2);
    expect(h.executor.capRefusal('fam')).toMatchObject({ after: first, through: second });
    h.say('fam', 'context after the refusal');
    const third = h.say('fam', '@Andy three').messageId!;
    await h.queue.whenIdle();
    expect(scripted.runs).toHaveLength(0);
    expect(h.executor.capRefusal('fam')).toMatchObject({ after: second, through: third });
    expect(h.store.outbox.pendingCount()).toBe(0);
    expect(texts(h, 'chat-fam')).toEqual([SPEND_CAP_LINE]);
    expect(texts(h, 'chat-main')).toEqual([OWNER_NOTICE]);
  });

  it('keeps each group to its own cap', async () => {
    const { h, scripted, spend } = capped();
    h.addGroup('kin');
    spend('fam', 10_000);
    spend('kin', 9_999);
    h.say('kin', '@Andy hello');
    const run = await scripted.run(1);
    expect(run.ctx.group.id).toBe('kin');
    run.accept();
    run.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
    expect(h.executor.capRefusal('kin')).toBeUndefined();
  });

  it('tells the line, and no retry or apology, when the gateway refused a run before it replied', async () => {
    const { h, scripted } = capped();
    const { messageId } = h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    run.finish({ ok: false, reason: CAP_MESSAGE, retryable: false, capped: true });
    await h.queue.whenIdle();
    await h.delivered(2);
    expect(scripted.runs).toHaveLength(1);
    expect(texts(h, 'chat-fam')).toEqual([SPEND_CAP_LINE]);
    expect(texts(h, 'chat-main')).toEqual([OWNER_NOTICE]);
    expect(h.executor.capRefusal('fam')).toEqual({ after: 0, through: messageId, reason: CAP_MESSAGE });
  });

  it('tells the line instead of "not finished" when the gateway refused a run after a progress note', async () => {
    const { h, scripted } = capped();
    const { messageId } = h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.reply('Looking into it…');
    run.finish({ ok: false, reason: CAP_MESSAGE, retryable: false, capped: true });
    await h.queue.whenIdle();
    await h.delivered(3);
    expect(scripted.runs).toHaveLength(1);
    expect(texts(h, 'chat-fam')).toEqual(['Looking into it…', SPEND_CAP_LINE]);
    expect(texts(h, 'chat-main')).toEqual([OWNER_NOTICE]);
    expect(h.executor.capRefusal('fam')).toEqual({ after: 0, through: messageId, reason: CAP_MESSAGE });
  });
});
