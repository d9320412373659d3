import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openAuthStore } from '../../host/channels/whatsapp/auth-store.ts';
import { linkWhatsApp, renderQrForTerminal } from '../../host/channels/whatsapp/whatsapp-login.ts';
import { makeBaileysSocket, type WhatsAppSocket } from '../../host/channels/whatsapp/whatsapp-socket.ts';
import { FAKE_SELF_PHONE, startFakeWhatsApp, type FakeWhatsApp } from '../fakes/whatsapp-fake.ts';
import { waitFor } from '../helpers/processes.ts';
import { useTempDirs } from '../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-wa-login-');
let server: FakeWhatsApp | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** `whatsapp login` on a real Baileys socket against crabline, which never pairs: the phone's side is synthetic. */
async function login(phone?: string) {
  const dir = tempDir();
  server = await startFakeWhatsApp(dir);
  const sockets: WhatsAppSocket[] = [];
  const said: string[] = [];
  const authDir = path.join(dir, 'whatsapp');
  const done = linkWhatsApp({
    authDir,
    url: server.url,
    logger: pino({ level: 'silent' }),
    say: (t) => said.push(t),
    makeSocket: (opts) => {
      const s = makeBaileysSocket(opts);
      sockets.push(s);
      return s;
    },
    timeoutMs: 20_000,
    ...(phone ? { phone } : {}),
  });
  await waitFor('a socket', () => sockets.length > 0);
  const phoneConfirms = async (socket: WhatsAppSocket) => {
    // What pair-success leaves behind, then WhatsApp's request to reconnect (515), through Baileys' own paths.
    socket.ev.emit('creds.update', {
      me: { id: `${FAKE_SELF_PHONE}:7@s.whatsapp.net`, lid: `${FAKE_SELF_PHONE}:7@lid`, name: 'Owner' },
      registered: true,
    });
    socket.ws.emit('CB:stream:error', { tag: 'stream:error', attrs: { code: '515' }, content: [] });
  };
  return { done, sockets, said, authDir, phoneConfirms };
}

describe('carapace whatsapp login', () => {
  it('draws the QR code WhatsApp offers, and finishes once the phone linked and the socket reopened', async () => {
    const { done, sockets, said, authDir, phoneConfirms } = await login();
    const first = sockets[0] as WhatsAppSocket;
    await waitFor('connecting', () => (first.ws as unknown as { isOpen: boolean }).isOpen);
    first.ev.emit('connection.update', { qr: '2@synthetic-ref,noise,identity,adv' });
    const art = await renderQrForTerminal('2@synthetic-ref,noise,identity,adv');
    await waitFor('the QR code', () => said.some((s) => s.includes(art)));
    expect(said.join('\n')).toMatch(/Linked devices › Link a device/);
    await phoneConfirms(first);
    await waitFor('a second socket after the restart', () => sockets.length === 2);
    const result = await done;
    expect(result).toEqual({ linkedAs: `${FAKE_SELF_PHONE}@s.whatsapp.net`, already: false });
    expect(openAuthStore(authDir).isLinked()).toBe(true);
  });

  // Crabline does not model companion pairing: about every other run it closes the socket (428) right after
  // Baileys sends the pairing-code request, before the synthetic confirmation; a fake that answers the
  // link_code_companion_reg IQ is needed before this can run in CI.
  it.skip('asks for a pairing code with --phone once the socket is connecting, and shows it (skipped: crabline closes the socket on a pairing-code request in about half the runs)', async () => {
    const { done, sockets, said, phoneConfirms } = await login('4915123456789');
    const first = sockets[0] as WhatsAppSocket;
    await waitFor('connecting', () => (first.ws as unknown as { isOpen: boolean }).isOpen);
    first.ev.emit('connection.update', { qr: '2@synthetic-ref,noise,identity,adv' });
    const line = await waitFor('the pairing code', () => said.find((s) => s.startsWith('Pairing code: ')));
    expect(line).toMatch(/^Pairing code: [A-Z0-9]{4}-[A-Z0-9]{4}\n/);
    // A second QR (WhatsApp rotates them) does not ask for a second code.
    first.ev.emit('connection.update', { qr: '2@another-ref,noise,identity,adv' });
    await phoneConfirms(first);
    expect((await done).linkedAs).toBe(`${FAKE_SELF_PHONE}@s.whatsapp.net`);
    expect(said.filter((s) => s.startsWith('Pairing code: '))).toHaveLength(1);
  });

  it('refuses a phone number that is not digits with a country code', async () => {
    await expect(
      linkWhatsApp({
        authDir: tempDir(),
        url: 'ws://127.0.0.1:9',
        logger: pino({ level: 'silent' }),
        say: () => undefined,
        phone: '+49 151',
      }),
    ).rejects.toThrow(/digits with the country code/);
  });
});
