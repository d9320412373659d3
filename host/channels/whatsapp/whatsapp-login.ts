import type { Logger } from '../../logging/logger.ts';
import QRCode from 'qrcode';
import { openAuthStore, type WhatsAppAuthStore } from './auth-store.ts';
import { closeStatusCode } from './disconnect-reason.ts';
import { selfIdentity } from './jids.ts';
import { makeBaileysSocket, type SocketFactory, type WhatsAppSocket } from './whatsapp-socket.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';

export interface LoginDeps {
  /** The channel's auth folder (`<data>/channels/whatsapp`). */
  authDir: string;
  url: string;
  logger: Logger;
  /** One line (or block) of output for the person at the terminal. */
  say(text: string): void;
  /** Digits with country code: link with a pairing code typed on the phone instead of a QR code. */
  phone?: string;
  makeSocket?: SocketFactory;
  renderQr?: (qr: string) => Promise<string>;
  timeoutMs?: number;
  /** The deadline's time (default: the system clock; tests pass a fake one). */
  clock?: Clock;
}

export const renderQrForTerminal = (qr: string): Promise<string> =>
  QRCode.toString(qr, { type: 'terminal', small: true });

/** A pairing code as WhatsApp shows it on the phone: ABCD-EFGH. */
export const formatPairingCode = (code: string): string => code.match(/.{1,4}/g)?.join('-') ?? code;

type Attempt =
  { kind: 'linked'; as: string } | { kind: 'restart' } | { kind: 'failed'; reason: string; code?: number };

/**
 * `carapace whatsapp login`: links this machine as a device of the owner's WhatsApp account, by QR code or
 * pairing code, and waits until the phone has confirmed. WhatsApp closes the socket once after pairing
 * (515, restart required); the login reconnects and finishes on the reopened socket. Credentials that
 * WhatsApp no longer accepts (401) are forgotten and the linking starts over.
 */
export async function linkWhatsApp(deps: LoginDeps): Promise<{ linkedAs: string; already: boolean }> {
  if (deps.phone !== undefined && !/^\d{7,15}$/.test(deps.phone)) {
    throw new Error(
      `--phone takes digits with the country code and nothing else, e.g. 4915123456789 (got "${deps.phone}")`,
    );
  }
  const auth = openAuthStore(deps.authDir);
  const wasLinked = auth.isLinked();
  const clock = deps.clock ?? systemClock;
  const deadline = clock.now() + (deps.timeoutMs ?? 180_000);
  let pairingRequested = false;
  for (let round = 0; round < 6; round++) {
    const result = await attempt(deps, clock, auth, deadline, () => {
      const first = !pairingRequested;
      pairingRequested = true;
      return first;
    });
    if (result.kind === 'linked') return { linkedAs: result.as, already: wasLinked && round === 0 };
    if (result.kind === 'restart') continue;
    if (result.code === 401 && auth.isLinked()) {
      deps.say('WhatsApp no longer accepts the saved login; starting over.');
      await auth.clear();
      pairingRequested = false;
      continue;
    }
    throw new Error(result.reason);
  }
  throw new Error('WhatsApp kept restarting the connection; try `carapace whatsapp login` again');
}

function attempt(
  deps: LoginDeps,
  clock: Clock,
  auth: WhatsAppAuthStore,
  deadline: number,
  firstPairingRequest: () => boolean,
): Promise<Attempt> {
  const makeSocket = deps.makeSocket ?? makeBaileysSocket;
  const sock: WhatsAppSocket = makeSocket({ auth: auth.state, url: deps.url, logger: deps.logger });
  return new Promise<Attempt>((resolve) => {
    let settled = false;
    const finish = (a: Attempt) => {
      if (settled) return;
      settled = true;
      cancelTimer();
      void auth.flush().then(() => {
        void sock.end(undefined);
        resolve(a);
      });
    };
    const cancelTimer = clock.setTimer(
      () =>
        finish({
          kind: 'failed',
          reason: 'no phone linked this device in time; run `carapace whatsapp login` again',
        }),
      Math.max(0, deadline - clock.now()),
    );
    sock.ev.on('creds.update', () => {
      auth
        .saveCreds()
        .catch((err: unknown) => deps.logger.error({ err }, 'saving WhatsApp credentials failed'));
    });
    sock.ev.on('connection.update', (u) => {
      if (u.qr) {
        // A QR code means the socket is up and WhatsApp waits for a phone: the moment to ask for a code too.
        if (deps.phone !== undefined) {
          if (!firstPairingRequest()) return;
          sock.requestPairingCode(deps.phone).then(
            (code) =>
              deps.say(
                `Pairing code: ${formatPairingCode(code)}\nOn the phone: WhatsApp › Settings › Linked devices › ` +
                  'Link a device › Link with phone number instead, and type the code.',
              ),
            (err: unknown) =>
              finish({
                kind: 'failed',
                reason: `WhatsApp refused a pairing code: ${errorMessage(err)}`,
              }),
          );
          return;
        }
        (deps.renderQr ?? renderQrForTerminal)(u.qr).then(
          (art) =>
            deps.say(
              `${art}\nScan this with the phone: WhatsApp › Settings › Linked devices › Link a device.`,
            ),
          (err: unknown) => deps.logger.error({ err }, 'could not draw the QR code'),
        );
        return;
      }
      if (u.connection === 'open') {
        const me = selfIdentity(auth.state.creds.me);
        if (me && auth.isLinked()) finish({ kind: 'linked', as: me.phone });
        return;
      }
      if (u.connection === 'close') {
        const err = u.lastDisconnect?.error;
        const code = closeStatusCode(err);
        if (code === 515) return finish({ kind: 'restart' });
        finish({
          kind: 'failed',
          reason: `WhatsApp closed the connection (${err?.message ?? 'closed'}${code ? `, ${code}` : ''})`,
          ...(code ? { code } : {}),
        });
      }
    });
  });
}

/**
 * `carapace whatsapp logout`: tells WhatsApp to remove this linked device, then forgets the credentials.
 * When WhatsApp cannot be reached the credentials are forgotten all the same, and the owner is told to
 * remove the device on the phone.
 */
export async function unlinkWhatsApp(
  deps: Omit<LoginDeps, 'phone' | 'renderQr'>,
): Promise<{ unlinkedRemotely: boolean }> {
  const auth = openAuthStore(deps.authDir);
  if (!auth.isLinked()) {
    await auth.clear();
    return { unlinkedRemotely: false };
  }
  const makeSocket = deps.makeSocket ?? makeBaileysSocket;
  const sock = makeSocket({ auth: auth.state, url: deps.url, logger: deps.logger });
  const clock = deps.clock ?? systemClock;
  const opened = await new Promise<boolean>((resolve) => {
    const cancelTimer = clock.setTimer(() => resolve(false), deps.timeoutMs ?? 20_000);
    sock.ev.on('connection.update', (u) => {
      if (u.connection === 'open' || u.connection === 'close') {
        cancelTimer();
        resolve(u.connection === 'open');
      }
    });
  });
  let unlinked = false;
  if (opened) {
    unlinked = await sock.logout('carapace whatsapp logout').then(
      () => true,
      () => false,
    );
  }
  void sock.end(undefined);
  await auth.clear();
  return { unlinkedRemotely: unlinked };
}
