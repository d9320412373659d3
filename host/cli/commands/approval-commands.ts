import { createLocalClient } from '../../channels/local/local-client.ts';
import { sendAndWait } from '../../channels/local/send-and-wait.ts';
import { consoleAdminGroup } from '../admin-group.ts';
import { UsageError, type CliContext } from '../cli-context.ts';

/**
 * The owner's decisions from the terminal. They travel as the owner's command in the console's admin chat,
 * the same path as typing it there: one owner check, one audit trail, and the other admin chats are told.
 */
export function approvalCommand(kind: 'approve' | 'deny' | 'pending') {
  return async (ctx: CliContext, args: string[]): Promise<number> => {
    const id = args[0];
    if (kind !== 'pending' && (!id || args.length !== 1))
      throw new UsageError(
        `${kind} needs one approval id, e.g. carapace ${kind} k7m2qa (carapace pending lists them)`,
      );
    if (kind === 'pending' && args.length > 0) throw new UsageError('pending takes no arguments');
    const client = createLocalClient(ctx.paths.socketFile);
    let answer = '';
    const result = await sendAndWait({
      client,
      group: await consoleAdminGroup(client),
      text: kind === 'pending' ? 'pending' : `${kind} ${id}`,
      timeoutMs: 30_000,
      onlyCommandAnswer: true,
      onReply: (text) => {
        answer = text;
        ctx.out(text);
      },
    });
    if (result.kind !== 'answered') {
      ctx.err('the host did not answer within 30 s; see carapace status');
      return 3;
    }
    // The host's answer says whether anything changed ("Approved …", "Denied …"), or why not.
    return kind === 'pending' || /^(Approved|Denied) /.test(answer) ? 0 : 1;
  };
}
