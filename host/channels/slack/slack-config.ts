import { z } from 'zod';

export const SLACK_CHANNEL = 'slack';
export const SLACK_API_URL = 'https://slack.com/api/';

const envName = (example: string) =>
  z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, `must be the NAME of an environment variable, e.g. ${example}`)
    .default(example);

/**
 * `[channels.slack]`. The tokens never sit in config: `bot_token_env` and `app_token_env` name the
 * variables holding them (the environment or `<config dir>/.env`); their shapes are checked when read.
 */
export const slackConfigSchema = z
  .object({
    /** The bot token (`xoxb-…`, "OAuth & Permissions" of the app). */
    bot_token_env: envName('SLACK_BOT_TOKEN'),
    /** The app-level token (`xapp-…`, with `connections:write`) Socket Mode connects with. */
    app_token_env: envName('SLACK_APP_TOKEN'),
    /**
     * The owner's Slack member id (`U…`, "Copy member ID" in their profile): their DM with the bot is an
     * admin chat. Until it is set, nobody is the owner on Slack.
     */
    owner_user_id: z
      .string()
      .regex(
        /^[UW][A-Z0-9]{2,20}$/,
        'must be your Slack member id, e.g. U0123ABCD (profile → ⋮ → Copy member ID)',
      )
      .optional(),
    /** Another Web API root (a test server); ends with `/`. */
    api_url: z.url({ protocol: /^https?$/ }).default(SLACK_API_URL),
    /** The reaction name put on a message that triggers a run (`eyes`, `+1` …); `false` turns it off. */
    ack_reaction: z
      .union([
        z.literal(false),
        z
          .string()
          .regex(/^[a-z0-9_+'-]{1,64}$/, 'must be a Slack emoji name without colons, e.g. eyes, or false'),
      ])
      .default('eyes'),
  })
  .strict();

export type SlackConfig = z.infer<typeof slackConfigSchema>;

/** Slack's token prefixes: a bot token where an app token belongs is the commonest setup mistake. */
export function tokenProblem(
  kind: 'bot' | 'app',
  token: string | undefined,
  envVar: string,
): string | undefined {
  const prefix = kind === 'bot' ? 'xoxb-' : 'xapp-';
  const where =
    kind === 'bot'
      ? 'OAuth & Permissions → Bot User OAuth Token'
      : 'Basic Information → App-Level Tokens (scope connections:write)';
  if (!token) return `${envVar} is not set: put ${envVar}=${prefix}… in <config dir>/.env (${where})`;
  if (!token.startsWith(prefix)) return `${envVar} must start with ${prefix} (${where})`;
  return undefined;
}
