/**
 * The agent's draft throttle: at most one run.draft per interval however fast the model writes, nothing
 * before the answer is long enough to be worth streaming, nothing past the protocol's bound.
 */
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../../container-agent/src/protocol.ts';
import { createDraftThrottle, DRAFT_MIN_CHARS } from '../../../container-agent/src/run/draft-throttle.ts';

function throttleAt() {
  let now = 0;
  const sent: string[] = [];
  const offer = createDraftThrottle({ send: (t) => sent.push(t), now: () => now, intervalMs: 500, minChars: 10 });
  return { offer, sent, advance: (ms: number) => (now += ms) };
}

describe('draft throttle', () => {
  it('sends at most one draft per interval, the text as it stands then', () => {
    const { offer, sent, advance } = throttleAt();
    // A token every 20 ms for 2 s: 100 texts offered.
    let text = 'The answer';
    for (let i = 0; i < 100; i++) {
      text += ` w${i}`;
      offer(text);
      advance(20);
    }
    expect(sent.length).toBe(4);
    expect(sent[0]).toBe('The answer w0');
    for (const [i, draft] of sent.entries()) {
      expect(text.startsWith(draft)).toBe(true);
      if (i > 0) expect(draft.length).toBeGreaterThan(sent[i - 1]!.length);
    }
  });

  it('waits for the answer to reach its minimum length before the first draft', () => {
    const { offer, sent, advance } = throttleAt();
    offer('Short');
    advance(1000);
    offer('Still shor');
    expect(sent).toEqual(['Still shor']);
  });

  it('sends nothing past the protocol bound, nor the same text twice', () => {
    const { offer, sent, advance } = throttleAt();
    offer('x'.repeat(LIMITS.draftText + 1));
    advance(1000);
    offer('same text!');
    advance(1000);
    offer('same text!');
    expect(sent).toEqual(['same text!']);
  });

  it('by default holds back answers shorter than a couple of lines', () => {
    const sent: string[] = [];
    const offer = createDraftThrottle({ send: (t) => sent.push(t), now: () => 0 });
    offer('y'.repeat(DRAFT_MIN_CHARS - 1));
    expect(sent).toEqual([]);
    offer('y'.repeat(DRAFT_MIN_CHARS));
    expect(sent).toHaveLength(1);
  });
});
