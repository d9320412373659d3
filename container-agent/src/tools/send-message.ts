import * as z from 'zod';
import type { HostClient } from '../ipc/host-client.ts';
import { LIMITS, groupIdSchema } from '../protocol.ts';
import { defineTool, type AgentTool } from './tool.ts';

export interface SendMessageToolOptions {
  host: HostClient;
  isAdmin: boolean;
  /** Told about every message the host queued, so the final answer is not posted twice. */
  onSent?: (message: { text: string; to?: string }) => void;
}

const sendMessageArgs = (toDescription: string) =>
  z
    .object({
      text: z.string().min(1).max(LIMITS.chatText).describe('The message text, formatted for the chat.'),
      to: z.optional(groupIdSchema).describe(toDescription),
      attachment: z
        .string()
        .min(1)
        .max(4096)
        .optional()
        .describe(
          "A file in the group folder to send with the message to this chat (an image, a voice note, a document), e.g. 'report.pdf'.",
        ),
    })
    .strict();
// Made once, not per run: a tool list then reuses their JSON Schemas (memoizedToolSpec in tool.ts).
const adminArgs = sendMessageArgs('Group id of another chat; omit for this chat.');
const memberArgs = sendMessageArgs('Omit: this chat may only write to itself.');

export function createSendMessageTool(options: SendMessageToolOptions): AgentTool {
  return defineTool({
    name: 'send_message',
    description:
      'Post a message now (e.g. a progress update). Your final answer is posted automatically; do not repeat it here.',
    schema: options.isAdmin ? adminArgs : memberArgs,
    async run(args, context) {
      await options.host.request(
        'message.send',
        {
          text: args.text,
          ...(args.to ? { to: args.to } : {}),
          // The host resolves the path itself, inside the group folder only; this is just the name given.
          ...(args.attachment ? { attachment: { path: args.attachment } } : {}),
        },
        { signal: context.signal },
      );
      options.onSent?.(args);
      return args.to ? `Message queued for ${args.to}.` : 'Message queued.';
    },
  });
}
