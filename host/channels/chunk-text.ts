const FENCE_CLOSE = '\n```';

/**
 * Splits a reply into pieces of at most `limit` characters, preferring paragraph breaks, then line breaks,
 * then spaces. A cut never leaves a code block open: when a block has to be split, the piece closes it and
 * the next piece reopens it with the same language, so each piece renders on its own.
 */
export function chunkText(text: string, limit: number): string[] {
  if (limit < 32) throw new Error(`chunk limit ${limit} is too small; use at least 32 characters`);
  const pieces: string[] = [];
  let rest = text.trim();
  let carry: string | undefined; // language of a code block continued from the previous piece
  while (rest.length > 0) {
    const prefix = carry === undefined ? '' : `\`\`\`${carry}\n`;
    const room = limit - prefix.length;
    if (rest.length <= room) {
      pieces.push(prefix + rest);
      break;
    }
    let cut = pickCut(rest, room - FENCE_CLOSE.length);
    let open = openBlockAfter(rest.slice(0, cut), carry);
    if (open !== undefined) {
      // Cutting inside a block that starts in this piece: end the piece before the block instead, if that
      // still leaves a reasonable piece.
      const start = lastOpeningFence(rest.slice(0, cut), carry);
      if (start !== undefined && start > room / 4) {
        cut = start;
        open = openBlockAfter(rest.slice(0, cut), carry);
      }
    }
    let piece = prefix + rest.slice(0, cut).trimEnd();
    if (open !== undefined) piece += FENCE_CLOSE;
    pieces.push(piece);
    rest = rest.slice(cut);
    rest = open === undefined ? rest.trimStart() : rest.replace(/^[ \t]*\n/, '');
    carry = open === undefined ? undefined : reopenInfo(open, limit);
  }
  return pieces;
}

/**
 * The info string to reopen a split block with. A very long one (e.g. a title attribute) would leave no
 * room in the next pieces, and a piece over the limit cannot be sent at all, so it is dropped instead.
 */
function reopenInfo(info: string, limit: number): string {
  return `\`\`\`${info}\n`.length + FENCE_CLOSE.length <= limit / 2 ? info : '';
}

function pickCut(body: string, budget: number): number {
  const window = body.slice(0, budget);
  for (const sep of ['\n\n', '\n', ' ']) {
    const at = window.lastIndexOf(sep);
    if (at > budget / 3) return at;
  }
  return budget;
}

function fenceLines(text: string): { index: number; info: string }[] {
  return [...text.matchAll(/^```([^\n`]*)$/gm)].map((m) => ({ index: m.index, info: (m[1] ?? '').trim() }));
}

/** The language of the code block left open at the end of `text`, or undefined when none is open. */
function openBlockAfter(text: string, carry: string | undefined): string | undefined {
  let open = carry;
  for (const f of fenceLines(text)) open = open === undefined ? f.info : undefined;
  return open;
}

/** Where the block that is open at the end of `text` started, when it started inside `text`. */
function lastOpeningFence(text: string, carry: string | undefined): number | undefined {
  let open = carry !== undefined;
  let start: number | undefined;
  for (const f of fenceLines(text)) {
    if (!open) start = f.index;
    open = !open;
  }
  return open ? start : undefined;
}
