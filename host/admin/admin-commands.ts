import { normalizeApprovalId } from './approval-id.ts';

export type AdminCommand =
  | { kind: 'approve' | 'deny'; id: string }
  | { kind: 'pending' }
  | { kind: 'usage'; groupId?: string }
  | { kind: 'web-login' };

// A whole message, nothing else in it: "I approve abc123", "approve it" or "approve abc123 please" are
// conversation, not commands. An optional leading slash allows the Telegram habit of `/approve abc123`.
const DECISION = /^\/?(approve|deny)\s+(\S+)$/i;
const PENDING = /^\/?pending$/i;
const WEB_LOGIN = /^\/?web[ _]login$/i;
// `usage` or `usage <group id>` (group ids are lower-case letters, digits, - and _).
const USAGE = /^\/?usage(?:\s+([a-z0-9][a-z0-9_-]*))?$/i;

/**
 * Recognises `approve <id>`, `deny <id>`, `pending`, `usage [group]` and `web login` (any case, any surrounding
 * whitespace).
 */
export function parseAdminCommand(text: string): AdminCommand | undefined {
  const t = text.trim();
  if (PENDING.test(t)) return { kind: 'pending' };
  if (WEB_LOGIN.test(t)) return { kind: 'web-login' };
  const usage = USAGE.exec(t);
  if (usage) return usage[1] ? { kind: 'usage', groupId: usage[1].toLowerCase() } : { kind: 'usage' };
  const m = DECISION.exec(t);
  if (!m) return undefined;
  const id = normalizeApprovalId(m[2] ?? '');
  if (id === undefined) return undefined;
  return { kind: (m[1] ?? '').toLowerCase() === 'approve' ? 'approve' : 'deny', id };
}
