import { h, type Html } from '../html.ts';

/**
 * The owner's message box for the console's admin group: what is typed goes through the console channel's
 * own path (`carapace send main`), so an owner command gets the host's answer and anything else the
 * assistant's. After a send the page follows what the host delivered to the admin chat since then, live.
 */
export function messagePage(p: {
  csrf: string;
  groupId: string | undefined;
  clientMessageId: string;
  notice?: string;
  text?: string;
  after?: number;
  replies?: Html;
}): Html {
  if (p.groupId === undefined)
    return h`${p.notice ? h`<p class="notice" id="notice">${p.notice}</p>` : ''}<p class="muted">This host has no local console admin group to write to.</p>`;
  return h`${p.notice ? h`<p class="notice" id="notice">${p.notice}</p>` : ''}
<form method="post" action="/message" class="message" id="message-form">
<input type="hidden" name="_csrf" value="${p.csrf}">
<input type="hidden" name="clientMessageId" value="${p.clientMessageId}">
<label for="message-text">To the admin group <strong>${p.groupId}</strong>, as you (the same as <code>carapace send ${p.groupId}</code>):</label>
<textarea id="message-text" name="text" rows="4" maxlength="32000" required>${p.text ?? ''}</textarea>
<button type="submit" class="approve">Send</button>
</form>
${
  p.after === undefined
    ? ''
    : h`<h2>Sent. Delivered to the admin chat since then</h2>
<div id="replies" data-live="chat" data-src="/message/replies?after=${p.after}">${p.replies ?? ''}</div>`
}`;
}

/** What the host delivered to the admin chat after the message, oldest first. */
export function repliesList(replies: { id: number; text: string }[]): Html {
  if (replies.length === 0)
    return h`<p class="muted" id="no-replies">Nothing yet; this updates by itself.</p>`;
  return h`${replies.map((r) => h`<pre class="reply" data-outbox="${r.id}">${r.text}</pre>`)}`;
}
