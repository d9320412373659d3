/**
 * The model writes light Markdown; Telegram takes HTML with three characters to escape, the parse mode
 * that is hardest to break. Everything is escaped first and only a few well-formed spans become tags, so
 * unbalanced `*` or `_` stay literal. Should Telegram still refuse the entities, the sender falls back to
 * plain text (telegram-send.ts): a reply is never lost to formatting.
 */

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function inline(s: string): string {
  return escapeHtml(s)
    .replace(/\*\*([^*\n]+?)\*\*/g, '<b>$1</b>')
    .replace(/(^|[\s(])\*([^*\s][^*\n]*?)\*(?=$|[\s.,;:!?)])/g, '$1<b>$2</b>')
    .replace(/(^|[\s(])_([^_\s][^_\n]*?)_(?=$|[\s.,;:!?)])/g, '$1<i>$2</i>')
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)"]+)\)/g, '<a href="$2">$1</a>');
}

function withInlineCode(s: string): string {
  // Code spans first, so nothing inside them becomes a tag.
  return s
    .split(/(`[^`\n]+`)/g)
    .map((part) =>
      part.length > 2 && part.startsWith('`') && part.endsWith('`')
        ? `<code>${escapeHtml(part.slice(1, -1))}</code>`
        : inline(part),
    )
    .join('');
}

/** Light Markdown → Telegram HTML (parse_mode "HTML"). */
export function toTelegramHtml(text: string): string {
  return text
    .split(/(```[^\n]*\n[\s\S]*?```)/g)
    .map((part) => {
      const block = /^```([^\n]*)\n([\s\S]*?)\n?```$/.exec(part);
      if (!block) return withInlineCode(part);
      const lang = block[1]?.trim();
      const code = escapeHtml(block[2] ?? '');
      return lang && /^[\w+-]+$/.test(lang)
        ? `<pre><code class="language-${lang}">${code}</code></pre>`
        : `<pre>${code}</pre>`;
    })
    .join('');
}

/** Telegram's answer when the parse mode's markup is broken; the piece is then sent as plain text. */
export function isEntityParseError(description: string): boolean {
  return /can't parse entities|can't find end of the entity|unsupported start tag/i.test(description);
}
