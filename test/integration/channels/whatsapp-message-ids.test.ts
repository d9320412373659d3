/**
 * Outgoing WhatsApp message ids through the real outbox and the real WhatsApp adapter (Baileys against
 * crabline, sends to the owner's self-chat over the wire): unique per install, unique across a restore to
 * an older backup, the same at every re-send of one piece.
 */
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackup } from '../../../host/backup/backup-archive.ts';
import { restoreBackup } from '../../../host/backup/restore-archive.ts';
import { createOutboxDispatcher } from '../../../host/channels/outbox-dispatcher.ts';
import {
  createWhatsAppChannel,
  type WhatsAppChannel,
} from '../../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../../host/channels/whatsapp/whatsapp-config.ts';
import { resolvePaths, type CarapacePaths } from '../../../host/config/paths.ts';
import type { OutboxItem } from '../../../host/store/outbox-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { createRecordingChannelHost } from '../../fakes/recording-channel-host.ts';
import {
  FAKE_SELF_JID,
  seedLinkedAuth,
  startFakeWhatsApp,
  type FakeWhatsApp,
} from '../../fakes/whatsapp-fake.ts';
import { waitFor } from '../../helpers/processes.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

let root: string;
let server: FakeWhatsApp;
let channel: WhatsAppChannel;

beforeAll(async () => {
  root = makeTempDir('carapace-wa-ids-');
  server = await startFakeWhatsApp(root);
  const authDir = path.join(root, 'whatsapp');
  await seedLinkedAuth(authDir);
  channel = createWhatsAppChannel({
    config: whatsappConfigSchema.parse({ websocket_url: server.url }),
    dataDir: authDir,
    logger: pino({ level: 'silent' }),
    sendWaitMs: 5_000,
  });
  await channel.start(createRecordingChannelHost().host);
  await waitFor('connected', () => channel.status().state === 'connected');
}, 30_000);

afterAll(async () => {
  await channel?.stop();
  await server?.close();
  removeTempDir(root);
});

const installPaths = (name: string): CarapacePaths =>
  resolvePaths({
    env: {
      CARAPACE_DATA_DIR: path.join(root, name, 'data'),
      CARAPACE_CONFIG_DIR: path.join(root, name, 'config'),
    },
    cwd: root,
  });

/** One install's outbox delivering through the live WhatsApp channel to the owner's self-chat. */
function outboxOf(store: Store) {
  const delivered = new Map<string, OutboxItem>();
  const dispatcher = createOutboxDispatcher({
    outbox: store.outbox,
    channelFor: (name) => (name === channel.name ? channel : undefined),
    retryBaseMs: 50,
    retryMaxMs: 500,
    onDelivered: (item) => void delivered.set(item.idempotencyKey, item),
    onDeadLetter: () => undefined,
    onChatMoved: () => undefined,
    logger: pino({ level: 'silent' }),
  });
  return {
    dispatcher,
    /** Stores a reply under `key` (a run's key: `run:<id>:<n>`) and resolves with the id it was sent under. */
    async send(key: string): Promise<string> {
      dispatcher.enqueue({
        idempotencyKey: key,
        groupId: 'main',
        channel: channel.name,
        chatId: FAKE_SELF_JID,
        runId: null,
        text: `reply ${key}`,
      });
      return this.sentId(key);
    },
    /** The WhatsApp id the piece stored under `key` went out with, once delivered and seen on the wire. */
    async sentId(key: string): Promise<string> {
      const item = await waitFor(`${key} delivered`, () => delivered.get(key));
      const [id] = store.outbox.platformIds(item.id);
      if (!id) throw new Error(`no platform id for ${key}`);
      await waitFor(`${key} at the server`, () => server.sentTexts().find((s) => s.id === id));
      return id;
    },
  };
}

describe('WhatsApp message ids', () => {
  it('differ between two data folders for their first reply, and look like WhatsApp Web ids', async () => {
    const ids: string[] = [];
    for (const name of ['first', 'second']) {
      const store = openStore({ file: installPaths(name).databaseFile });
      const outbox = outboxOf(store);
      ids.push(await outbox.send('run:1:1'));
      await outbox.dispatcher.stop();
      store.close();
    }
    expect(ids[0]).not.toBe(ids[1]);
    for (const id of ids) expect(id).toMatch(/^3EB0[0-9A-F]{18}$/);
  });

  it('never re-use after a restore an id sent after the backup, and keep the id of a piece re-sent', async () => {
    const paths = installPaths('restored');
    const archive = path.join(root, 'restored.tar.gz');
    let store = openStore({ file: paths.databaseFile });
    let outbox = outboxOf(store);
    await outbox.send('run:1:1');
    // Stored but not yet sent when the backup is made: it will be sent on both sides of the restore.
    store.outbox.add({
      idempotencyKey: 'run:2:1',
      groupId: 'main',
      channel: channel.name,
      chatId: FAKE_SELF_JID,
      runId: null,
      text: 'pending at the backup',
    });
    await createBackup(paths, archive);
    outbox.dispatcher.kick();
    const pendingId = await outbox.sentId('run:2:1');
    // Run 3 answers after the backup; the restored database will hand out run id 3 again.
    const afterBackup = await outbox.send('run:3:1');
    await outbox.dispatcher.stop();
    store.close();

    const report = await restoreBackup(paths, archive);
    expect(report.join('\n')).toMatch(/restored the database/);
    store = openStore({ file: paths.databaseFile });
    outbox = outboxOf(store);
    outbox.dispatcher.kick();
    // Its second send is the same piece: WhatsApp clients take it as the message they already have.
    expect(await outbox.sentId('run:2:1')).toBe(pendingId);
    const reused = await outbox.send('run:3:1');
    expect(reused).not.toBe(afterBackup);
    await outbox.dispatcher.stop();
    store.close();
  });
});
