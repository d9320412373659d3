/**
 * The model writes Markdown; WhatsApp has its own marks: `*bold*`, `_italic_`, `~strike~`, `` `code` ``
 * and ``` blocks, and shows everything else literally. Code (blocks and inline) is left exactly as it is.
 */
export function markdownToWhatsApp(text: string): string {
  const out: string[] = [];
  let inFence = false;
  for (const line of text.split('\n')) {
    const fence = /^(\s*)```/.exec(line);
    if (fence) {
      // WhatsApp would show a fence's language tag as text: drop it.
      out.push(inFence ? line : `${fence[1] ?? ''}\`\`\``);
      inFence = !inFence;
      continue;
    }
    out.push(inFence ? line : convertLine(line));
  }
  return out.join('\n');
}

const BOLD = '\uE000';

function convertLine(line: string): string {
  // Inline code spans are kept aside so nothing inside them changes.
  const spans: string[] = [];
  let s = line.replace(/`[^`\n]+`/g, (m) => `\uE001${spans.push(m) - 1}\uE001`);

  const heading = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/.exec(s);
  if (heading) s = `${BOLD}${stripEmphasis(heading[1] ?? '')}${BOLD}`;
  // List bullets "* item" would read as the start of bold text.
  s = s.replace(/^(\s*)[*+]\s+/, '$1- ');
  s = s.replace(/!\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g, (_m, alt: string, url: string) =>
    alt ? `${alt} (${url})` : url,
  );
  s = s.replace(/\[([^\]]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g, (_m, label: string, url: string) =>
    label === url || `mailto:${label}` === url ? url : `${label} (${url})`,
  );
  s = s.replace(/<(https?:\/\/[^>\s]+)>/g, '$1');
  s = s.replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, `${BOLD}$2${BOLD}`);
  s = s.replace(/(^|[^\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])/g, '$1_$2_');
  s = s.replace(/~~(?=\S)(.+?)(?<=\S)~~/g, '~$1~');
  s = s.replaceAll(BOLD, '*');
  return s.replace(/\uE001(\d+)\uE001/g, (_m, i: string) => spans[Number(i)] ?? '');
}

/** A heading becomes bold as a whole; marks inside it would only nest badly. */
function stripEmphasis(s: string): string {
  return s.replace(/(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1/g, '$2');
}
