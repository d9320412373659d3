import { z } from 'zod';

/**
 * `[containers]` of config.toml: how agent images are built and what each run's container may
 * use. The lead composes it into the root schema (`containers: containersConfigSchema.prefault({})`).
 */
export const containersConfigSchema = z
  .object({
    /** auto: online when node:22-bookworm-slim is present or pullable, else the offline debootstrap build. */
    image_build: z.enum(['auto', 'online', 'offline']).default('auto'),
    /** Agent image tags kept after a build (the new one included). */
    keep_images: z.number().int().min(1).max(10).default(2),
    memory_mb: z.number().int().min(64).max(65_536).default(1_024),
    cpus: z.number().min(0.1).max(64).default(1),
    pids: z.number().int().min(16).max(32_768).default(256),
    /** A run is killed after this long whatever it does. */
    hard_timeout_ms: z.number().int().min(1_000).max(86_400_000).default(1_800_000),
    /** A run is killed after this long without output or host traffic. */
    idle_timeout_ms: z.number().int().min(1_000).max(86_400_000).default(300_000),
    /** Between SIGTERM and SIGKILL when a run is stopped. */
    stop_grace_ms: z.number().int().min(0).max(60_000).default(2_000),
    /** Disk quota of each group's folder on the host; no single file may grow past it either. */
    group_quota_mb: z.number().int().min(1).max(1_048_576).default(1_024),
    /** Disk quota of each group's session folder (its conversation history). */
    session_quota_mb: z.number().int().min(1).max(1_048_576).default(256),
    /** How often a running group's folders are walked whole (writes are also measured as they happen). */
    disk_check_ms: z.number().int().min(200).max(600_000).default(2_000),
    /** The internal Docker network of `gateway`-mode groups. */
    gateway_network: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/, 'must be a Docker network name (letters, digits, _ . -)')
      .default('carapace-gateway'),
  })
  .strict();

export type ContainersConfig = z.infer<typeof containersConfigSchema>;
