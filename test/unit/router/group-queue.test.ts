import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedRunner } from '../../fakes/scripted-runner.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { waitFor } from '../../helpers/processes.ts';
import { createRouterHarness } from '../../helpers/router-harness.ts';

type Harness = ReturnType<typeof createRouterHarness>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const flush = () => new Promise((r) => setImmediate(r));

describe('group queue', () => {
  it('holds the global cap and serves waiting groups in arrival order', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxConcurrent: 2 });
    for (const g of ['a', 'b', 'c', 'd']) h.addGroup(g);
    for (const g of ['c', 'a', 'd', 'b']) h.say(g, `@Andy hi from ${g}`);
    await flush();
    expect(scripted.runs.map((r) => r.ctx.group.id)).toEqual(['c', 'a']);
    expect(h.queue.snapshot().waiting).toEqual(['d', 'b']);

    scripted.runs[1]?.accept();
    scripted.runs[1]?.finish({ ok: true, reason: 'completed' });
    await scripted.run(3);
    expect(scripted.runs.map((r) => r.ctx.group.id)).toEqual(['c', 'a', 'd']);
    expect(h.queue.snapshot().active).toHaveLength(2);

    scripted.runs[0]?.finish({ ok: true, reason: 'completed' });
    await scripted.run(4);
    expect(scripted.runs.map((r) => r.ctx.group.id)).toEqual(['c', 'a', 'd', 'b']);
  });

  it('retries a failed run when its clock says the backoff passed, not before', async () => {
    const scripted = createScriptedRunner();
    const clock = fakeClock(0);
    h = createRouterHarness({
      runner: scripted.runner,
      maxAttempts: 3,
      retryBaseMs: 1_000,
      queueClock: clock.clock,
    });
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const first = await scripted.run(1);
    first.accept();
    first.finish({ ok: false, reason: 'container exited with 1' });
    const harness = h;
    await waitFor('the retry to be scheduled', () => harness.queue.snapshot().retrying.length > 0);
    expect(h.queue.snapshot().retrying).toEqual([{ groupId: 'fam', attempt: 2 }]);
    expect(clock.live().map((t) => t.ms)).toEqual([1_000]);
    expect(scripted.runs).toHaveLength(1);
    clock.advance(1_000);
    const second = await scripted.run(2);
    expect(second.ctx.attempt).toBe(2);
    second.accept();
    second.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
  });

  it('never runs more than the cap under a burst of 50 busy groups', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxConcurrent: 4 });
    const ids = Array.from({ length: 50 }, (_, i) => `g${i}`);
    for (const id of ids) h.addGroup(id);
    let peak = 0;
    for (const id of ids) {
      h.say(id, '@Andy go');
      h.say(id, '@Andy again'); // a second trigger must not start a second run of the same group
      peak = Math.max(peak, h.queue.snapshot().active.length);
    }
    let finished = 0;
    while (finished < 50) {
      const run = await scripted.run(finished + 1);
      peak = Math.max(peak, h.queue.snapshot().active.length);
      run.accept();
      run.finish({ ok: true, reason: 'completed' });
      finished += 1;
    }
    await h.queue.whenIdle();
    expect(peak).toBe(4);
    expect(scripted.runs).toHaveLength(50);
    expect(new Set(scripted.runs.map((r) => r.ctx.group.id)).size).toBe(50);
    // Both messages of each group went into its single run: at start, or handed over while it ran.
    const seen = scripted.runs.map((r) => r.ctx.messages.length + r.inputs.flat().length);
    expect(seen.every((n) => n === 2)).toBe(true);
    expect(scripted.runs.filter((r) => r.inputs.length > 0)).toHaveLength(4);
  });

  it('keeps non-triggering messages as context for the next run', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    expect(h.say('fam', 'what are we eating tonight?').triggered).toBe(false);
    expect(h.say('fam', 'pasta?').triggered).toBe(false);
    await flush();
    expect(scripted.runs).toHaveLength(0);
    expect(h.say('fam', '@andy any recipe ideas?').triggered).toBe(true);
    const run = await scripted.run(1);
    expect(run.ctx.messages.map((m) => m.text)).toEqual([
      'what are we eating tonight?',
      'pasta?',
      '@andy any recipe ideas?',
    ]);
  });

  it('answers everything in the admin group without a trigger word', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('main', true);
    expect(h.say('main', 'status please').triggered).toBe(true);
    expect((await scripted.run(1)).ctx.group.isAdmin).toBe(true);
  });

  it('drops a duplicate of an already stored message', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    const m = {
      channel: 'test',
      chatId: 'chat-fam',
      externalId: 'same',
      senderId: 'u',
      senderName: 'U',
      text: '@Andy hi',
      sentAt: new Date().toISOString(),
      mentionsBot: false,
      repliesToBot: false,
    };
    expect(h.store.messages.insert({ ...m, groupId: 'fam', triggers: true })).toBeTypeOf('number');
    expect(h.store.messages.insert({ ...m, groupId: 'fam', triggers: true })).toBeUndefined();
  });
});
