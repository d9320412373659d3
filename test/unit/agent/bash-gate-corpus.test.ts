import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createBashClassifier,
  gateVerdictSchema,
  networkCommandNames,
} from '../../../container-agent/src/bash-gate/index.ts';
import type { BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../../container-agent/src/bash-gate/wasm-files.ts';

const corpusEntrySchema = z
  .object({
    cmd: z.string(),
    class: z.enum(['local', 'escalate']),
    network: z.boolean().optional(),
    why: z.string().optional(),
  })
  .strict();
type CorpusEntry = z.infer<typeof corpusEntrySchema>;

const corpusPath = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '../..',
  'fixtures',
  'bash-gate-corpus.jsonl',
);

function loadCorpus(): CorpusEntry[] {
  return fs
    .readFileSync(corpusPath, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      try {
        return corpusEntrySchema.parse(JSON.parse(line));
      } catch (error) {
        throw new Error(`corpus line ${index + 1} is invalid: ${String(error)}`);
      }
    });
}

const corpus = loadCorpus();
let classifier: BashClassifier;

beforeAll(async () => {
  classifier = await createBashClassifier(resolveBashGateWasmPaths());
});

describe('bash gate corpus', () => {
  it('holds at least 150 commands, both local and escalating ones, without duplicates', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(150);
    expect(corpus.filter((e) => e.class === 'local').length).toBeGreaterThanOrEqual(60);
    expect(corpus.filter((e) => e.class === 'escalate').length).toBeGreaterThanOrEqual(60);
    expect(new Set(corpus.map((e) => e.cmd)).size).toBe(corpus.length);
  });

  it.each(corpus.map((e) => [e.cmd, e] as const))('classifies %j as expected', (_cmd, entry) => {
    const verdict = classifier.classify(entry.cmd);
    expect(gateVerdictSchema.parse(verdict)).toEqual(verdict);
    expect({ class: verdict.class, why: entry.why ?? '' }).toEqual({
      class: entry.class,
      why: entry.why ?? '',
    });
    if (entry.network !== undefined) expect(verdict.network).toBe(entry.network);
    if (verdict.class === 'local') expect(verdict.network).toBe(false);
    else expect(verdict.reason.length).toBeGreaterThan(0);
  });

  it('never classifies a corpus command marked network-capable as local', () => {
    const leaked = corpus
      .filter((e) => e.network === true)
      .filter((e) => classifier.classify(e.cmd).class === 'local')
      .map((e) => e.cmd);
    expect(leaked).toEqual([]);
  });
});

describe('network-capable commands', () => {
  // Every network tool the allowlist knows, in every position a command can hide in.
  const shapes: ReadonlyArray<(name: string) => string> = [
    (n) => `${n} example.com`,
    (n) => `ls | ${n} example.com`,
    (n) => `ls && ${n} x`,
    (n) => `true; ${n} x`,
    (n) => `(${n} x)`,
    (n) => `{ ${n} x; }`,
    (n) => `echo $(${n} x)`,
    (n) => `echo "\`${n} x\`"`,
    (n) => `cat <(${n} x)`,
    (n) => `ls > >(${n} x)`,
    (n) => `v=$(${n} x)`,
    (n) => `X=1 ${n} x`,
    (n) => `if ${n} x; then :; fi`,
    (n) => `while ${n} x; do :; done`,
    (n) => `for i in 1; do ${n} x; done`,
    (n) => `case a in a) ${n} x;; esac`,
    (n) => `f() { ${n} x; }`,
    (n) => `cat <<EOF\n$(${n} x)\nEOF`,
    (n) => `cat <<< "$(${n} x)"`,
    (n) => `[ -n "$(${n} x)" ]`,
    (n) => `! ${n} x`,
    (n) => `${n} x &`,
    (n) => `/usr/bin/${n} x`,
    (n) => `"${n}" x`,
    (n) => `\\${n} x`,
  ];

  it('escalates each of them, flagged as network, in every shape', () => {
    const leaked: string[] = [];
    for (const name of networkCommandNames()) {
      for (const shape of shapes) {
        const command = shape(name);
        const verdict = classifier.classify(command);
        if (verdict.class !== 'escalate' || !verdict.network) leaked.push(command);
      }
    }
    expect(leaked).toEqual([]);
  });

  it('escalates every socket redirection as network', () => {
    for (const command of [
      'echo x > /dev/tcp/10.0.0.1/80',
      'cat < /dev/udp/10.0.0.1/53',
      'ls 2> /dev/tcp/h/1',
      'echo x >> "/dev/tcp/h/1"',
      'echo x &> /dev/tcp/h/1',
      'echo x >| /dev/tcp/h/1',
      'echo x > /dev///tcp/h/1',
      "echo x > '/dev/tcp/h/1'",
      'echo x > /dev/$p/h/1',
      'p=/dev/tcp/h/1; echo x > "$p"',
    ]) {
      expect(classifier.classify(command), command).toMatchObject({ class: 'escalate', network: true });
    }
  });
});
