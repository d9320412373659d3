import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createTypingIndicator } from '../../../host/router/typing-indicator.ts';

function setup() {
  const busy = new Set<string>();
  const calls: { chatId: string; on: boolean }[] = [];
  const typing = createTypingIndicator({
    groups: { get: (id) => (id === 'g1' ? { channel: 'local', chatId: 'chat-1' } : undefined) },
    isBusy: (id) => busy.has(id),
    channelFor: (name) =>
      name === 'local'
        ? {
            setTyping: async (chatId, on) => {
              calls.push({ chatId, on });
            },
          }
        : undefined,
  });
  return { busy, calls, typing };
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
      groups: { get: () => ({ channel: 'x', chatId: 'c' }) },
      isBusy: (id) => busy.has(id),
      channelFor: () => ({ setTyping: () => Promise.reject(new Error('offline')) }),
    });
    typing.sync('g1');
    await nextTurn();
    await nextTurn();
  });
});
