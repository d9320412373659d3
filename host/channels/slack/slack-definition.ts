import type { ChannelDefinition, ChannelDeps } from '../channel.ts';
import { createSlackChannel, SLACK_TEXT_LIMIT } from './slack-channel.ts';
import { SLACK_CHANNEL, slackConfigSchema, tokenProblem, type SlackConfig } from './slack-config.ts';

const tokensOf = (deps: ChannelDeps<SlackConfig>) => {
  const bot = deps.secret(deps.config.bot_token_env);
  const app = deps.secret(deps.config.app_token_env);
  return {
    bot: bot ?? '',
    app: app ?? '',
    problem:
      tokenProblem('bot', bot, deps.config.bot_token_env) ??
      tokenProblem('app', app, deps.config.app_token_env),
  };
};

/** Slack in the channel registry: `[channels.slack]`, the adapter on Socket Mode, and its doctor check. */
export const slackChannelDefinition: ChannelDefinition<SlackConfig> = {
  name: SLACK_CHANNEL,
  configSchema: slackConfigSchema,
  // Sent as plain `text`, which Slack renders as its mrkdwn.
  formattingRules:
    'Slack: use short paragraphs; *bold*, _italic_, `code`, ```code blocks``` and <https://…|links> work; ' +
    `no tables or headings. Messages over ${SLACK_TEXT_LIMIT} characters are split.`,
  capabilities: {
    members: true,
    forwards:
      "a shared Slack message arrives as an attachment of the sharer's message; the adapter keeps only the sharer's own comment rather than take the shared words for the sharer's",
    transientSendFailures: true,
    chatMoves: 'Slack keeps a channel id for life, through renames and archive',
    connectionDrops: true,
    sharedConnection: 'each Web API call is its own HTTP request; the socket only receives',
    retractActions: 'approvals on Slack carry no buttons: the owner types approve/deny <id> in their DM',
    reactions: true,
    typing: 'Slack shows bots no typing indicator outside its AI-assistant threads',
    unsend: true,
    edits: true,
  },
  chatId: {
    pattern: /^[CGD][A-Z0-9]{2,20}$/,
    example: 'C0123ABCD (channel → View channel details → Channel ID)',
  },
  chatKind(chatId) {
    if (!chatId.startsWith('D')) return { kind: 'group' };
    return {
      kind: 'unserved',
      reason:
        "Slack direct messages are not groups: the owner's DM with the bot is the admin chat (owner_user_id), anyone else's is refused. " +
        'Invite the bot to a channel with that person instead (/invite @bot) and register the channel.',
    };
  },
  setupHint:
    'Create a Slack app with Socket Mode on, put SLACK_BOT_TOKEN=xoxb-… and SLACK_APP_TOKEN=xapp-… in <config dir>/.env, ' +
    'add a [channels.slack] section to config.toml (owner_user_id = "U…"), and restart Carapace. README.md, "Connect Slack", walks through it.',
  create(deps) {
    const tokens = tokensOf(deps);
    return createSlackChannel({
      config: deps.config,
      botToken: tokens.bot,
      appToken: tokens.app,
      tokenProblem: tokens.problem,
      triggerWord: `@${deps.assistantName ?? 'assistant'}`,
      logger: deps.logger,
      ...(deps.clock ? { clock: deps.clock } : {}),
    });
  },
  async doctor(deps) {
    const { problem } = tokensOf(deps);
    if (problem) return [{ ok: false, line: `Slack: ${problem}` }];
    const lines = [{ ok: true, line: 'Slack: bot and app tokens are set and well-formed' }];
    if (!deps.config.owner_user_id)
      lines.push({
        ok: false,
        line: 'Slack: owner_user_id is not set, so nobody is the owner on Slack (profile → ⋮ → Copy member ID)',
      });
    return lines;
  },
};
