import { parseArgs } from 'node:util';
import { hostStatus } from '../../channels/local/local-api.ts';
import { sendAndWait } from '../../channels/local/send-and-wait.ts';
import { readAll, UsageError, type CliContext } from '../cli-context.ts';
import { consoleAdminGroup } from '../admin-group.ts';
import { sendUsage } from '../command-usage.ts';
import { hostClientWithin, timeoutSeconds } from '../host-client.ts';

/** A client of the running host: it loads no config and no host code, so it starts in a blink. */
export async function sendCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { group: { type: 'string' }, timeout: { type: 'string', default: '600' } },
  });
  const timeoutS = timeoutSeconds(values.timeout);
  // "-" alone reads the text from stdin: long messages and text with quotes need no shell escaping.
  const fromStdin = positionals.length === 1 && positionals[0] === '-';
  const text = (fromStdin ? await readAll(ctx.io.stdin) : positionals.join(' ')).trim();
  if (!text) throw new UsageError(`send needs the message text: ${sendUsage}`);
  // --timeout bounds the whole command, a host that holds its socket without answering included.
  const client = hostClientWithin(ctx, Math.min(timeoutS * 1000, 10_000));
  const result = await sendAndWait({
    client,
    // Without --group: the admin group, by its flag, whatever its id.
    group: values.group ?? (await consoleAdminGroup(client)),
    text,
    timeoutMs: timeoutS * 1000,
    onReply: (reply) => ctx.out(reply),
  });
  switch (result.kind) {
    case 'answered':
      return 0;
    case 'failed':
      ctx.err('(the host could not answer: the reply above says why)');
      return 1;
    case 'refused':
      ctx.err(`not answered: ${result.reason} (carapace usage shows the day's spend)`);
      return 1;
    case 'not-triggered': {
      const { assistant } = hostStatus.parse(await client.getJson('/v1/status'));
      ctx.err(
        `(stored as context; nothing triggers a reply in this group: mention @${assistant} to get one)`,
      );
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
