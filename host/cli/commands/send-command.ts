import { parseArgs } from 'node:util';
import { createLocalClient } from '../../channels/local/local-client.ts';
import { sendAndWait } from '../../channels/local/send-and-wait.ts';
import { UsageError, type CliContext } from '../cli-context.ts';

export const sendUsage = 'carapace send --group <id> [--timeout <seconds>] "<text>"';

export async function sendCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { group: { type: 'string', default: 'main' }, timeout: { type: 'string', default: '600' } },
  });
  const text = positionals.join(' ').trim();
  if (!text) throw new UsageError(`send needs the message text: ${sendUsage}`);
  // Validated up front: a broken config.toml is reported (exit 2) whether or not a host is running.
  const name = ctx.config().assistant.name;
  const timeoutS = Number(values.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0)
    throw new UsageError('--timeout must be a positive number of seconds');
  const result = await sendAndWait({
    client: createLocalClient(ctx.paths.socketFile),
    group: values.group as string,
    text,
    timeoutMs: timeoutS * 1000,
    onReply: (reply) => ctx.out(reply),
  });
  switch (result.kind) {
    case 'answered':
      return 0;
    case 'not-triggered': {
      ctx.err(`(stored as context; nothing triggers a reply in this group: mention @${name} to get one)`);
      return 0;
    }
    case 'timeout':
      ctx.err(
        `no complete answer within ${timeoutS} s (${result.replies} repl${result.replies === 1 ? 'y' : 'ies'} so far); ` +
          'the message is stored and will still be answered: see carapace status',
      );
      return 3;
  }
}
