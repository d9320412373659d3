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
  ['/memory', 'Memory'],
  ['/health', 'Health'],
  ['/config', 'Config'],
  ['/sessions', 'Sessions'],
  ['/message', 'Message'],
] as const;

/** The page shell: one stylesheet and one script, both from this host (the CSP allows nothing else). */
export function layout(p: {
  title: string;
  path: string;
  csrf?: string;
  timeZone?: string;
  body: Html;
}): Html {
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
${p.timeZone ? h`<footer class="muted">Times are in ${p.timeZone} (<code>[assistant] timezone</code>)${p.timeZone === 'UTC' ? '' : '; hover one for UTC'}.</footer>` : ''}
</body>
</html>`;
}

/** A form that changes state: POST with the session's CSRF token. */
export function postButton(action: string, csrf: string, label: string, cls = ''): Html {
  return h`<form method="post" action="${action}" class="inline"><input type="hidden" name="_csrf" value="${csrf}"><button type="submit"${cls ? h` class="${cls}"` : ''}>${label}</button></form>`;
}

/** A table cell: its content and, optionally, a class (`wrap` for long text, `status`, `cost`). */
export interface Cell {
  html: Html | string | number;
  cls?: string;
}
export const cell = (html: Cell['html'], cls?: string): Cell => (cls ? { html, cls } : { html });

/** A table row: its cells, in the order of the head, and attributes such as h` data-run="12"`. */
export interface Row {
  cells: readonly (Cell | Cell['html'])[];
  attrs?: Html;
}
export const row = (cells: Row['cells'], attrs?: Html): Row => (attrs ? { cells, attrs } : { cells });

const isCell = (c: Cell | Cell['html']): c is Cell => typeof c === 'object' && c !== null && 'html' in c;

/**
 * A table that is a table on a wide screen (inside a box that scrolls on its own, so it never widens the
 * page) and a stack of cards on a phone: every cell carries its column's name as `data-label`, which the
 * stylesheet shows beside the value under the breakpoint, so each row's facts are read without scrolling.
 */
export function table(head: readonly string[], rows: readonly Row[]): Html {
  return h`<div class="scroll"><table class="cards"><thead><tr>${head.map((c) => h`<th>${c}</th>`)}</tr></thead><tbody>${rows.map(
    (r) =>
      h`<tr${r.attrs ?? ''}>${r.cells.map((c, i) => {
        const { html, cls } = isCell(c) ? c : { html: c, cls: undefined };
        return h`<td data-label="${head[i] ?? ''}"${cls ? h` class="${cls}"` : ''}>${html}</td>`;
      })}</tr>`,
  )}</tbody></table></div>`;
}
