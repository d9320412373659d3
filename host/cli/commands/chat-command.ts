import { parseArgs } from 'node:util';
import { createLocalClient } from '../../channels/local/local-client.ts';
import { ADMIN_GROUP_ID } from '../../main.ts';
import { runChat } from '../chat-repl.ts';
import type { CliContext } from '../cli-context.ts';

export async function chatCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { group: { type: 'string', default: ADMIN_GROUP_ID } } });
  const client = createLocalClient(ctx.paths.socketFile);
  // Fail fast with the "not running" message instead of opening a prompt that cannot send.
  await client.getJson('/v1/status');
  await runChat({
    client,
    group: values.group as string,
    input: ctx.io.stdin,
    output: ctx.io.stdout,
    assistantName: ctx.config().assistant.name,
  });
  return 0;
}
