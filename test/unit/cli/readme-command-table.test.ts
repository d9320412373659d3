/**
 * README's command table is checked against host/cli/command-usage.ts, the usage lines the CLI prints: every
 * command there has a row, and that row names every flag the usage line gives it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as usages from '../../../host/cli/command-usage.ts';
import { ROOT } from '../../helpers/processes.ts';

/** The rows of README's `| command | what it does |` table, first cell only. */
function readmeCommandCells(): string[] {
  const lines = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n');
  const start = lines.findIndex((l) => /^\|\s*command\s*\|\s*what it does\s*\|/.test(l));
  expect(start, 'README has a "| command | what it does |" table').toBeGreaterThan(-1);
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split(/(?<!\\)\|/)[1]!.replace(/\\\|/g, '|'));
  }
  return rows;
}

interface Usage {
  command: string;
  flags: string[];
}

/** Each command of a usage text (`… | uninstall [--user]` is `service uninstall`) with its flags. */
function commandsOf(text: string): Usage[] {
  const out: Usage[] = [];
  for (const line of text.split('\n')) {
    let top = '';
    for (const piece of line.split(/\s\|\s(?=carapace |[a-z])/)) {
      const words = piece.replace(/^carapace /, '').split(' ');
      const name = words.slice(0, words.findIndex((w) => !/^[a-z]+$/.test(w)) >>> 0).join(' ');
      const command = piece.startsWith('carapace ') ? name : `${top} ${name}`;
      top ||= command.split(' ')[0]!;
      const flags = [...new Set(piece.replace(/<[^>]*>/g, '').match(/(?<![\w-])--?[a-z][\w-]*/g) ?? [])];
      out.push({ command, flags });
    }
  }
  return out;
}

/** The part of a row's cell for one command: from where it is named to the next `/`-separated command. */
function segmentFor(cells: string[], command: string): string | undefined {
  for (const cell of cells) {
    for (const segment of cell.split(/`\s*\/\s*`/)) {
      const text = segment
        .trim()
        .replace(/^`|`$/g, '')
        .replace(/^carapace /, '');
      if (text === command || text.startsWith(`${command} `)) return text;
    }
  }
  return undefined;
}

describe("README's command table", () => {
  const cells = readmeCommandCells();
  const all = Object.values(usages).flatMap((text) => commandsOf(text));

  it('reads the usage lines as commands with flags', () => {
    expect(all).toContainEqual({ command: 'service uninstall', flags: ['--user', '--system'] });
    expect(all).toContainEqual({
      command: 'groups add',
      flags: ['--channel', '--chat', '--name', '--network'],
    });
    expect(all).toContainEqual({ command: 'logs', flags: ['-f', '-n', '--json'] });
  });

  it.each(all.map((u) => [u.command, u] as const))(
    'has a row for `carapace %s` with each of its flags',
    (_, u) => {
      const segment = segmentFor(cells, u.command);
      expect(segment, `README's command table has no row for "carapace ${u.command}"`).toBeDefined();
      for (const flag of u.flags) {
        expect(segment, `README's row for "carapace ${u.command}" misses ${flag}`).toContain(flag);
      }
    },
  );
});
