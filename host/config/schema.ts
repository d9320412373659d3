import { z } from 'zod';
import { groupIdSchema } from '../../container-agent/src/protocol.ts';
import { ALWAYS_ON_CHANNELS, CHANNEL_DEFINITIONS } from '../channels/channel-definitions.ts';
import { personaSchema } from '../channels/account-defaults.ts';
import { channelsConfigSchema } from '../channels/registry.ts';
import { containersConfigSchema } from '../containers/run/container-config.ts';
import { runnerConfigSchema } from '../containers/kubernetes/kubernetes-config.ts';
import { extraMountRequestSchema } from '../containers/mounts/mount-validation.ts';
import { gatewayConfigSchema, providerConfigSchema } from '../gateway/config.ts';
import { mediaConfigSchema } from '../router/media/media-config.ts';
import { schedulerConfigSchema } from '../scheduler/scheduler-config.ts';
import { copConfigSchema } from '../security/cop/cop.ts';
import { credentialsConfigSchema } from '../gateway/credential/credential-config.ts';
import { servicesConfigSchema } from '../services/service-trust.ts';
import { webFetchConfigSchema } from '../services/web-fetch-config.ts';
import { webConfigSchema } from './web-config.ts';

/**
 * The host configuration (`<config dir>/config.toml`). Every section is optional and every key has a
 * default, so an absent file is a valid configuration; unknown keys are rejected so typos never pass
 * silently. `config/config.example.toml` documents the same defaults and a test keeps the two equal.
 */

const ianaTimeZone = z.string().refine(
  (tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  },
  { message: 'not a known IANA time zone' },
);

export const assistantConfigSchema = z
  .object({
    /** The trigger word is `@<name>`. */
    name: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_-]{0,31}$/, 'must be one word of letters, digits, "_" or "-" (at most 32)')
      .default('Andy'),
    timezone: ianaTimeZone.default('UTC'),
    /** How the assistant presents itself (tone, role), for every group whose account or own table sets none. */
    persona: personaSchema.optional(),
  })
  .strict();

/**
 * `[runs.prestart]`: containers created and booted ahead of a recently active group's next run, so a reply
 * does not wait for a container start. The defaults fit a 2-core, 4 GiB machine (an idle agent container
 * holds about 30–60 MiB).
 */
export const prestartConfigSchema = z
  .object({
    /** At most this many pre-started containers at once; 0 turns pre-starting off. */
    count: z.number().int().min(0).max(64).default(2),
    /** Their measured memory, summed, stays under this. */
    memory_mb: z.number().int().min(0).max(65_536).default(256),
    /** A pre-started container no run took for this long is removed; groups active this recently get one at start. */
    idle_ms: z.number().int().min(1_000).max(86_400_000).default(600_000),
  })
  .strict();

export const runsConfigSchema = z
  .object({
    /** Global cap on concurrently running agent containers. */
    max_concurrent: z.number().int().min(1).max(64).default(3),
    /** Attempts for a run that fails before its first reply (the first try included). */
    max_attempts: z.number().int().min(1).max(10).default(3),
    retry_base_ms: z.number().int().min(10).max(600_000).default(2_000),
    max_tool_steps: z.number().int().min(1).max(200).default(25),
    max_output_tokens: z.number().int().min(256).max(200_000).default(4_096),
    // Longer than [security] approval_timeout_ms, so a run can wait for the owner and still go on.
    wall_time_ms: z.number().int().min(1_000).max(3_600_000).default(600_000),
    prestart: prestartConfigSchema.prefault({}),
  })
  .strict();

export const outboxConfigSchema = z
  .object({
    retry_base_ms: z.number().int().min(10).max(600_000).default(1_000),
    retry_max_ms: z.number().int().min(100).max(3_600_000).default(300_000),
    /** Sends of one piece that took the connection down before it is dead-lettered (a poison message). */
    max_connection_drops: z.number().int().min(1).max(20).default(3),
  })
  .strict();

const retentionDays = z.number().int().min(0).max(36_500).default(90);

