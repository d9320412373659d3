import {
  Browsers,
  isJidBroadcast,
  isJidNewsletter,
  makeCacheableSignalKeyStore,
  makeWASocket,
  type AuthenticationState,
  type WASocket,
} from '@whiskeysockets/baileys';
import type { Logger } from '../../logging/logger.ts';
import { WHATSAPP_WEB_VERSION } from './whatsapp-version.ts';

/** The part of a Baileys socket this channel uses: narrow, so tests can wrap a real socket at this seam. */
export type WhatsAppSocket = Pick<
  WASocket,
  | 'ev'
  | 'ws'
  | 'user'
  | 'end'
  | 'sendMessage'
  | 'sendPresenceUpdate'
  | 'groupFetchAllParticipating'
  | 'groupMetadata'
  | 'signalRepository'
  | 'requestPairingCode'
  | 'logout'
>;

export interface SocketOptions {
  auth: AuthenticationState;
  url: string;
  logger: Logger;
}

export type SocketFactory = (opts: SocketOptions) => WhatsAppSocket;

/**
 * A Baileys socket configured for a host that must not disturb its owner or talk to anyone but WhatsApp:
 * the pinned Web version (no version lookup), no `available` presence on connect (an always-online linked
 * device silences the phone's notifications), no full history sync, no status or newsletter traffic.
 */
export const makeBaileysSocket: SocketFactory = ({ auth, url, logger }) =>
  makeWASocket({
    waWebSocketUrl: url,
    version: WHATSAPP_WEB_VERSION,
    browser: Browsers.ubuntu('Chrome'),
    auth: { creds: auth.creds, keys: makeCacheableSignalKeyStore(auth.keys, logger) },
    logger,
    markOnlineOnConnect: false,
    syncFullHistory: false,
    generateHighQualityLinkPreview: false,
    shouldIgnoreJid: (jid) => Boolean(isJidBroadcast(jid) || isJidNewsletter(jid)),
    getMessage: async () => undefined,
  });
