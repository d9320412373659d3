import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedRunner } from '../../fakes/scripted-runner.ts';
import pino from 'pino';
import { recoverInterruptedRuns } from '../../../host/router/recover-runs.ts';
import type { NewOutboxItem } from '../../../host/store/outbox-store.ts';
import { createRouterHarness } from '../../helpers/router-harness.ts';

type Harness = ReturnType<typeof createRouterHarness>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const silent = pino({ level: 'silent' });
const flush = () => new Promise((r) => setImmediate(r));

describe('cursor rules', () => {
  it('advances the cursor to what a successful run acknowledged', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    const { messageId } = h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.reply('hello');
    run.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
    expect(h.store.groups.get('fam')?.agentCursor).toBe(messageId);
    expect(h.store.runs.get(run.ctx.runId)?.status).toBe('succeeded');
    expect((await h.delivered(1)).map((s) => s.text)).toEqual(['hello']);
  });

  it('retries a run that failed before replying, with the same messages, then succeeds', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 3, retryBaseMs: 5 });
    h.addGroup('fam');
    const { messageId } = h.say('fam', '@Andy one');
    const first = await scripted.run(1);
    first.accept();
    first.finish({ ok: false, reason: 'container exited with 1' });
    expect(h.store.groups.get('fam')?.agentCursor).toBe(0);
    const second = await scripted.run(2);
    expect(second.ctx.attempt).toBe(2);
    expect(second.ctx.messages.map((m) => m.id)).toEqual([messageId]);
    second.accept();
    await second.callbacks.reply('finally');
    second.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
    expect(h.store.groups.get('fam')?.agentCursor).toBe(messageId);
    expect((await h.delivered(1)).map((s) => s.text)).toEqual(['finally']);
  });

  it('never retries a run that already replied, so nothing is answered twice', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    const { messageId } = h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.reply('partial answer');
    run.finish({ ok: false, reason: 'killed' });
    await h.queue.whenIdle();
    expect(scripted.runs).toHaveLength(1);
    expect(h.store.groups.get('fam')?.agentCursor).toBe(messageId);
    expect(h.store.runs.get(run.ctx.runId)?.status).toBe('failed');
  });

  it('tells a group whose run died after a progress message, once, that the answer is not finished', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 3 });
    h.addGroup('main', true);
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.reply('Looking into it…');
    run.finish({ ok: false, reason: 'the agent exited (code 137) without finishing' });
    await h.queue.whenIdle();
    const sent = await h.delivered(3);
    // Delivered in order per chat; chats go side by side.
    const byChat = (chat: string) => sent.filter((m) => m.chatId === chat).map((m) => m.text);
    expect(byChat('chat-fam')).toEqual([
      'Looking into it…',
      'Sorry, I could not finish that. Ask again if you still need the rest.',
    ]);
    expect(byChat('chat-main')).toEqual([
      'Group fam got only part of an answer: the agent exited (code 137) without finishing',
    ]);
    // Not retried (it would repeat the progress message), and no give-up notice on top.
    expect(scripted.runs).toHaveLength(1);
    expect(h.store.outbox.pendingCount()).toBe(0);
  });

  it('tells the group of a run the host crashed under, once, however often recovery runs', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    const { messageId } = h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.reply('Looking into it…');
    // The host dies here: the run stays "running" in the database. Recovery at the next start (twice:
    // a host that crashed again while recovering) tells the group once.
    const enqueued: string[] = [];
    const enqueue = (item: NewOutboxItem) => {
      if (h!.store.outbox.add(item)) enqueued.push(item.text);
    };
    const owner: string[] = [];
    const sinks = { enqueue, notifyOwner: (_key: string, text: string) => void owner.push(text) };
    expect(recoverInterruptedRuns(h.store, silent, sinks)).toEqual([]);
    expect(recoverInterruptedRuns(h.store, silent, sinks)).toEqual([]);
    expect(enqueued).toEqual(['Sorry, I could not finish that. Ask again if you still need the rest.']);
    // The reason goes to the owner's admin chats, not to the group.
    expect(owner).toEqual(['Group fam got only part of an answer: the host stopped during the run']);
    expect(h.store.runs.get(run.ctx.runId)?.status).toBe('interrupted');
    expect(h.store.groups.get('fam')?.agentCursor).toBe(messageId);
  });

  it('owes no notice for a run the host crashed under after its answer, but does after a later progress note', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 3 });
    h.addGroup('fam');
    h.addGroup('pals');
    h.say('fam', '@Andy one');
    const answered = await scripted.run(1);
    answered.accept();
    await answered.callbacks.reply('The answer.', { final: true });
    h.say('pals', '@Andy two');
    const progressed = await scripted.run(2);
    progressed.accept();
    await progressed.callbacks.reply('First part.', { final: true });
    // A follow-up taken in after the answer: what the group read last is a progress note again.
    await progressed.callbacks.reply('Looking into your follow-up…');

    const enqueued: string[] = [];
    const sinks = {
      enqueue: (item: NewOutboxItem) => void (h!.store.outbox.add(item) && enqueued.push(item.chatId)),
      notifyOwner: () => {},
    };
    expect(recoverInterruptedRuns(h.store, silent, sinks)).toEqual([]);
    expect(enqueued).toEqual(['chat-pals']);
    expect(h.store.runs.get(answered.ctx.runId)?.status).toBe('interrupted');
  });

  it('owes no notice for a run that failed after giving its answer', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 3 });
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.reply('The answer.', { final: true });
    run.finish({ ok: false, reason: 'run.done never came' });
    await h.queue.whenIdle();
    const texts = h.store.db
      .prepare("SELECT text FROM outbox WHERE chat_id = 'chat-fam' ORDER BY id")
      .all() as { text: string }[];
    expect(texts.map((r) => r.text)).toEqual(['The answer.']);
    expect(scripted.runs).toHaveLength(1);
  });

  it('ends a run whose answer the owner withheld without a retry, with a notice that says no more', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 3 });
    h.addGroup('main', true);
    h.addGroup('fam');
    const { messageId } = h.say('fam', '@Andy what is the deploy token?');
    const reason = 'the owner did not approve its message (agent error: message not sent)';
    (await scripted.run(1)).finish({ ok: false, reason, retryable: false, withheld: true });
    const sent = await h.delivered(2);
    await h.queue.whenIdle();
    expect(sent.map((m) => [m.chatId, m.text]).sort()).toEqual([
      ['chat-fam', 'Sorry, I cannot answer that.'],
      ['chat-main', `Group fam got no answer (its answer was withheld): ${reason}`],
    ]);
    expect(scripted.runs).toHaveLength(1);
    expect(h.store.groups.get('fam')?.agentCursor).toBe(messageId);
  });

  it('gives up after the last attempt, tells the group once and moves on', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 2, retryBaseMs: 5 });
    h.addGroup('fam', true);
    const { messageId } = h.say('fam', '@Andy one');
    for (const n of [1, 2]) {
      const run = await scripted.run(n);
      run.finish({ ok: false, reason: 'provider down' });
    }
    const sent = await h.delivered(1);
    await h.queue.whenIdle();
    expect(sent).toHaveLength(1);
    // The admin chat is the owner's: it reads the reason.
    expect(sent[0]?.text).toMatch(/could not answer.*provider down/);
    expect(h.store.groups.get('fam')?.agentCursor).toBe(messageId);
    expect(scripted.runs).toHaveLength(2);
  });

  it('gives another group a neutral apology and the owner the reason, which may hold provider texts and config hints', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 1 });
    h.addGroup('main', true);
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const reason =
      'agent error: the provider rejected the host API key; the owner must check [provider].api_key_env';
    (await scripted.run(1)).finish({ ok: false, reason });
    const sent = await h.delivered(2);
    await h.queue.whenIdle();
    const toFam = sent.filter((m) => m.chatId === 'chat-fam').map((m) => m.text);
    const toOwner = sent.filter((m) => m.chatId === 'chat-main').map((m) => m.text);
    expect(toFam).toEqual(['Sorry, I could not answer that. Send the message again to retry.']);
    expect(toOwner).toEqual([`Group fam got no answer (it may ask again): ${reason}`]);
  });

  it('tells the group at once when retrying cannot help', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 3 });
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    (await scripted.run(1)).finish({ ok: false, reason: 'no Docker engine', retryable: false });
    expect((await h.delivered(1))[0]?.text).toBe(
      'Sorry, I cannot answer right now. The owner has been told.',
    );
    await h.queue.whenIdle();
    expect(scripted.runs).toHaveLength(1);
  });

  it('hands a follow-up to the active run instead of starting another', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    const follow = h.say('fam', '@Andy and also two');
    await flush();
    expect(run.inputs.map((batch) => batch.map((m) => m.text))).toEqual([['@Andy and also two']]);
    run.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
    expect(scripted.runs).toHaveLength(1);
    expect(h.store.groups.get('fam')?.agentCursor).toBe(follow.messageId);
  });

  it('starts a new run for a follow-up the finishing run did not take in', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    const first = h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    run.acceptInputs = false;
    const late = h.say('fam', '@Andy two');
    await flush();
    run.finish({ ok: true, reason: 'completed' });
    const next = await scripted.run(2);
    expect(h.store.groups.get('fam')?.agentCursor).toBe(first.messageId);
    expect(next.ctx.messages.map((m) => m.id)).toEqual([late.messageId]);
  });

  it('does not move the cursor past messages the agent never acknowledged', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner, maxAttempts: 1 });
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    // The run "succeeds" without ever acknowledging its start messages (a broken agent).
    run.finish({ ok: true, reason: 'completed' });
    const again = await scripted.run(2);
    expect(again.ctx.messages.map((m) => m.text)).toEqual(['@Andy one']);
  });
});

