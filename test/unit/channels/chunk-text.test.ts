import { describe, expect, it } from 'vitest';
import { chunkText } from '../../../host/channels/chunk-text.ts';

import { seededRandom as prng } from '../../helpers/seeded-random.ts';

const LANGS = ['', 'ts', 'python', 'bash', 'json'];

/** Text shaped like assistant replies: paragraphs, lists, very long words and fenced code blocks. */
function randomReply(rand: () => number): string {
  const int = (n: number) => Math.floor(rand() * n);
  const word = () => {
    // Now and then a "word" far longer than any limit: a URL, a hash, a base64 blob.
    const len = rand() < 0.03 ? 40 + int(400) : 1 + int(10);
    let w = '';
    for (let i = 0; i < len; i += 1) w += 'abcdefghijklmnopqrstuvwxyzé0123456789'[int(37)];
    return w;
  };
  const line = () => Array.from({ length: 1 + int(14) }, word).join(' ');
  const blocks: string[] = [];
  for (let b = 0, n = 1 + int(8); b < n; b += 1) {
    const kind = rand();
    if (kind < 0.3) {
      const lang = LANGS[int(LANGS.length)] as string;
      const code = Array.from({ length: 1 + int(25) }, () => (rand() < 0.1 ? '' : `  ${line()}`)).join('\n');
      blocks.push(`\`\`\`${lang}\n${code}\n\`\`\``);
    } else if (kind < 0.5) {
      blocks.push(Array.from({ length: 1 + int(6) }, () => `- ${line()}`).join('\n'));
    } else {
      blocks.push(Array.from({ length: 1 + int(5) }, line).join(rand() < 0.5 ? ' ' : '\n'));
    }
  }
  return blocks.join('\n\n');
}

const FENCE_LINE = /^```[^\n`]*$/gm;
const fenceCount = (s: string) => (s.match(FENCE_LINE) ?? []).length;

/**
 * What a reader sees when each chunk is rendered on its own: runs of prose and of code in a given language,
 * whitespace ignored, neighbours of the same kind merged. Cuts and reopened fences must not change it.
 */
function rendered(chunks: string[]): string[] {
  const out: [kind: string, text: string][] = [];
  const push = (kind: string, text: string) => {
    const body = text.replace(/\s+/g, '');
    if (!body) return;
    const last = out[out.length - 1];
    if (last && last[0] === kind) last[1] += body;
    else out.push([kind, body]);
  };
  for (const chunk of chunks) {
    let lang: string | undefined;
    let from = 0;
    for (const m of chunk.matchAll(FENCE_LINE)) {
      push(lang === undefined ? 'text' : `code:${lang}`, chunk.slice(from, m.index));
      lang = lang === undefined ? m[0].slice(3).trim() : undefined;
      from = m.index + m[0].length;
    }
    push(lang === undefined ? 'text' : `code:${lang}`, chunk.slice(from));
  }
  return out.map(([kind, text]) => `${kind}|${text}`);
}

