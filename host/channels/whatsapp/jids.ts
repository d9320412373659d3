/**
 * WhatsApp ids ("JIDs") as this channel uses them. Baileys 7 addresses people by phone number
 * (`<digits>@s.whatsapp.net`) or by LID (`<digits>@lid`), each possibly with a device (`:<n>`) or agent
 * (`_<n>`) suffix; groups are `<digits>[-<digits>]@g.us`. Everything here is pure string work.
 */

const USER_JID = /^(\d+)(?:_\d+)?(?::\d+)?@(s\.whatsapp\.net|c\.us|lid|hosted|hosted\.lid)$/;

export const isGroupJid = (jid: string | null | undefined): jid is string =>
  typeof jid === 'string' && /^\d+(?:-\d+)?@g\.us$/.test(jid);

/** `status@broadcast`, a broadcast list (`<id>@broadcast`) or a channel (`<id>@newsletter`). */
export const isBroadcastJid = (jid: string | null | undefined): jid is string =>
  typeof jid === 'string' && /@(?:broadcast|newsletter)$/.test(jid);

export const isLidJid = (jid: string | null | undefined): jid is string =>
  typeof jid === 'string' && /@(?:hosted\.)?lid$/.test(jid);

export const isPhoneJid = (jid: string | null | undefined): jid is string =>
  typeof jid === 'string' && /@(?:s\.whatsapp\.net|c\.us|hosted)$/.test(jid);

/** The user without device or agent: `15551234567:3@s.whatsapp.net` → `15551234567@s.whatsapp.net`. */
export function normalizeUserJid(jid: string | null | undefined): string | undefined {
  if (!jid) return undefined;
  const m = USER_JID.exec(jid);
  if (!m) return undefined;
  const server =
    m[2] === 'c.us'
      ? 's.whatsapp.net'
      : m[2] === 'hosted'
        ? 's.whatsapp.net'
        : m[2] === 'hosted.lid'
          ? 'lid'
          : m[2];
  return `${m[1]}@${server}`;
}

/** The linked account as Baileys reports it (`sock.user` / `creds.me`). */
export interface SelfIdentity {
  /** Phone-number JID, normalized. */
  phone: string;
  /** LID, normalized, once WhatsApp told us. */
  lid?: string;
}

export function selfIdentity(
  me: { id?: string | null; lid?: string | null } | undefined,
): SelfIdentity | undefined {
  const phone = normalizeUserJid(me?.id);
  if (!phone) return undefined;
  const lid = normalizeUserJid(me?.lid);
  return lid ? { phone, lid } : { phone };
}

/** Whether the id is the linked account itself, in either form. */
export function isSelf(self: SelfIdentity, jid: string | null | undefined): boolean {
  const n = normalizeUserJid(jid);
  return n !== undefined && (n === self.phone || n === self.lid);
}
