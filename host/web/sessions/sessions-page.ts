import type { WebSessionRecord } from '../../store/web-sessions-store.ts';
import type { ConsoleFormat } from '../format.ts';
import { cell, h, postButton, row, table, type Html } from '../html.ts';

/** Signed-in sessions, each revocable; this one marked. */
export function sessionsPage(
  sessions: WebSessionRecord[],
  current: string,
  csrf: string,
  f: ConsoleFormat,
): Html {
  return h`${table(
    ['Session', 'Signed in', 'Last seen', 'Expires', 'Link from', 'Browser', ''],
    sessions.map((s) =>
      row(
        [
          `${s.id}${s.id === current ? ' (this one)' : ''}`,
          f.at(s.createdAt),
          f.at(s.lastSeenAt),
          f.at(s.expiresAt),
          s.issuedTo,
          cell(s.userAgent, 'wrap'),
          postButton(`/sessions/${s.id}/revoke`, csrf, 'Revoke'),
        ],
        h` data-session="${s.id}"`,
      ),
    ),
  )}
<p>${postButton('/logout', csrf, 'Sign out')}</p>`;
}
