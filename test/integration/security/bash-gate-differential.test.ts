/**
 * Differential fuzzing of the bash gate against the real tools in the agent image (GNU sed, bash, find,
 * awk, tar), from a fixed seed and a bounded count, so that the gate's model is checked against what the
 * tools do, not against its own reading. Every generated command the gate calls `local` is handed to the
 * real tool in a throwaway container without network:
 * - sed: the script is compiled by `sed --sandbox`, which refuses exactly the commands that run programs
 *   or open files (e, r, R, w, W, s///e, s///w). A local script it refuses is a gate miss.
 * - paths: bash itself expands the word (tilde, globs, braces, variables) from a working directory like
 *   the group folder's; a local word that lands in /proc, /dev/fd, /dev/std*, /dev/tcp or /dev/udp is a miss.
 * - find, awk, tar: the command runs; one that leaves a marker file (a program ran, or a file was written
 *   where the command line did not say) is a miss.
 * Known-bad controls go through the same oracles, to show that they see what they are meant to see.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBashClassifier, type BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../../container-agent/src/bash-gate/wasm-files.ts';
import { agentImageTag } from '../../helpers/agent-image.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import {
  awkCommand,
  findCommand,
  MARKER,
  pathWord,
  sedScript,
  shellQuote,
  tarCommand,
} from '../../helpers/gate-fuzz.ts';
import { seededRandom } from '../../helpers/seeded-random.ts';

const SEED = 20261123;
const COUNTS = { sed: 300, path: 200, find: 120, awk: 120, tar: 120 };
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const docker = new Docker();

/** The oracle script: one result line ("." or "M") per case, per kind, in order. */
const ORACLE = String.raw`
set -u
cd /tmp
printf 'a\nb\n' > notes.txt
tar -cf a.tar notes.txt
while IFS= read -r -d '' s; do
  if [[ $(sed --sandbox -n -e "$s" </dev/null 2>&1) == *'sandbox mode'* ]]; then echo M; else echo .; fi
done < /fuzz/sed
mkdir -p /tmp/ws/group && cd /tmp/ws/group
while IFS= read -r -d '' w; do
  hit=.
  while IFS= read -r p; do
    case "$p" in /proc|/proc/*|/dev/fd|/dev/fd/*|/dev/std*|/dev/tcp/*|/dev/udp/*) hit=M ;; esac
  done < <(x= eval "set -- $w" 2>/dev/null && { printf '%s\n' "$@"; realpath -m -- "$@"; })
  echo "$hit"
done < /fuzz/path
for kind in find awk tar; do
  while IFS= read -r -d '' c; do
    rm -rf /tmp/case && mkdir /tmp/case && cp /tmp/notes.txt /tmp/a.tar /tmp/case/ && cd /tmp/case
    rm -f ${MARKER}
    timeout 5 bash -c "$c" </dev/null >/dev/null 2>&1
    if [ -e ${MARKER} ]; then echo M; else echo .; fi
  done < /fuzz/$kind
done
`;

interface Case {
  kind: keyof typeof COUNTS;
  /** What the oracle gets: a sed script, a path word, or a whole command. */
  input: string;
  /** The commands the gate classified. */
  commands: string[];
  /** Controls are known to reach something; everything else must not, when the gate says local. */
  control: boolean;
}

async function runOracle(image: string, dir: string): Promise<string> {
  const container = await docker.createContainer({
    Image: image,
    User: '10001:10001',
    Entrypoint: ['bash', '/fuzz/oracle.sh'],
    Labels: { 'carapace.check': '1' },
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: { NetworkMode: 'none', Binds: [`${dir}:/fuzz:ro`], AutoRemove: false },
  });
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    docker.modem.demuxStream(stream, out, new PassThrough().resume());
    const ended = new Promise<void>((resolve) => stream.on('end', resolve));
    await container.start();
    await container.wait();
    await ended;
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

await describeDocker('bash gate: differential fuzzing against the real tools', () => {
  let classifier: BashClassifier;
  let image: string;
  let dir: string;

  beforeAll(async () => {
    classifier = await createBashClassifier(resolveBashGateWasmPaths());
    image = await agentImageTag(docker, projectRoot);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-gate-fuzz-'));
    fs.chmodSync(dir, 0o755);
  }, 600_000);
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds no command the gate runs locally that the real tool runs a program, writes a file or reaches /proc or a socket with', async () => {
    const random = seededRandom(SEED);
    const cases: Case[] = [];
    const add = (kind: Case['kind'], input: string, commands: string[], control = false) =>
      cases.push({ kind, input, commands, control });
    for (let i = 0; i < COUNTS.sed; i++) {
      const script = sedScript(random);
      add('sed', script, [`sed -n ${shellQuote(script)} notes.txt`]);
    }
    for (let i = 0; i < COUNTS.path; i++) {
      const word = pathWord(random);
      add('path', word, [`cat ${word}`, `echo x > ${word}`]);
    }
    for (let i = 0; i < COUNTS.find; i++) {
      const command = findCommand(random);
      add('find', command, [command]);
    }
    for (let i = 0; i < COUNTS.awk; i++) {
      const command = awkCommand(random);
      add('awk', command, [command]);
    }
    for (let i = 0; i < COUNTS.tar; i++) {
      const command = tarCommand(random);
      add('tar', command, [command]);
    }
    add('sed', ':a e id', [], true);
    add('sed', 'b x;w out', [], true);
    add('path', '~sys/../pr?c/1/environ', [], true);
    add('path', '/pro[c]/self', [], true);
    add('find', `find . -exec touch ${MARKER} \\;`, [], true);
    add('awk', `awk 'BEGIN{system("touch ${MARKER}")}'`, [], true);
    add(
      'tar',
      `tar -cf a3.tar notes.txt --checkpoint=1 --checkpoint-action=exec='touch ${MARKER}'`,
      [],
      true,
    );

    // The oracle sees local commands and the controls; escalated ones never run locally anyway.
    const judged = cases.filter(
      (c) => c.control || c.commands.some((cmd) => classifier.classify(cmd).class === 'local'),
    );
    const kinds = Object.keys(COUNTS) as Case['kind'][];
    for (const kind of kinds) {
      const inputs = judged.filter((c) => c.kind === kind).map((c) => `${c.input}\0`);
      fs.writeFileSync(path.join(dir, kind), inputs.join(''));
    }
    fs.writeFileSync(path.join(dir, 'oracle.sh'), ORACLE);
    const lines = (await runOracle(image, dir)).split('\n').filter((l) => l === '.' || l === 'M');
    const ordered = kinds.flatMap((kind) => judged.filter((c) => c.kind === kind));
    expect(lines).toHaveLength(ordered.length);

    const verdicts = ordered.map((c, i) => ({ ...c, reached: lines[i] === 'M' }));
    const missed = verdicts
      .filter((v) => !v.control && v.reached)
      .map((v) => ({
        kind: v.kind,
        input: v.input,
        local: v.commands.filter((cmd) => classifier.classify(cmd).class === 'local'),
      }));
    expect(missed).toEqual([]);
    // Every control was seen by its oracle, and the gate escalates each of them.
    expect(verdicts.filter((v) => v.control && !v.reached).map((v) => v.input)).toEqual([]);
    // Enough local commands were judged for the comparison to mean something.
    for (const kind of kinds)
      expect(verdicts.filter((v) => v.kind === kind && !v.control).length, kind).toBeGreaterThan(10);
  }, 900_000);
});
