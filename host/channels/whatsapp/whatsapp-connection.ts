import type { Logger } from '../../logging/logger.ts';
import type { WhatsAppAuthStore } from './auth-store.ts';
import type { ConnectionEvents } from './connection-controller.ts';
import { closeStatusCode } from './disconnect-reason.ts';
import type { WhatsAppHandlers } from './whatsapp-handlers.ts';
import type { SocketFactory, WhatsAppSocket } from './whatsapp-socket.ts';

/** One socket the connection controller opened, as the channel sends through it. */
export interface LiveSocket {
  sock: WhatsAppSocket;
  end(reason: string): void;
  /** Whether this connection has closed (WhatsApp closed it, or the controller left it). */
  closed(): boolean;
}

export interface WhatsAppConnectDeps {
  auth: WhatsAppAuthStore;
  makeSocket: SocketFactory;
  url: string;
  /** The channel's logger; Baileys gets a quieter child of it. */
  logger: Logger;
  handlers: WhatsAppHandlers;
}

/**
 * Opens one WhatsApp socket for the connection controller (connection-controller.ts): its ups and downs go
 * to the controller as events, any frame is a sign of life for its watchdog, new credentials are saved,
 * and messages and group changes go to the handlers (whatsapp-handlers.ts).
 */
export function whatsappConnector(deps: WhatsAppConnectDeps): (events: ConnectionEvents) => LiveSocket {
  const log = deps.logger;
  const { auth, handlers } = deps;
  // Baileys is chatty at info level; its warnings and errors are what an owner may need.
  const baileysLogger = log.child(
    { subsystem: 'baileys' },
    { level: log.isLevelEnabled('debug') ? log.level : log.isLevelEnabled('warn') ? 'warn' : log.level },
  );
  return (events) => {
    const sock = deps.makeSocket({ auth: auth.state, url: deps.url, logger: baileysLogger });
    let closed = false;
    sock.ev.on('connection.update', (u) => {
      if (u.qr) {
        // Only an unlinked device is offered a QR code: the host cannot link it, `whatsapp login` can.
        events.closed(401, 'WhatsApp offered a QR code: this device is not linked');
        return;
      }
      if (u.connection === 'open') {
        events.opened();
        void handlers.syncGroups(sock);
      } else if (u.connection === 'close') {
        closed = true;
        const err = u.lastDisconnect?.error;
        events.closed(closeStatusCode(err), err?.message ?? 'connection closed');
      }
    });
    sock.ev.on('creds.update', () => {
      auth.saveCreds().catch((err: unknown) => log.error({ err }, 'saving WhatsApp credentials failed'));
    });
    sock.ev.on('messages.upsert', ({ messages, type }) => handlers.upsert(sock, messages, type));
    sock.ev.on('groups.upsert', (groups) => {
      for (const g of groups) handlers.seeChat(g.id, g.subject);
    });
    sock.ev.on('groups.update', (updates) => {
      for (const g of updates) if (g.id && g.subject) handlers.seeChat(g.id, g.subject);
    });
    sock.ws.on('frame', () => events.activity());
    return {
      sock,
      end: (reason: string) => {
        closed = true;
        void sock.end(new Error(reason));
      },
      closed: () => closed,
    };
  };
}
