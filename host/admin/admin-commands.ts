import { normalizeApprovalId } from './approval-id.ts';

export type AdminCommand = { kind: 'approve' | 'deny'; id: string } | { kind: 'pending' };

// A whole message, nothing else in it: "I approve abc123", "approve it" or "approve abc123 please" are
// conversation, not commands. An optional leading slash allows the Telegram habit of `/approve abc123`.
const DECISION = /^\/?(approve|deny)\s+(\S+)$/i;
const PENDING = /^\/?pending$/i;

/** Recognises `approve <id>`, `deny <id>` and `pending` (any case, any surrounding whitespace). */
export function parseAdminCommand(text: string): AdminCommand | undefined {
  const t = text.trim();
  if (PENDING.test(t)) return { kind: 'pending' };
  const m = DECISION.exec(t);
  if (!m) return undefined;
  const id = normalizeApprovalId(m[2] ?? '');
  if (id === undefined) return undefined;
  return { kind: (m[1] ?? '').toLowerCase() === 'approve' ? 'approve' : 'deny', id };
}
