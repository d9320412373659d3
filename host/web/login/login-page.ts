import { h, type Html } from '../html.ts';

const HOW = h`<p>Run <code>carapace web login</code> on the host, or send <code>web login</code> in an admin chat,
and open the link it gives (once, within minutes).</p>`;

/**
 * The link opens this page, and only the button's POST uses the link: a chat app or mail scanner that
 * fetches the link to preview it does not spend it, and the token never sits in a GET that caches keep.
 */
export function loginPage(token: string | undefined): Html {
  if (!token) return h`<p>You are not signed in.</p>${HOW}`;
  return h`<form method="post" action="/login"><input type="hidden" name="token" value="${token}">
<button type="submit" id="sign-in">Sign in to this console</button></form>`;
}

export function loginRefusedPage(): Html {
  return h`<p id="refused">This sign-in link is unknown, already used or expired. Each link works once.</p>${HOW}`;
}
