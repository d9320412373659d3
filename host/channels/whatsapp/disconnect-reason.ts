import type { ChannelState } from '../channel.ts';
import { whatsappWebVersionText } from './whatsapp-version.ts';

/**
 * What a closed WhatsApp connection means for the next step. Baileys reports the cause as a status code
 * on `lastDisconnect.error` (a Boom); the codes below are WhatsApp's own (`DisconnectReason`).
 */
export type CloseVerdict =
  /** Try again after the backoff delay. */
  | { kind: 'retry' }
  /** WhatsApp asks for a fresh connection (after pairing, and now and then): reconnect at once. */
  | { kind: 'restart' }
  /** Reconnecting cannot help; the owner has to act. */
  | { kind: 'terminal'; state: Extract<ChannelState, 'logged-out' | 'stopped'>; reason: string };

export function classifyClose(statusCode: number | undefined): CloseVerdict {
  switch (statusCode) {
    case 401:
      return {
        kind: 'terminal',
        state: 'logged-out',
        reason:
          'WhatsApp logged this device out (it was removed under Linked devices on the phone, or the phone ' +
          'unlinked it). Run `carapace whatsapp login` to link it again, then restart the host.',
      };
    case 440:
      return {
        kind: 'terminal',
        state: 'stopped',
        reason:
          'Another session took over this WhatsApp login (a second Carapace, or a copy of its data folder, ' +
          'connected with the same credentials). Stop the other one, then restart this host.',
      };
    case 403:
      return {
        kind: 'terminal',
        state: 'stopped',
        reason:
          'WhatsApp refused this account (403 forbidden; it may be restricted). Check the phone, then restart the host.',
      };
    case 405:
      return {
        kind: 'terminal',
        state: 'stopped',
        reason:
          `WhatsApp refused the pinned WhatsApp Web version ${whatsappWebVersionText()} as outdated. ` +
          'Update Carapace (it pins the version with its Baileys release), then restart the host.',
      };
    case 411:
      return {
        kind: 'terminal',
        state: 'stopped',
        reason:
          'WhatsApp reports a multi-device mismatch for this account. Run `carapace whatsapp login` again.',
      };
    case 515:
      return { kind: 'restart' };
    default:
      return { kind: 'retry' };
  }
}

/** The status code Baileys put on a close, if any. */
export function closeStatusCode(error: unknown): number | undefined {
  const output = (error as { output?: { statusCode?: unknown } } | undefined)?.output;
  return typeof output?.statusCode === 'number' ? output.statusCode : undefined;
}