describe('messages to other chats', () => {
  it('count as replies: a run that wrote to another chat is not retried', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('main', true);
    h.addGroup('fam');
    h.say('main', 'tell the family dinner is ready');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.sendToGroup('fam', 'dinner is ready');
    run.finish({ ok: false, reason: 'killed' });
    expect((await h.delivered(2)).map((s) => [s.chatId, s.text])).toEqual([
      ['chat-fam', 'dinner is ready'],
      ['chat-main', 'I could not finish that (killed). Ask again if you still need the rest.'],
    ]);
    await h.queue.whenIdle();
    expect(scripted.runs).toHaveLength(1);
  });
});

describe('follow-ups after the last reply', () => {
  it('are answered by a new run when the run that took them in fails', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    const first = h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    await run.callbacks.reply('answer to one');
    const second = h.say('fam', '@Andy two');
    await flush();
    expect(run.inputs.flat().map((m) => m.id)).toEqual([second.messageId]);
    run.finish({ ok: false, reason: 'killed' });
    const next = await scripted.run(2);
    expect(h.store.groups.get('fam')?.agentCursor).toBe(first.messageId);
    expect(next.ctx.messages.map((m) => m.text)).toEqual(['@Andy two']);
  });

  it('refuses to send for a run that has ended', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    run.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
    await expect(run.callbacks.reply('too late')).rejects.toThrow(/run has ended/);
    expect(h.store.outbox.pendingCount()).toBe(0);
  });
});

describe('a chat that moves while its run is active', () => {
  it('gets the run’s later replies at its new id, not the one the run started with', async () => {
    const scripted = createScriptedRunner();
    h = createRouterHarness({ runner: scripted.runner });
    h.addGroup('fam');
    h.say('fam', '@Andy one');
    const run = await scripted.run(1);
    run.accept();
    // The platform answers the first reply with "moved" (a Telegram group that became a supergroup).
    h.channel.answerNext({ kind: 'moved', newChatId: '-100200', reason: 'group upgraded to a supergroup' });
    await run.callbacks.reply('first');
    await h.delivered(1);
    expect(h.store.groups.get('fam')?.chatId).toBe('-100200');
    // The same run speaks again (a follow-up, a long task): it goes where the group now is.
    await run.callbacks.reply('second');
    const sent = await h.delivered(2);
    run.finish({ ok: true, reason: 'completed' });
    await h.queue.whenIdle();
    expect(sent.map((s) => [s.text, s.chatId])).toEqual([
      ['first', '-100200'],
      ['second', '-100200'],
    ]);
  });
});
