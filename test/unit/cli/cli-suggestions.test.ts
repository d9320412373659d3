import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { ROOT } from '../../helpers/processes.ts';
import { runCli } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

/** Every `.ts` file under a folder. */
function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Commands whose second word is a subcommand the usage lists. */
const WITH_SUBCOMMANDS = new Set([
  'groups',
  'config',
  'whatsapp',
  'service',
  'image',
  'gate',
  'secrets',
  'mounts',
]);

let commands: Set<string>;
const usage = new Map<string, string>();

beforeAll(async () => {
  const root = tempDir();
  const dirs = { configDir: path.join(root, 'config'), dataDir: path.join(root, 'data') };
  const help = await runCli(dirs, ['help']);
  commands = new Set([...help.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1] as string));
  for (const name of WITH_SUBCOMMANDS)
    if (commands.has(name)) usage.set(name, (await runCli(dirs, [name, '--help'])).stdout);
});

it('suggests only commands that exist, in every message of the host and in the README', () => {
  const texts = [
    ...sources(path.join(ROOT, 'host')).map((file) => ({ file, text: fs.readFileSync(file, 'utf8') })),
    { file: 'README.md', text: fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8') },
  ];
  const missing: string[] = [];
  let seen = 0;
  for (const { file, text } of texts) {
    for (const m of text.matchAll(/\bcarapace ([a-z]+)(?: ([a-z]+))?/g)) {
      const [whole, name, sub] = m as unknown as [string, string, string | undefined];
      // Prose such as "carapace with an …" names no command: only the known verbs and nouns count.
      if (!/^[a-z]+$/.test(name) || ['with', 'will', 'again', 'is', 'host', 'and', 'the'].includes(name))
        continue;
      seen++;
      if (!commands.has(name)) missing.push(`${path.relative(ROOT, file)}: ${whole}`);
      else if (sub && WITH_SUBCOMMANDS.has(name) && !new RegExp(`\\b${sub}\\b`).test(usage.get(name) ?? ''))
        if (/^[a-z]+$/.test(sub) && !['lists', 'says', 'removes', 'ends', 'sets', 'deletes'].includes(sub))
          missing.push(`${path.relative(ROOT, file)}: ${whole}`);
    }
  }
  expect(seen).toBeGreaterThan(50);
  expect(commands).toContain('stop');
  expect(missing).toEqual([]);
});