/** `[retention]`: how long old history is kept (0 keeps it for ever); the audit log is always kept whole. */
export const retentionConfigSchema = z
  .object({
    /** Delivered and dead-lettered replies. */
    outbox_days: retentionDays,
    /** Messages no pending reply needs. */
    messages_days: retentionDays,
    /** Finished runs. */
    runs_days: retentionDays,
    /** Per-run gateway usage; older days keep one total per group and model. */
    usage_days: retentionDays,
    interval_ms: z.number().int().min(60_000).max(86_400_000).default(3_600_000),
    batch_size: z.number().int().min(10).max(10_000).default(500),
  })
  .strict();

export const loggingConfigSchema = z
  .object({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  })
  .strict();

/** Per-group settings, keyed by group id (`[groups.family]`). */
export const groupConfigSchema = z
  .object({
    /** Host folders mounted at /workspace/extra/<name>, each checked against mount-allowlist.toml. */
    extra_mounts: z.array(extraMountRequestSchema).default([]),
    /** The group's workspace holds secrets: reading it taints a run as secret. */
    contains_secrets: z.boolean().default(false),
    /** Host services the group may call; default: web_fetch for other groups, none for the admin group. */
    services: z.array(z.string()).optional(),
    /**
     * Who starts a run: "mention" (the trigger word, an @-mention of the bot or a reply to it), "always"
     * (every message), "owner" (only the owner's own messages). The admin group always triggers.
     */
    trigger: z.enum(['mention', 'always', 'owner']).default('mention'),
    /** When set, only these sender ids can trigger; everyone else's messages stay context. */
    allowed_senders: z.array(z.string().min(1)).optional(),
    /**
     * `[credentials.<name>]` the group's runs may use through the host (never see); unset: its account's
     * `credentials`, else none. An empty list gives none even when the account has some.
     */
    credentials: z.array(z.string()).max(32).optional(),
    /** The group's persona; unset: its account's, else `[assistant] persona`. */
    persona: personaSchema.optional(),
    /** The git identity the group's commits carry (not secret: set in the container). */
    git_name: z
      .string()
      .regex(
        /^[^\n\r<>\0]{1,128}$/,
        'must be a name of at most 128 characters without "<", ">" or line breaks',
      )
      .optional(),
    git_email: z
      .string()
      .regex(/^[^\s<>@]{1,64}@[^\s<>@]{1,190}$/, 'must be an e-mail address such as "bot@example.com"')
      .optional(),
    /** Voice notes of this group are transcribed (when `[media.transcription]` is enabled). */
    transcribe: z.boolean().default(true),
  })
  .strict();

/** `[admin]`: where the host's notices and approval requests go. */
export const adminConfigSchema = z
  .object({
    /** Channel names whose admin chat gets notices; default: every linked admin chat. */
    notify: z.array(z.string().min(1)).optional(),
    /** "HH:MM" (24 h) in [assistant].timezone: the day's spend goes to the admin chats then. Unset: no summary. */
    daily_summary: z
      .string()
      .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day as "HH:MM", such as "21:00"')
      .optional(),
  })
  .strict();

export const securityConfigSchema = z
  .object({
    /** How long a human approval waits in the admin chat before it counts as denied. */
    approval_timeout_ms: z.number().int().min(10_000).max(3_600_000).default(300_000),
    cop: copConfigSchema.prefault({}),
  })
  .strict();

export const hostConfigSchema = z
  .object({
    assistant: assistantConfigSchema.prefault({}),
    admin: adminConfigSchema.prefault({}),
    channels: channelsConfigSchema(CHANNEL_DEFINITIONS, ALWAYS_ON_CHANNELS),
    provider: providerConfigSchema.prefault({}),
    gateway: gatewayConfigSchema.prefault({}),
    containers: containersConfigSchema.prefault({}),
    runner: runnerConfigSchema.prefault({}),
    security: securityConfigSchema.prefault({}),
    services: servicesConfigSchema,
    credentials: credentialsConfigSchema,
    web_fetch: webFetchConfigSchema.prefault({}),
    media: mediaConfigSchema.prefault({}),
    scheduler: schedulerConfigSchema.prefault({}),
    groups: z.record(groupIdSchema, groupConfigSchema).default({}),
    runs: runsConfigSchema.prefault({}),
    outbox: outboxConfigSchema.prefault({}),
    retention: retentionConfigSchema.prefault({}),
    logging: loggingConfigSchema.prefault({}),
    web: webConfigSchema.prefault({}),
  })
  .strict();

export type HostConfig = z.infer<typeof hostConfigSchema>;
