import type { HostConfig } from '../../config/schema.ts';
import type { SeenChat } from '../../store/chats-seen-store.ts';
import type { GroupRecord } from '../../store/groups-store.ts';
import type { ConsoleFormat } from '../format.ts';
import { cell, h, row, table, type Html } from '../html.ts';

/** A register form for a chat that wrote: the owner names the group; the host checks as groups add does. */
function registerForm(s: SeenChat, csrf: string): Html {
  return h`<form method="post" action="/groups/register" class="inline register"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="channel" value="${s.channel}"><input type="hidden" name="chat" value="${s.chatId}"><input name="id" required maxlength="64" placeholder="group id" aria-label="group id for ${s.title}"> <button type="submit">Register</button></form>`;
}

/** Registered groups with the settings that decide what they may do, then the chats waiting to be registered. */
export function groupsPage(
  groups: GroupRecord[],
  config: HostConfig,
  seen: SeenChat[],
  csrf: string,
  f: ConsoleFormat,
  notice?: string,
): Html {
  return h`${notice ? h`<p class="notice" id="notice">${notice}</p>` : ''}${table(
    ['Group', 'Channel', 'Chat', 'Trigger', 'Services', 'Network', 'Taint', 'Admin'],
    groups.map((g) => {
      const c = config.groups[g.id];
      const taint = [g.taint.corruption ? 'untrusted' : '', g.taint.secret ? 'secret' : ''].filter(Boolean);
      return row([
        g.id,
        g.channel,
        cell(g.chatId, 'wrap'),
        g.isAdmin ? 'always' : (c?.trigger ?? 'mention'),
        c?.services ? c.services.join(', ') || 'none' : 'default',
        g.networkMode,
        taint.join(', ') || 'clean',
        g.isAdmin ? 'yes' : '',
      ]);
    }),
  )}
<h2>Chats that wrote but are not registered</h2>
${
  seen.length === 0
    ? h`<p class="muted">None.</p>`
    : table(
        ['Channel', 'Chat', 'Title', 'Last seen', 'Register'],
        seen.map((s) =>
          row([s.channel, cell(s.chatId, 'wrap'), s.title, f.at(s.lastSeenAt), registerForm(s, csrf)]),
        ),
      )
}`;
}
