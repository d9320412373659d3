import { describe, expect, it } from 'vitest';
import { createSseFramer } from '../../../host/gateway/proxy/sse.ts';
import { usageObjectAt } from '../../../host/gateway/proxy/usage-tap.ts';

const plain = (i: number) => `data: {"choices":[{"delta":{"content":"${i}"}}],"usage":null}\n\n`;
const usage = 'data: {"choices":[],"usage":{"prompt_tokens":3}}\r\n\r\n';

describe('SSE framer stepping over unwanted events', () => {
  it('hands out only the events holding a wanted byte, wherever the chunks are cut, with their ends', () => {
    const body = plain(1) + plain(2) + usage + plain(3) + usage + plain(4);
    const bytes = Buffer.from(body);
    for (let cut = 1; cut < bytes.length; cut++) {
      const seen: string[] = [];
      const chunks = [bytes.subarray(0, cut), bytes.subarray(cut)];
      let current = Buffer.alloc(0);
      const framer = createSseFramer(
        (event, end) => {
          seen.push(event.toString());
          // The event's last bytes are the current chunk's bytes just before `end`.
          const inChunk = Math.min(end, event.length);
          expect(current.subarray(end - inChunk, end).equals(event.subarray(event.length - inChunk))).toBe(
            true,
          );
        },
        undefined,
        usageObjectAt,
      );
      for (const chunk of chunks) {
        current = chunk;
        framer.push(chunk);
      }
      framer.end();
      // An event the cut splits is handed out whole whether or not it holds usage; no other plain one is.
      const wanted = seen.filter((event) => event.includes('"usage":{'));
      expect(wanted, `cut at ${cut}`).toEqual([usage, usage]);
      expect(seen.length - wanted.length, `cut at ${cut}`).toBeLessThanOrEqual(1);
    }
  });
});
