import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createSecretScanner,
  parseSecretsScanArgs,
  runSecretsScan,
  type SecretScanner,
} from '../../../host/security/secrets/index.ts';

// Assembled at run time, so this file holds nothing a secret scanner would flag.
const SLACK_TOKEN = ['xox', 'b-', '384729105563-7290183746521-', 'Qm7ZtR2pLx9KvB4nWc8HyD3f'].join('');
const HELD = `held-${randomBytes(16).toString('hex')}`;

const parseLines = (output: string) =>
  output
    .split('\n')
    .filter((l) => l !== '')
    .map(
      (l) => JSON.parse(l) as { findings?: { rule: string; start: number; end: number }[]; error?: string },
    );

describe('carapace secrets scan', () => {
  const scanner = createSecretScanner({ heldSecrets: [HELD] });

  it('plain mode: one JSON document, exit 1 with findings', async () => {
    const input = `line one\nthe token is ${SLACK_TOKEN}\n`;
    const { output, exitCode } = await runSecretsScan(input, { jsonl: false }, scanner);
    expect(exitCode).toBe(1);
    expect(output.endsWith('\n')).toBe(true);
    const doc = JSON.parse(output) as { findings: { rule: string; start: number; end: number }[] };
    expect(doc.findings).toHaveLength(1);
    expect(doc.findings[0]?.rule).toBe('slack/token');
    expect(input.slice(doc.findings[0]?.start, doc.findings[0]?.end)).toBe(SLACK_TOKEN);
    expect(output).not.toContain(SLACK_TOKEN);
  });

  it('plain mode: clean text and empty input give no findings and exit 0', async () => {
    for (const input of ['just a friendly message\n', '']) {
      const { output, exitCode } = await runSecretsScan(input, { jsonl: false }, scanner);
      expect(exitCode).toBe(0);
      expect(JSON.parse(output)).toEqual({ findings: [] });
    }
  });

  it('--jsonl: one output line per input line, offsets relative to that line', async () => {
    const input = [
      JSON.stringify({ text: 'nothing here' }),
      JSON.stringify({ text: `multi\nline with ${HELD}` }),
      JSON.stringify({ text: SLACK_TOKEN }),
    ].join('\n');
    const { output, exitCode } = await runSecretsScan(`${input}\n`, { jsonl: true }, scanner);
    expect(exitCode).toBe(1);
    const lines = parseLines(output);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({ findings: [] });
    expect(lines[1]?.findings?.map((f) => f.rule)).toEqual(['held-secret/raw']);
    expect(lines[1]?.findings?.[0]?.start).toBe('multi\nline with '.length);
    expect(lines[2]?.findings?.map((f) => f.rule)).toEqual(['slack/token']);
    expect(output).not.toContain(HELD);
  });

  it('--jsonl: clean lines exit 0; a last line without newline and CRLF endings are accepted', async () => {
    const input = `${JSON.stringify({ text: 'a' })}\r\n${JSON.stringify({ text: 'b' })}`;
    const { output, exitCode } = await runSecretsScan(input, { jsonl: true }, scanner);
    expect(exitCode).toBe(0);
    expect(parseLines(output)).toEqual([{ findings: [] }, { findings: [] }]);
  });

  it('--jsonl: invalid lines get an error line in place, exit 2 even when other lines have findings', async () => {
    const secretLine = `not json ${SLACK_TOKEN}`;
    const input = [
      JSON.stringify({ text: SLACK_TOKEN }),
      secretLine,
      JSON.stringify({ text: 42 }),
      JSON.stringify({ text: 'ok', extra: true }),
      '',
      JSON.stringify('just a string'),
    ].join('\n');
    const { output, exitCode } = await runSecretsScan(`${input}\n`, { jsonl: true }, scanner);
    expect(exitCode).toBe(2);
    const lines = parseLines(output);
    expect(lines).toHaveLength(6);
    expect(lines[0]?.findings).toHaveLength(1);
    expect(lines[1]?.error).toMatch(/^line 2: not valid JSON/);
    expect(lines[2]?.error).toMatch(/^line 3: .*text/);
    expect(lines[3]?.error).toMatch(/^line 4: .*extra/);
    expect(lines[4]?.error).toMatch(/^line 5: empty line/);
    expect(lines[5]?.error).toMatch(/^line 6: /);
    // An error never echoes the input, which may itself be the secret.
    expect(output).not.toContain(SLACK_TOKEN);
    expect(output).not.toContain('not json');
  });

  it('--jsonl: empty input gives no output and exit 0', async () => {
    expect(await runSecretsScan('', { jsonl: true }, scanner)).toEqual({ output: '', exitCode: 0 });
  });

  it('a scanner failure is exit 2, never a clean result', async () => {
    const broken: SecretScanner = {
      scan: () => Promise.reject(new Error('rules failed to load')),
      redact: (t) => t,
    };
    const plain = await runSecretsScan('text', { jsonl: false }, broken);
    expect(plain.exitCode).toBe(2);
    expect(JSON.parse(plain.output)).toEqual({ error: 'scan failed: rules failed to load' });
    const jsonl = await runSecretsScan(`${JSON.stringify({ text: 'x' })}\n`, { jsonl: true }, broken);
    expect(jsonl.exitCode).toBe(2);
    expect(parseLines(jsonl.output)[0]?.error).toMatch(/^line 1: scan failed/);
  });

  it('parses its arguments strictly', () => {
    expect(parseSecretsScanArgs([])).toEqual({ jsonl: false });
    expect(parseSecretsScanArgs(['--jsonl'])).toEqual({ jsonl: true });
    expect(() => parseSecretsScanArgs(['--json'])).toThrow(/json/);
    expect(() => parseSecretsScanArgs(['file.txt'])).toThrow();
  });
});
