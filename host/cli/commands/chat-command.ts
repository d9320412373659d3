import { parseArgs } from 'node:util';
import { hostStatus } from '../../channels/local/local-api.ts';
import { createLocalClient } from '../../channels/local/local-client.ts';
import { consoleAdminGroup } from '../admin-group.ts';
import { runChat } from '../chat-repl.ts';
import type { CliContext } from '../cli-context.ts';

export async function chatCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { group: { type: 'string' } } });
  const client = createLocalClient({ socketFile: ctx.paths.socketFile, pidFile: ctx.paths.pidFile });
  // Fail fast with the "not running" message instead of opening a prompt that cannot send.
  const { assistant } = hostStatus.parse(await client.getJson('/v1/status'));
  await runChat({
    client,
    // Without --group: the admin group, by its flag, whatever its id.
    group: values.group ?? (await consoleAdminGroup(client)),
    input: ctx.io.stdin,
    output: ctx.io.stdout,
    assistantName: assistant,
  });
  return 0;
}
