import { UNTRUSTED_TEXT_END_MARKER } from '../../host/services/untrusted-fence.ts';

/** How a fence of a stranger's words begins (host/services/untrusted-fence.ts). */
export const FENCE_START = '<<<UNTRUSTED TEXT from ';

/** The text with every fenced part taken out: what the agent reads as the sender's own. */
export function outsideFences(text: string): string {
  const start = FENCE_START;
  let out = '';
  let rest = text;
  for (;;) {
    const at = rest.indexOf(start);
    if (at < 0) return out + rest;
    out += rest.slice(0, at);
    const end = rest.indexOf(UNTRUSTED_TEXT_END_MARKER, at);
    // An unclosed fence fences everything after it.
    if (end < 0) return out;
    rest = rest.slice(end + UNTRUSTED_TEXT_END_MARKER.length);
  }
}
