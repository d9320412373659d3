/**
 * Tools only the admin group is offered. The host enforces the same rule from the run's identity;
 * hiding them from other groups just keeps the model from trying.
 */
import { z } from 'zod';
import type { HostClient } from '../ipc/host-client.ts';
import { LIMITS, channelSchema, groupIdSchema } from '../protocol.ts';
import { defineTool, type AgentTool } from './tool.ts';

export function createAdminTools(options: { host: HostClient }): AgentTool[] {
  const { host } = options;

  const registerGroup = defineTool({
    name: 'register_group',
    description:
      'Register a chat as a group the assistant answers in (needs review or approval by the host).',
    schema: z
      .object({
        id: groupIdSchema.describe('New group id: lowercase letters, digits, "-" or "_".'),
        channel: channelSchema.describe('e.g. "telegram", "whatsapp" or "local".'),
        chat_id: z.string().min(1).max(LIMITS.name).describe("The channel's chat id."),
        name: z.string().min(1).max(LIMITS.name).describe('Display name.'),
      })
      .strict(),
    async run(args, context) {
      await host.request(
        'group.register',
        { id: args.id, channel: args.channel, chatId: args.chat_id, name: args.name },
        { signal: context.signal },
      );
      return `Group ${args.id} registered.`;
    },
  });

  const listGroups = defineTool({
    name: 'list_groups',
    description: 'List the registered groups (ids, names, channels).',
    schema: z.object({}).strict(),
    async run(_args, context) {
      const { groups } = await host.request('group.list', {}, { signal: context.signal });
      if (groups.length === 0) return 'No groups are registered.';
      return groups.map((g) => `${g.id} (${g.channel}${g.isAdmin ? ', admin' : ''}): ${g.name}`).join('\n');
    },
  });

  // No propose_config yet: the host answers config.propose with "not available" until config editing
  // from the admin chat exists, and a tool that can only fail wastes the model's steps.
  return [registerGroup, listGroups];
}
