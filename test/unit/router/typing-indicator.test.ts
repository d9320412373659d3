import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createTypingIndicator } from '../../../host/router/typing-indicator.ts';
import { systemClock } from '../../../host/time/clock.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';

function setup() {
  const busy = new Set<string>();
  const calls: { chatId: string; on: boolean }[] = [];
  const time = fakeClock(0);
  const typing = createTypingIndicator({
    clock: time.clock,
    groups: { get: (id) => (id === 'g1' ? { channel: 'local', chatId: 'chat-1' } : undefined) },
    isBusy: (id) => busy.has(id),
    channelFor: (name) =>
      name === 'local'
        ? {
            typingRenewMs: 4_000,
            setTyping: async (chatId, on) => {
              calls.push({ chatId, on });
            },
          }
        : undefined,
  });
  return { busy, calls, typing, time };
}

describe('typing indicator', () => {
  it('turns typing on when the group becomes busy and off once it is idle, once each', async () => {
    const { busy, calls, typing } = setup();
    busy.add('g1');
    typing.sync('g1');
    typing.sync('g1');
    await nextTurn();
    busy.delete('g1');
    typing.sync('g1');
    typing.sync('g1');
    await nextTurn();
    expect(calls).toEqual([
      { chatId: 'chat-1', on: true },
      { chatId: 'chat-1', on: false },
    ]);
  });

  it('renews typing at the period the channel gives for the whole run, and not after it ended', async () => {
    const { busy, calls, typing, time } = setup();
    busy.add('g1');
    typing.sync('g1');
    await nextTurn();
    // A 90 s tool call: the run stays active, and typing is renewed before Telegram's 5 s lapse.
    time.advance(90_000);
    const during = calls.filter((c) => c.on).length;
    // Once at the start, then every 4 s: 22 renewals in 90 s.
    expect(during).toBe(23);
    busy.delete('g1');
    typing.sync('g1');
    await nextTurn();
    time.advance(60_000);
    expect(calls.at(-1)).toEqual({ chatId: 'chat-1', on: false });
    expect(calls.filter((c) => c.on)).toHaveLength(during);
    expect(time.live()).toEqual([]);
  });

  it('stops renewing at stop', async () => {
    const { busy, typing, time } = setup();
    busy.add('g1');
    typing.sync('g1');
    await nextTurn();
    typing.stop();
    expect(time.live()).toEqual([]);
  });

  it('reads the queue after the change that prompted it settled', async () => {
    const { busy, calls, typing } = setup();
    typing.sync('g1');
    busy.add('g1');
    await nextTurn();
    expect(calls).toEqual([{ chatId: 'chat-1', on: true }]);
  });

  it('says nothing for a group it does not know or one that was never busy', async () => {
    const { busy, calls, typing } = setup();
    busy.add('gone');
    typing.sync('gone');
    typing.sync('g1');
    await nextTurn();
    expect(calls).toEqual([]);
  });

  it('does nothing for a sync scheduled before stop, when the store it reads may be closed', async () => {
    const { busy, calls, typing } = setup();
    busy.add('g1');
    typing.sync('g1');
    typing.stop();
    await nextTurn();
    expect(calls).toEqual([]);
  });

  it('survives a channel whose indicator fails', async () => {
    const busy = new Set(['g1']);
    const typing = createTypingIndicator({
      clock: systemClock,
      groups: { get: () => ({ channel: 'x', chatId: 'c' }) },
      isBusy: (id) => busy.has(id),
      channelFor: () => ({ setTyping: () => Promise.reject(new Error('offline')) }),
    });
    typing.sync('g1');
    await nextTurn();
    await nextTurn();
  });
});
