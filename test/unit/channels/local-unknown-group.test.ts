import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalChannel, LOCAL_CHANNEL } from '../../../host/channels/local/local-channel.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { listenOnSocket } from '../../../host/channels/local/socket-server.ts';
import { createHostEvents } from '../../../host/router/host-events.ts';
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

describe('a message to a local group that does not exist', () => {
  it('suggests groups add only for a name groups add takes, never for one it refuses', async () => {
    const local = createLocalChannel({
      groups: store.groups,
      outbox: store.outbox,
      events: createHostEvents(),
      isBusy: () => false,
      capRefusal: () => undefined,
      ownerName: 'owner',
      logger: pino({ level: 'silent' }),
    });
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
