import { Readable } from 'node:stream';
import readline from 'node:readline';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createBashClassifier,
  runGateClassify,
  streamGateClassify,
} from '../../../container-agent/src/bash-gate/index.ts';
import type { BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../../container-agent/src/bash-gate/wasm-files.ts';

let gate: BashClassifier;

beforeAll(async () => {
  gate = await createBashClassifier(resolveBashGateWasmPaths());
});

function parseLines(output: string): Array<Record<string, unknown>> {
  expect(output === '' || output.endsWith('\n')).toBe(true);
  return output
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('carapace gate classify', () => {
  it('answers one JSON line per command line, skipping empty lines', () => {
    const out = parseLines(
      runGateClassify(
        'ls -la\n\n   \ncurl https://example.com\nfind . -exec sh {} \\;\n',
        { json: false },
        gate,
      ),
    );
    expect(out).toEqual([
      { class: 'local', reason: expect.any(String), network: false },
      { class: 'escalate', reason: 'curl reaches the network', network: true },
      { class: 'escalate', reason: 'find -exec runs another program', network: true },
    ]);
  });

  it('reads a final line without a newline and tolerates CRLF', () => {
    const out = parseLines(runGateClassify('ls\r\ncurl x', { json: false }, gate));
    expect(out.map((o) => o.class)).toEqual(['local', 'escalate']);
  });

  it('with --json, reads each line as a JSON string so commands can hold newlines', () => {
    const input = [JSON.stringify('ls\ncurl x'), JSON.stringify('cat <<EOF\nhello\nEOF'), ''].join('\n');
    const out = parseLines(runGateClassify(input, { json: true }, gate));
    expect(out).toEqual([
      { class: 'escalate', reason: 'curl reaches the network', network: true },
      { class: 'local', reason: expect.any(String), network: false },
    ]);
  });

  it('with --json, answers a line that is not a JSON string with an error line and goes on', () => {
    const input = ['ls -la', '{"cmd":"ls"}', '"ls"'].join('\n');
    const out = parseLines(runGateClassify(input, { json: true }, gate));
    expect(out).toHaveLength(3);
    expect(out[0]).toEqual({ error: expect.stringMatching(/line 1 is not valid JSON/), line: 1 });
    expect(out[1]).toEqual({ error: expect.stringMatching(/line 2 is JSON but not a string/), line: 2 });
    expect(out[2]).toMatchObject({ class: 'local' });
  });

  it('without --json, takes a JSON-looking line as a command', () => {
    const out = parseLines(runGateClassify('"ls"', { json: false }, gate));
    expect(out[0]).toMatchObject({ class: 'escalate', reason: expect.stringMatching(/not a literal word/) });
  });

  it('streams answers line by line from a readline interface', async () => {
    const input = Readable.from(['ls\n', 'wget x\n', '\n', '"echo hi"\n']);
    const lines = readline.createInterface({ input, crlfDelay: Infinity });
    const chunks: string[] = [];
    await streamGateClassify(lines, (chunk) => chunks.push(chunk), { json: false }, gate);
    expect(chunks).toHaveLength(3);
    expect(chunks.every((c) => c.endsWith('\n'))).toBe(true);
    expect(chunks.map((c) => (JSON.parse(c) as { class: string }).class)).toEqual([
      'local',
      'escalate',
      'escalate',
    ]);
  });
});
