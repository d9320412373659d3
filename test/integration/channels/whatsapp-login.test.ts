import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openAuthStore } from '../../../host/channels/whatsapp/auth-store.ts';
import { linkWhatsApp, renderQrForTerminal } from '../../../host/channels/whatsapp/whatsapp-login.ts';
import { makeBaileysSocket, type WhatsAppSocket } from '../../../host/channels/whatsapp/whatsapp-socket.ts';
import { FAKE_SELF_PHONE } from '../../fakes/whatsapp-fake.ts';
import { startFakePairingServer, type FakePairingServer } from '../../fakes/whatsapp-pairing-server.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import { waitFor } from '../../helpers/processes.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-wa-login-');
let server: FakePairingServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * `whatsapp login` on a real Baileys socket against a server that offers QR refs, answers the pairing-code
 * request and asks for the restart as WhatsApp does; the phone's side (what pair-success leaves) is synthetic.
 */
async function login(phone?: string, clock?: FakeClock) {
  const dir = tempDir();
  const srv = await startFakePairingServer();
  server = srv;
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
    // On a fake clock, ten minutes: only its move ends the login within the test.
    timeoutMs: clock ? 600_000 : 20_000,
    ...(phone ? { phone } : {}),
    ...(clock ? { clock: clock.clock } : {}),
  });
  await waitFor('a socket', () => sockets.length > 0);
  const first = sockets[0] as WhatsAppSocket;
  const qrs: string[] = [];
  first.ev.on('connection.update', (u) => {
    if (u.qr) qrs.push(u.qr);
  });
  const phoneConfirms = async (socket: WhatsAppSocket) => {
    // What pair-success leaves behind (it needs the account's own keys), then WhatsApp's request to
    // reconnect (515) over the wire.
    socket.ev.emit('creds.update', {
      me: { id: `${FAKE_SELF_PHONE}:7@s.whatsapp.net`, lid: `${FAKE_SELF_PHONE}:7@lid`, name: 'Owner' },
      registered: true,
    });
    await srv.requestRestart();
  };
  return { done, first, sockets, said, authDir, qrs, server: srv, phoneConfirms };
}

describe('carapace whatsapp login', () => {
  it('draws the QR code WhatsApp offers, and finishes once the phone linked and the socket reopened', async () => {
    const { done, first, sockets, said, authDir, qrs, server: srv, phoneConfirms } = await login();
    const qr = await waitFor("the QR code from WhatsApp's first ref", () => qrs[0]);
    // Baileys builds it from the server's ref and this device's own keys.
    expect(qr).toMatch(/#ref-\d+,/);
    const art = await renderQrForTerminal(qr);
    await waitFor('the QR code drawn', () => said.some((s) => s.includes(art)));
    expect(said.join('\n')).toMatch(/Linked devices › Link a device/);
    await phoneConfirms(first);
    await waitFor('a second socket after the restart', () => sockets.length === 2);
    const result = await done;
    expect(result).toEqual({ linkedAs: `${FAKE_SELF_PHONE}@s.whatsapp.net`, already: false });
    expect(openAuthStore(authDir).isLinked()).toBe(true);
    // Linked over the reopened socket with the saved credentials, not by a second QR offer.
    expect(srv.counts()).toEqual({ offered: 1, loggedIn: 1 });
  });

  it('asks for a pairing code with --phone once WhatsApp offers to link, and shows it', async () => {
    const { done, first, said, qrs, server: srv, phoneConfirms } = await login('4915123456789');
    const line = await waitFor('the pairing code', () => said.find((s) => s.startsWith('Pairing code: ')));
    expect(line).toMatch(/^Pairing code: [A-Z0-9]{4}-[A-Z0-9]{4}\n/);
    // Asked once the socket was up and WhatsApp had offered a QR ref, never before; no QR drawn instead.
    expect(qrs.length).toBeGreaterThanOrEqual(1);
    expect(said.some((s) => s.includes('Scan this'))).toBe(false);
    await waitFor('the request at the server', () => srv.pairingRequests()[0]);
    expect(srv.pairingRequests()).toEqual([
      { jid: '4915123456789@s.whatsapp.net', stage: 'companion_hello', complete: true },
    ]);
    // A second QR (WhatsApp rotates them) does not ask for a second code.
    first.ev.emit('connection.update', { qr: '2@another-ref,noise,identity,adv' });
    await phoneConfirms(first);
    expect((await done).linkedAs).toBe(`${FAKE_SELF_PHONE}@s.whatsapp.net`);
    expect(said.filter((s) => s.startsWith('Pairing code: '))).toHaveLength(1);
    expect(srv.pairingRequests()).toHaveLength(1);
  });

  it('gives up when no phone links the device before the deadline on its clock', async () => {
    const clock = fakeClock(1_000_000);
    const { done, qrs } = await login(undefined, clock);
    await waitFor('a QR code offered', () => qrs[0]);
    clock.advance(600_000);
    await expect(done).rejects.toThrow(/no phone linked this device in time/);
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
