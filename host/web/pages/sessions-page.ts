import type { WebSessionRecord } from '../../store/web-sessions-store.ts';
import { h, postButton, table, when, type Html } from '../html.ts';

/** Signed-in sessions, each revocable; this one marked. */
export function sessionsPage(sessions: WebSessionRecord[], current: string, csrf: string): Html {
  return h`${table(
    ['Session', 'Signed in', 'Last seen', 'Expires', 'Link from', 'Browser', ''],
    sessions.map(
      (s) =>
        h`<tr data-session="${s.id}"><td>${s.id}${s.id === current ? ' (this one)' : ''}</td><td>${when(s.createdAt)}</td><td>${when(s.lastSeenAt)}</td><td>${when(s.expiresAt)}</td><td>${s.issuedTo}</td><td class="wrap">${s.userAgent}</td><td>${postButton(`/sessions/${s.id}/revoke`, csrf, 'Revoke')}</td></tr>`,
    ),
  )}
<p>${postButton('/logout', csrf, 'Sign out')}</p>`;
}