describe('chunkText', () => {
  it('keeps a short text as one chunk, trimmed', () => {
    expect(chunkText('  hello world \n', 4096)).toEqual(['hello world']);
    const exact = 'x'.repeat(50);
    expect(chunkText(exact, 50)).toEqual([exact]);
  });

  it('returns no chunks for empty or blank text', () => {
    expect(chunkText('', 100)).toEqual([]);
    expect(chunkText(' \n\n\t ', 100)).toEqual([]);
  });

  it('refuses a limit below 32', () => {
    expect(() => chunkText('hello', 31)).toThrow(/at least 32/);
    expect(chunkText('hello', 32)).toEqual(['hello']);
  });

  it('cuts at a paragraph break rather than a line break or a space', () => {
    const first = 'one two three four\nfive six seven eight nine';
    // A line break and spaces follow the paragraph break within reach: a cut there would be later.
    const second = 'ten\neleven twelve thirteen fourteen fifteen';
    expect(chunkText(`${first}\n\n${second}`, 60)).toEqual([first, second]);
  });

  it('cuts at a line break rather than a space when there is no paragraph break', () => {
    const lines = [
      'alpha beta gamma delta',
      'epsilon zeta eta theta',
      'iota kappa lambda mu',
      'nu xi omicron pi',
    ];
    const chunks = chunkText(lines.join('\n'), 60);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.join('\n').split('\n')).toEqual(lines);
  });

  it('cuts between words when a paragraph has no line breaks', () => {
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`);
    const chunks = chunkText(words.join(' '), 50);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(50);
    expect(chunks.flatMap((c) => c.split(' '))).toEqual(words);
  });

  it('cuts a word longer than the limit hard, losing nothing', () => {
    const blob = 'q'.repeat(250);
    const chunks = chunkText(`see ${blob} end`, 40);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(40);
    expect(chunks.join('').replace(/\s/g, '')).toBe(`see${blob}end`);
  });

  it('keeps a code block that fits in one chunk whole, even when a cut inside it would be preferred', () => {
    const intro = 'Here is the script you asked for, with the blank lines kept:';
    const block = '```bash\nset -e\n\necho one\n\necho two\n\necho three\n```';
    const outro = 'Run it with bash and tell me what it prints.';
    const chunks = chunkText(`${intro}\n\n${block}\n\n${outro}`, 100);
    expect(chunks.some((c) => c.includes(block))).toBe(true);
    expect(chunks.map(fenceCount).reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('closes a code block longer than the limit in each chunk and reopens it with its language', () => {
    const code = Array.from({ length: 40 }, (_, i) => `print("line ${i}")`).join('\n');
    const text = `Output:\n\n\`\`\`python\n${code}\n\`\`\`\n\nDone.`;
    const chunks = chunkText(text, 120);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(120);
      expect(fenceCount(c) % 2).toBe(0);
    }
    const withCode = chunks.filter((c) => c.includes('print('));
    for (const c of withCode) {
      expect(c).toMatch(/(^|\n)```python\n/);
      expect(c).toMatch(/\n```($|\n)/);
    }
    for (const c of withCode.slice(1)) expect(c.startsWith('```python\n')).toBe(true);
    expect(rendered(chunks)).toEqual(rendered([text]));
  });

  it('reopens with a bare fence when the info string is too long to repeat in every chunk', () => {
    const info = 'typescript title="src/some/long/path.ts"';
    const code = Array.from({ length: 30 }, (_, i) => `const v${i} = ${i};`).join('\n');
    const text = `\`\`\`${info}\n${code}\n\`\`\``;
    const chunks = chunkText(text, 80);
    expect(chunks[0]?.startsWith(`\`\`\`${info}\n`)).toBe(true);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(80);
      expect(fenceCount(c) % 2).toBe(0);
    }
    for (const c of chunks.slice(1)) expect(c.startsWith('```\n')).toBe(true);
    const code0 = (cs: string[]) => cs.join('\n').replace(FENCE_LINE, '').replace(/\s+/g, '');
    expect(code0(chunks)).toBe(code0([text]));
  });

  it('stays within the limit even when a fence line alone is longer than the limit', () => {
    const text = `\`\`\`${'x'.repeat(80)}\n${Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n')}\n\`\`\``;
    for (const limit of [32, 40, 64]) {
      const chunks = chunkText(text, limit);
      for (const c of chunks) {
        expect(c.length).toBeLessThanOrEqual(limit);
        expect(fenceCount(c) % 2).toBe(0);
      }
      expect(chunks.join('\n')).toContain('line 29');
    }
  });

  it('keeps every chunk within the limit, every code block closed and all content in order (random texts)', () => {
    for (let seed = 1; seed <= 400; seed += 1) {
      const rand = prng(seed);
      const text = randomReply(rand);
      const limit = 32 + Math.floor(rand() * 300);
      const chunks = chunkText(text, limit);
      const where = `seed ${seed}, limit ${limit}`;
      for (const c of chunks) {
        if (c.length > limit) throw new Error(`${where}: chunk of ${c.length} characters`);
        if (fenceCount(c) % 2 !== 0) throw new Error(`${where}: chunk leaves a code block open:\n${c}`);
        if (c.trim() === '') throw new Error(`${where}: empty chunk`);
      }
      expect(rendered(chunks), where).toEqual(rendered([text]));
    }
  });

  it('uses the room it has: with a large limit, chunks are not split needlessly', () => {
    for (let seed = 1000; seed < 1050; seed += 1) {
      const text = randomReply(prng(seed));
      if (text.length <= 4096) expect(chunkText(text, 4096)).toEqual([text.trim()]);
    }
  });
});
