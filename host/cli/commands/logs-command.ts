import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { StringDecoder } from 'node:string_decoder';
import { parseArgs } from 'node:util';
import { UsageError, type CliContext } from '../cli-context.ts';
import { SERVICE_NAME, unitFile } from '../service-unit.ts';
import { createLogFormatter } from './logs-format.ts';

/**
 * `carapace logs [-f] [--json]`: the host's log wherever it goes: the journal while the host runs as the
 * systemd service, else `data/logs/carapace.log` (a unit that is installed but not running says nothing new
 * in the journal; a host started by hand writes the file). Says on stderr where it read, so stdout stays the
 * log: lines for a person (local time, level, message, details), or pino's JSON lines as written with --json.
 */
export async function logsCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      follow: { type: 'boolean', short: 'f', default: false },
      lines: { type: 'string', short: 'n', default: '100' },
      json: { type: 'boolean', default: false },
    },
  });
  const show = values.json ? (line: string) => line : createLogFormatter();
  const lines = Number(values.lines);
  if (!Number.isInteger(lines) || lines < 1) throw new UsageError('-n must be a whole number of lines');
  const scope = (['system', 'user'] as const).find((s) => fs.existsSync(unitFile(s, ctx.io.env)));
  if (scope && hasJournalctl() && serviceActive(scope)) {
    ctx.err(`(the journal of the ${scope === 'user' ? 'user ' : ''}service ${SERVICE_NAME})`);
    const argv = [
      ...(scope === 'user' ? ['--user'] : []),
      '-u',
      SERVICE_NAME,
      '-n',
      String(lines),
      '-o',
      'cat',
    ];
    if (values.follow) argv.push('-f');
    return new Promise((resolve) => {
      const child = spawn('journalctl', argv, { stdio: ['ignore', 'pipe', 'inherit'] });
      createInterface({ input: child.stdout }).on('line', (line) => ctx.out(show(line)));
      child.on('close', (code) => resolve(code ?? 1));
    });
  }
  const file = path.join(ctx.paths.logsDir, 'carapace.log');
  ctx.err(
    `(${file}${scope ? `; the ${SERVICE_NAME} service is installed but not running, so its journal has nothing new` : ''})`,
  );
  if (!fs.existsSync(file)) {
    ctx.err(`no log yet: ${file} does not exist (the host writes it once started)`);
    return values.follow ? followFile(ctx, file, 0, show) : 1;
  }
  const text = fs.readFileSync(file, 'utf8');
  const all = text.split('\n');
  if (all[all.length - 1] === '') all.pop();
  for (const line of all.slice(-lines)) ctx.out(show(line));
  return values.follow ? followFile(ctx, file, Buffer.byteLength(text), show) : 0;
}

function serviceActive(scope: 'system' | 'user'): boolean {
  const argv = [...(scope === 'user' ? ['--user'] : []), 'is-active', '--quiet', SERVICE_NAME];
  return spawnSync('systemctl', argv, { stdio: 'ignore', timeout: 5_000 }).status === 0;
}

function hasJournalctl(): boolean {
  return ['/usr/bin/journalctl', '/bin/journalctl'].some((p) => fs.existsSync(p));
}

/**
 * Prints the lines appended to the file until interrupted; a file that shrank (rotated) is read anew. A
 * line still being written waits for its end, so it is shown whole.
 */
function followFile(
  ctx: CliContext,
  file: string,
  from: number,
  show: (line: string) => string,
): Promise<number> {
  let offset = from;
  let partial = '';
  // A chunk can end inside a character as well as inside a line.
  let decoder = new StringDecoder('utf8');
  return new Promise(() => {
    fs.watchFile(file, { interval: 250 }, (cur) => {
      if (cur.size < offset) {
        offset = 0;
        partial = '';
        decoder = new StringDecoder('utf8');
      }
      if (cur.size === offset) return;
      const fd = fs.openSync(file, 'r');
      try {
        const chunk = Buffer.alloc(cur.size - offset);
        fs.readSync(fd, chunk, 0, chunk.length, offset);
        offset = cur.size;
        const lines = (partial + decoder.write(chunk)).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) ctx.out(show(line));
      } finally {
        fs.closeSync(fd);
      }
    });
  });
}
