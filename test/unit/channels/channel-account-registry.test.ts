import { expect, it } from 'vitest';
import { ALWAYS_ON_CHANNELS, CHANNEL_DEFINITIONS } from '../../../host/channels/channel-definitions.ts';
import { channelsConfigSchema, createChannelRegistry } from '../../../host/channels/registry.ts';

const schema = channelsConfigSchema(CHANNEL_DEFINITIONS, ALWAYS_ON_CHANNELS);

const registryOn = (channels: unknown) => {
  const config = schema.parse(channels);
  return createChannelRegistry({
    definitions: CHANNEL_DEFINITIONS,
    config: () => config,
    alwaysOn: ALWAYS_ON_CHANNELS,
    dataDirOf: (name) => `/nowhere/${name}`,
  });
};

it('parses a single table to the plain channel and account tables to their labels', () => {
  expect(Object.keys(schema.parse({ telegram: { owner_user_id: 1 } }))).toEqual(['telegram']);
  expect(
    Object.keys(
      schema.parse({
        telegram: { family: { owner_user_id: 1 }, work: { owner_user_id: 1, bot_token_env: 'WORK' } },
        whatsapp: { second: {} },
      }),
    ),
  ).toEqual(['telegram.family', 'telegram.work', 'whatsapp.second']);
});

it('takes a group on a configured account and refuses one on an account that is not configured', () => {
  const registry = registryOn({ telegram: { work: { owner_user_id: 5, bot_token_env: 'WORK' } } });
  expect(registry.configured().map((a) => [a.label, a.definition.name])).toEqual([
    ['telegram.work', 'telegram'],
  ]);
  expect(() => registry.checkRegistration('telegram.work', '-1001')).not.toThrow();
  // The owner's private chat with that bot is an admin chat, never a group.
  expect(() => registry.checkRegistration('telegram.work', '5')).toThrow(/admin conversation/);
  expect(() => registry.checkRegistration('telegram.family', '-1001')).toThrow(/not configured/);
  expect(() => registry.checkRegistration('telegram', '-1001')).toThrow(/not configured/);
  expect(registry.names()).toContain('telegram.work');
});
