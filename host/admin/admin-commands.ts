import { normalizeApprovalId } from './approval-id.ts';

export type AdminCommand =
  | { kind: 'approve' | 'deny'; id: string }
  | { kind: 'pending' }
  | { kind: 'usage'; groupId?: string }
  | { kind: 'cancel-task'; taskId: string }
  | { kind: 'web-login' };

// A whole message, nothing else in it: "I approve abc123", "approve it" or "approve abc123 please" are
// conversation, not commands. An optional leading slash allows the Telegram habit of `/approve abc123`.
const DECISION = /^\/?(approve|deny)\s+(\S+)$/i;
const PENDING = /^\/?pending$/i;
const WEB_LOGIN = /^\/?web[ _]login$/i;
// `usage` or `usage <group id>` (group ids are lower-case letters, digits, - and _).
const USAGE = /^\/?usage(?:\s+([a-z0-9][a-z0-9_-]*))?$/i;
// `cancel <task id>`: task ids are eight characters of tasks-store's alphabet. "cancel payments" fits too:
// the handler takes it as a command only when such a task exists.
const CANCEL_TASK = /^\/?cancel\s+([a-hjkmnp-z2-9]{8})$/i;

/**
 * Recognises `approve <id>`, `deny <id>`, `pending`, `usage [group]`, `cancel <task id>` and `web login` (any
 * case, any surrounding whitespace).
 */
export function parseAdminCommand(text: string): AdminCommand | undefined {
  const t = text.trim();
  if (PENDING.test(t)) return { kind: 'pending' };
  if (WEB_LOGIN.test(t)) return { kind: 'web-login' };
  const usage = USAGE.exec(t);
  if (usage) return usage[1] ? { kind: 'usage', groupId: usage[1].toLowerCase() } : { kind: 'usage' };
  const cancel = CANCEL_TASK.exec(t);
  if (cancel) return { kind: 'cancel-task', taskId: (cancel[1] ?? '').toLowerCase() };
  const m = DECISION.exec(t);
  if (!m) return undefined;
  const id = normalizeApprovalId(m[2] ?? '');
  if (id === undefined) return undefined;
  return { kind: (m[1] ?? '').toLowerCase() === 'approve' ? 'approve' : 'deny', id };
}
