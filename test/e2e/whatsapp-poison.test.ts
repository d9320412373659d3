/**
 * A reply the WhatsApp server drops the connection on (a poison message), end to end: the real Baileys
 * socket, crabline and a real host with real containers. crabline closes the socket on a group send, so
 * the seam hands it exactly the replies that carry POISON; every other group send is taken at the seam.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { firstWords } from '../../host/channels/delivery-outcomes.ts';
import { FAKE_SELF_JID } from '../fakes/whatsapp-fake.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { makeTempDir } from '../helpers/temp-dir.ts';
import { eventually } from './e2e-harness.ts';
import { GROUP, startWhatsAppHost, type WhatsAppE2e } from './whatsapp-e2e-host.ts';

const POISON = 'POISON-7f3';
const FRIENDS = '120363000000000002@g.us';
const ALICE = '15551234567@s.whatsapp.net';
const MAX_DROPS = 2;

await describeDocker('e2e: a WhatsApp reply the server drops the connection on', () => {
  let t: WhatsAppE2e;

  beforeAll(async () => {
    t = await startWhatsAppHost(makeTempDir('carapace-wa-poison-'), {
      // The first drop holds the piece back 8 s: time enough to read it in `carapace status`.
      config: { outbox: { retry_base_ms: 8_000, retry_max_ms: 10_000, max_connection_drops: MAX_DROPS } },
      seam: { toServer: (text) => text.includes(POISON) },
    });
    const added = await t.e2e.cli(['groups', 'add', 'friends', '--channel', 'whatsapp', '--chat', FRIENDS]);
    if (added.code !== 0) throw new Error(`groups add: ${added.stderr}`);
  });
  afterAll(async () => {
    await t?.e2e.stop();
    await t?.server.close().catch(() => undefined);
  });

  const ask = (chatJid: string, text: string, messageId: string) =>
    t.server.inject({ chatJid, senderJid: ALICE, pushName: 'Alice', text, messageId });
  const groupReply = (chatId: string, words: string) =>
    t.seam.sent.find((s) => s.chatId === chatId && s.text.includes(words));

  it('dead-letters the poison reply after the limit, tells the owner once, and every chat keeps flowing', async () => {
    await ask(GROUP, `@Andy please repeat ${POISON} back to me`, 'P1');
    await ask(FRIENDS, '@Andy how is the weather', 'F1');
    // Another chat is answered while the poison reply takes the connection down.
    await eventually('the other group answered', () => groupReply(FRIENDS, 'how is the weather'), 90_000);
    const failing = await eventually(
      'the poison reply failing once',
      () => t.e2e.host.store.outbox.failing().find((o) => o.text.includes(POISON) && o.connectionDrops === 1),
      90_000,
    );
    const status = await t.e2e.cli(['status']);
    expect(status.stdout).toContain(
      `failing: reply #${failing.id} to group fam (whatsapp ${GROUP}) "${firstWords(failing.text)}": ` +
        '1 attempt, 1 took the connection down; last: sending it took the whatsapp connection down (1 of 2',
    );
    const dead = await eventually(
      'the poison reply dead-lettered',
      () => t.e2e.outbox('fam').find((o) => o.text.includes(POISON) && o.status === 'dead'),
      90_000,
    );
    const row = t.e2e.host.store.db
      .prepare('SELECT attempts, connection_drops AS drops, last_error AS e FROM outbox WHERE id = ?')
      .get(dead.id) as { attempts: number; drops: number; e: string };
    expect(row).toMatchObject({ attempts: MAX_DROPS, drops: MAX_DROPS });
    expect(row.e).toMatch(`sending it took the whatsapp connection down ${MAX_DROPS} times`);

    // The owner hears it once in each admin chat: the console, and the self-chat over the wire.
    const notice = (text: string) =>
      text.startsWith('A reply to group "fam"') && text.includes(`It began "${firstWords(dead.text)}"`);
    await eventually('the notice on the console', () => t.e2e.outbox('main').find((o) => notice(o.text)));
    await eventually('the notice in the self-chat', () =>
      t.server.sentTexts().find((s) => s.to === FAKE_SELF_JID && notice(s.text)),
    );
    // One notice row per admin chat, keyed by the piece.
    expect(
      t.e2e
        .outbox('main')
        .filter((o) => notice(o.text))
        .map((o) => o.key),
    ).toEqual([`poison-piece:${dead.id}`, `poison-piece:${dead.id}@whatsapp:${FAKE_SELF_JID}`]);

    // The poisoned group's own chat goes on, on the same connection.
    await ask(GROUP, '@Andy and now something harmless', 'P2');
    await eventually('the group answered again', () => groupReply(GROUP, 'something harmless'), 90_000);
    await eventually('connected', () => t.channel.status().state === 'connected');
    // One connection at the start and one after each drop: none was dropped for it after the limit.
    expect(t.seam.connections()).toBe(1 + MAX_DROPS);
    expect(t.server.sentTexts().filter((s) => s.to === FAKE_SELF_JID && notice(s.text))).toHaveLength(1);
  }, 240_000);
});
