/**
 * How often the agent tells the host its answer so far (`run.draft`). The host keeps only the newest draft
 * and edits at most once a second, so more notifications would only cost frames on the IPC stream; the
 * final answer (message.send) replaces the last draft, so a draft held back here is never missed.
 */
import { LIMITS } from '../protocol.ts';

/** One notification per half second: twice the host's edit rate, so the newest text is always waiting. */
export const DRAFT_INTERVAL_MS = 500;
/**
 * No draft before the answer is this long: a short answer arrives whole anyway, and a turn that opens with
 * a line and then asks for a tool ("Let me check…") seldom gets this far before its first tool call.
 */
export const DRAFT_MIN_CHARS = 80;

export interface DraftThrottleDeps {
  send(text: string): void;
  /** Milliseconds on a monotonic clock. */
  now(): number;
  intervalMs?: number;
  minChars?: number;
}

/** Returns the function the model client calls with each text so far; it sends some of them. */
export function createDraftThrottle(deps: DraftThrottleDeps): (text: string) => void {
  const interval = deps.intervalMs ?? DRAFT_INTERVAL_MS;
  const minChars = deps.minChars ?? DRAFT_MIN_CHARS;
  let lastAt = -Infinity;
  let lastText = '';
  return (text) => {
    // Past the protocol's bound the host would refuse the frame: the final answer goes whole instead.
    if (text.length < minChars || text.length > LIMITS.draftText || text === lastText) return;
    const now = deps.now();
    if (now - lastAt < interval) return;
    lastAt = now;
    lastText = text;
    deps.send(text);
  };
}
