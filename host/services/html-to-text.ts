/**
 * A crude HTML → text reduction for the agent to read. It is a linear scan (no backtracking regexes
 * over the page, so a hostile page cannot make it slow) and it only ever removes markup: whatever it
 * returns is still untrusted text and gets fenced by the caller.
 */

/** Elements whose content is not page text. */
const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'iframe', 'object', 'svg', 'math']);
const BLOCKS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'br',
  'dd',
  'div',
  'dl',
  'dt',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'tbody',
  'tfoot',
  'thead',
  'title',
  'tr',
  'ul',
]);

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  copy: '©',
  reg: '®',
  trade: '™',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  middot: '·',
  bull: '•',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  deg: '°',
  times: '×',
  divide: '÷',
  sect: '§',
  para: '¶',
};

/** Elements that each start one line of text: rows, list items, definitions. */
const LINES = new Set(['li', 'tr', 'dt', 'dd']);

const TAG_NAME = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/y;

/** Index of the `>` that ends the tag opened at `start`, honouring quoted attribute values; -1 if none. */
function tagEnd(html: string, start: number): number {
  let quote = '';
  for (let i = start + 1; i < html.length; i++) {
    const ch = html[i];
    if (quote) {
      if (ch === quote) quote = '';
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === '>') {
      return i;
    }
  }
  return -1;
}

function decodeEntities(text: string): string {
  return text.replace(
    /&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z][a-zA-Z0-9]{1,31});/g,
    (whole, body: string) => {
      if (body.startsWith('#')) {
        const code =
          body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
        const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
        return valid ? String.fromCodePoint(code) : '\uFFFD';
      }
      return NAMED_ENTITIES[body.toLowerCase()] ?? whole;
    },
  );
}

function tidyWhitespace(text: string): string {
  return text
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export function htmlToText(html: string): string {
  const out: string[] = [];
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt === -1) {
      out.push(html.slice(i));
      break;
    }
    out.push(html.slice(i, lt));
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      i = end === -1 ? html.length : end + 3;
      continue;
    }
    TAG_NAME.lastIndex = lt;
    const match = TAG_NAME.exec(html);
    const declaration = html[lt + 1] === '!' || html[lt + 1] === '?';
    if (!match && !declaration) {
      out.push('<'); // a bare "<" in text, e.g. "a < b"
      i = lt + 1;
      continue;
    }
    const end = tagEnd(html, lt);
    if (end === -1) break; // an unterminated tag: the rest is markup, not text
    i = end + 1;
    if (!match) continue;
    const closing = match[1] === '/';
    const name = (match[2] ?? '').toLowerCase();
    if (!closing && SKIPPED.has(name) && html[end - 1] !== '/') {
      // Only `name` comes from the page here after a whitelist check, so the pattern is fixed.
      const closer = new RegExp(`</${name}[\\s/>]`, 'gi');
      closer.lastIndex = i;
      const found = closer.exec(html);
      if (!found) break;
      const closerEnd = html.indexOf('>', found.index);
      i = closerEnd === -1 ? html.length : closerEnd + 1;
      out.push(' ');
      continue;
    }
    if (name === 'td' || name === 'th') {
      out.push(' ');
    } else if (LINES.has(name)) {
      // A new line where one starts; closing it too would leave blank lines between rows and items.
      if (!closing) out.push(name === 'li' ? '\n- ' : '\n');
    } else if (BLOCKS.has(name)) {
      out.push('\n');
    }
  }
  return tidyWhitespace(decodeEntities(out.join('')));
}
