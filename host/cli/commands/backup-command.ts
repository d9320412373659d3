import path from 'node:path';
import { createBackup } from '../../backup/backup-archive.ts';
import { restoreBackup } from '../../backup/restore-archive.ts';
import { UsageError, type CliContext } from '../cli-context.ts';

/** `carapace backup <file>`: a consistent archive, also while the host runs. */
export async function backupCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [file, ...rest] = args;
  if (!file || rest.length) throw new UsageError('usage: carapace backup <file.tar.gz>');
  const target = path.resolve(ctx.io.cwd, file);
  const result = await createBackup(ctx.paths, target);
  ctx.out(`wrote ${target}: ${result.files} files with their checksums (no secrets)`);
  if (result.skipped.length) ctx.err(`not archived (links or special files): ${result.skipped.join(', ')}`);
  return 0;
}

/** `carapace restore <file>`: all or nothing (restore-archive.ts); refuses while a host runs on the data folder. */
export async function restoreCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [file, ...rest] = args;
  if (!file || rest.length) throw new UsageError('usage: carapace restore <file.tar.gz>');
  for (const line of await restoreBackup(ctx.paths, path.resolve(ctx.io.cwd, file))) ctx.out(line);
  return 0;
}
