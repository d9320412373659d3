import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { consoleLine, formatBytes } from '../../../host/channels/local/console-line.ts';
import { createLocalChannel, LOCAL_CHANNEL } from '../../../host/channels/local/local-channel.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { listenOnSocket } from '../../../host/channels/local/socket-server.ts';
import { createHostEvents } from '../../../host/store/host-events.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

let dir: string;
let store: Store;
beforeEach(() => {
  dir = makeTempDir();
  store = openStore({ file: path.join(dir, 'carapace.db') });
  store.groups.add({ id: 'main', channel: LOCAL_CHANNEL, chatId: 'main', name: 'Admin', isAdmin: true });
});
afterEach(() => {
  store.close();
  removeTempDir(dir);
});

/** The console channel over the test's store, with nothing running and no group refused. */
const consoleChannel = () =>
  createLocalChannel({
    groups: store.groups,
    outbox: store.outbox,
    events: createHostEvents(),
    isBusy: () => false,
    capRefusal: () => undefined,
    ownerName: 'owner',
    logger: pino({ level: 'silent' }),
  });

describe('a file in the local console', () => {
  it('replays a delivered file piece as a line with its name and size, not an empty line', async () => {
    const local = consoleChannel();
    for (const [key, text, attachment] of [
      ['t', 'here is the chart', undefined],
      [
        'f',
        '',
        {
          path: path.join(dir, 'x-chart.png'),
          fileName: 'chart.png',
          mime: 'image/png',
          kind: 'photo',
          bytes: 2048,
        },
      ],
    ] as const) {
      store.outbox.add({
        idempotencyKey: key,
        groupId: 'main',
        channel: LOCAL_CHANNEL,
        chatId: 'main',
        runId: null,
        text,
        ...(attachment ? { attachment } : {}),
      });
    }
    for (const item of store.outbox.due()) store.outbox.markSent(item.id);
    const socketFile = path.join(dir, 'console.sock');
    const server = await listenOnSocket(socketFile, local.routes);
    try {
      const texts: string[] = [];
      const done = new AbortController();
      await createLocalClient(socketFile).events(
        'main',
        0,
        (e) => {
          if (e.type === 'reply') texts.push(e.text);
          else done.abort();
        },
        done.signal,
      );
      expect(texts).toEqual(['here is the chart', '[file: chart.png, 2.0 KB]']);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('names a file without its size when the piece was stored before sizes were, and keeps a caption', () => {
    const attachment = { path: '/x', fileName: 'notes.txt', mime: 'text/plain', kind: 'document' } as const;
    expect(consoleLine({ text: '', attachment })).toBe('[file: notes.txt]');
    expect(consoleLine({ text: 'see this', attachment: { ...attachment, bytes: 12 } })).toBe(
      'see this\n[file: notes.txt, 12 bytes]',
    );
    expect([formatBytes(1023), formatBytes(1536), formatBytes(5 * 1024 * 1024)]).toEqual([
      '1023 bytes',
      '1.5 KB',
      '5.0 MB',
    ]);
  });
});

describe('a message to a local group that does not exist', () => {
  it('suggests groups add only for a name groups add takes, never for one it refuses', async () => {
    const local = consoleChannel();
    const socketFile = path.join(dir, 'console.sock');
    const server = await listenOnSocket(socketFile, local.routes);
    try {
      const client = createLocalClient(socketFile);
      const post = (group: string) =>
        client.postMessage({ group, text: 'hello', clientMessageId: 'client-message-1' }).then(
          () => '',
          (err: unknown) => (err instanceof Error ? err.message : String(err)),
        );
      expect(await post('family')).toMatch(
        /there is no local group "family"; add one with: carapace groups add family --channel local/,
      );
      for (const id of ['../../etc', 'Family Chat']) {
        const refused = await post(id);
        expect(refused).toContain(`there is no local group "${id}"`);
        expect(refused).toMatch(/group ids are 1-64 lowercase letters.*e\.g\. "family"/);
        expect(refused).not.toContain('groups add');
      }
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
