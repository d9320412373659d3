import { parseArgs } from 'node:util';
import { hostClientWithin, timeoutSeconds } from '../host-client.ts';
import { UsageError, type CliContext } from '../cli-context.ts';
import { webUsage } from '../command-usage.ts';

/**
 * `carapace web login`: asks the running host for a one-time sign-in link to its web console. Reaching the
 * host's socket (file permissions: the owner's account) is what entitles one to a link.
 */
export async function webCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: { timeout: { type: 'string', default: '10' } },
  });
  if (positionals.join(' ') !== 'login') throw new UsageError(`usage: ${webUsage}`);
  const link = await hostClientWithin(ctx, timeoutSeconds(values.timeout) * 1000).webLogin();
  ctx.out(link.url);
  ctx.err(`Open it once, before ${link.expiresAt}; it signs one browser in.`);
  return 0;
}
