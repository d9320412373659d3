import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

/** Escaped HTML: every interpolated string is escaped by hono's `html` helper, arrays are joined. */
export type Html = HtmlEscapedString;

/** `html`, synchronous: the console never interpolates a promise, so a page is one string. */
export function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const out = html(strings, ...values);
  if (out instanceof Promise) throw new Error('a console fragment must render synchronously');
  return out;
}

export const NAV = [
  ['/approvals', 'Approvals'],
  ['/runs', 'Runs'],
  ['/spend', 'Spend'],
  ['/audit', 'Audit'],
  ['/groups', 'Groups'],
  ['/health', 'Health'],
  ['/config', 'Config'],
  ['/sessions', 'Sessions'],
] as const;

/** The page shell: one stylesheet and one script, both from this host (the CSP allows nothing else). */
export function layout(p: { title: string; path: string; csrf?: string; body: Html }): Html {
  return h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${p.csrf ? h`<meta name="csrf" content="${p.csrf}">` : ''}
<title>${p.title} · Carapace</title>
<link rel="stylesheet" href="/assets/console.css">
<script src="/assets/console.js" defer></script>
</head>
<body>
<header><strong>Carapace</strong>${
    p.csrf
      ? h`<nav>${NAV.map(
          ([href, label]) =>
            h`<a href="${href}"${p.path.startsWith(href) ? h` aria-current="page"` : ''}>${label}</a>`,
        )}</nav>`
      : ''
  }</header>
<main>
<h1>${p.title}</h1>
${p.body}
</main>
</body>
</html>`;
}

/** A form that changes state: POST with the session's CSRF token. */
export function postButton(action: string, csrf: string, label: string, cls = ''): Html {
  return h`<form method="post" action="${action}" class="inline"><input type="hidden" name="_csrf" value="${csrf}"><button type="submit"${cls ? h` class="${cls}"` : ''}>${label}</button></form>`;
}

/** A table inside a box that scrolls on its own, so a wide table never widens the page on a phone. */
export function table(head: readonly string[], rows: Html[]): Html {
  return h`<div class="scroll"><table><thead><tr>${head.map((c) => h`<th>${c}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

export const when = (epochMs: number | null): string =>
  epochMs === null ? '' : new Date(epochMs).toISOString().replace('T', ' ').slice(0, 19);
