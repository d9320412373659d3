/**
 * Tools only the admin group is offered. The host enforces the same rule from the run's identity;
 * hiding them from other groups just keeps the model from trying.
 */
import * as z from 'zod';
import type { HostClient } from '../ipc/host-client.ts';
import { LIMITS, channelSchema, configHashSchema, groupIdSchema } from '../protocol.ts';
import { defineTool, type AgentTool } from './tool.ts';

export function createAdminTools(options: { host: HostClient }): AgentTool[] {
  const { host } = options;

  const registerGroup = defineTool({
    name: 'register_group',
    description:
      'Register a chat as a group the assistant answers in (needs review or approval by the host).',
    schema: z
      .object({
        id: groupIdSchema.check(z.describe('New group id: lowercase letters, digits, "-" or "_".')),
        channel: channelSchema.check(
          z.describe('e.g. "telegram", "whatsapp", "local", or a named account such as "telegram.work".'),
        ),
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

  const readConfig = defineTool({
    name: 'read_config',
    description:
      "Read the host's config.toml (secrets shown as [REDACTED]) and its hash; propose_config needs the hash.",
    schema: z.object({}).strict(),
    async run(_args, context) {
      const { text, hash } = await host.request('config.read', {}, { signal: context.signal });
      return `hash: ${hash}\n--- config.toml ---\n${text || '(empty: every key has its default)'}`;
    },
  });

  const proposeConfig = defineTool({
    name: 'propose_config',
    description:
      'Propose changes to config.toml, based on the version read_config returned (its hash). The host checks ' +
      'them, a reviewer looks at them and the owner must approve in the admin chat; the answer says whether ' +
      'they were applied. Keys that steer credentials, isolation, owners or spend caps can only be changed ' +
      'by the owner.',
    schema: z
      .object({
        base_hash: configHashSchema.check(z.describe('The hash read_config returned.')),
        changes: z
          .array(
            z
              .object({
                key: z
                  .string()
                  .min(1)
                  .max(LIMITS.name)
                  .describe('Dotted key path, e.g. "assistant.name" or "groups.family.trigger".'),
                value: z.json().describe('The new value: a string, number, boolean, array or table.'),
              })
              .strict(),
          )
          .min(1)
          .max(LIMITS.configChanges),
        reason: z.string().min(1).max(LIMITS.reason).describe('Why, in the words the owner will read.'),
      })
      .strict(),
    async run(args, context) {
      const { status, detail } = await host.request(
        'config.propose',
        { baseHash: args.base_hash, changes: args.changes, reason: args.reason },
        { signal: context.signal },
      );
      return `${status}: ${detail}`;
    },
  });

  return [registerGroup, listGroups, readConfig, proposeConfig];
}
