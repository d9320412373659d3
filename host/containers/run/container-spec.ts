import path from 'node:path';
import type Docker from 'dockerode';
import { z } from 'zod';
import { AGENT_USER, COMMAND_UID } from '../image/image-base-offline.ts';

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const containerMountSchema = z
  .object({
    hostPath: z.string().refine((p) => path.isAbsolute(p), 'hostPath must be absolute'),
    containerPath: z
      .string()
      .refine((p) => path.posix.isAbsolute(p), 'containerPath must be absolute')
      .refine((p) => !p.split('/').includes('..'), 'containerPath must not contain ..')
      .refine((p) => !p.includes(':') && !p.includes(','), 'containerPath must not contain ":" or ","'),
    readOnly: z.boolean(),
  })
  .strict();

export const containerNetworkSchema = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('full') }).strict(),
  /** No network at all, only loopback (an MCP server talked to over stdio). */
  z.object({ mode: z.literal('none') }).strict(),
  /** A bridge network the caller made for this container alone (mcp-server-container.ts). */
  z.object({ mode: z.literal('own'), networkName: z.string().min(1) }).strict(),
  z
    .object({
      mode: z.literal('gateway'),
      networkName: z.string().min(1),
      /** The host's address on that network (from ensureGatewayNetwork); looked up when absent. */
      hostAddress: z.string().min(1).optional(),
    })
    .strict(),
]);

export const containerSpecSchema = z
  .object({
    groupId: z.string().min(1),
    runId: z.union([z.number().int().nonnegative(), z.string().min(1)]),
    image: z.string().min(1),
    mounts: z.array(containerMountSchema),
    env: z.record(
      z.string().regex(envName, 'environment variable names are letters, digits and _'),
      z.string(),
    ),
    network: containerNetworkSchema,
    limits: z
      .object({
        memoryMb: z.number().int().min(32),
        cpus: z.number().positive(),
        pids: z.number().int().min(8),
        /** RLIMIT_FSIZE of every process in the container: no file it writes grows past this. */
        fileSizeMb: z.number().int().min(1).optional(),
      })
      .strict(),
    timeouts: z
      .object({
        hardMs: z.number().int().positive(),
        idleMs: z.number().int().positive(),
        /** Between SIGTERM and SIGKILL when a timeout fires. Default 2000. */
        graceMs: z.number().int().nonnegative().optional(),
      })
      .strict(),
    labels: z.record(z.string(), z.string()).optional(),
    /**
     * A program other than the agent (an MCP server): it runs as `user` with no capability at all, under
     * Docker's init (the image has no launcher), in place of the image's entrypoint when one is given.
     */
    server: z
      .object({
        entrypoint: z.array(z.string()).min(1).optional(),
        command: z.array(z.string()).optional(),
        user: z
          .string()
          .regex(/^\d+:\d+$/, 'user must be numeric uid:gid')
          .refine((u) => !u.split(':').includes('0'), 'a server never runs as root (uid or gid 0)'),
      })
      .strict()
      .optional(),
    hostInstanceId: z.string().min(1),
    /** Appended to the container name: the data folder's short id, so two hosts never collide. */
    nameScope: z
      .string()
      .regex(/^[a-z0-9]{1,16}$/)
      .optional(),
    /**
     * uid:gid the agent runs as; default the image's agent user. A host that is not root cannot hand the
     * group folders to that user, so it runs the agent under its own (never root) ids instead. Commands
     * run under another uid with the same gid (commandUser).
     */
    user: z
      .string()
      .regex(/^\d+:\d+$/, 'user must be numeric uid:gid')
      .refine((u) => !u.split(':').includes('0'), 'the agent never runs as root (uid or gid 0)')
      .optional(),
  })
  .strict();

export type ContainerSpec = z.input<typeof containerSpecSchema>;
export type ContainerMount = z.infer<typeof containerMountSchema>;

export const LABEL_MANAGED = 'carapace.managed';
export const LABEL_GROUP = 'carapace.group';
export const LABEL_RUN = 'carapace.run';
export const LABEL_HOST = 'carapace.host';
/** On a container started ahead of its run; its LABEL_RUN is a placeholder, not a run id. */
export const LABEL_PRESTARTED = 'carapace.prestarted';

/**
 * Docker names allow [a-zA-Z0-9_.-]; group ids (e.g. WhatsApp JIDs) may hold anything else. Run ids count
 * from 1 in every data folder, so hosts of different data folders on one engine add a scope to stay apart.
 */
export function containerName(groupId: string, runId: number | string, scope?: string): string {
  const clean = (s: string) => s.replace(/[^a-zA-Z0-9_.-]/g, '-').slice(0, 64);
  return `carapace-${clean(groupId)}-${clean(String(runId))}${scope ? `-${clean(scope)}` : ''}`;
}

/** Capabilities the launcher (PID 1, root) needs to start the agent and the executor under their uids. */
export const LAUNCHER_CAPABILITIES = ['SETUID', 'SETGID', 'SETPCAP'] as const;

/**
 * The uid:gid commands run as: never the agent's uid (so no command can signal, trace or read the agent),
 * with the agent's gid, so both can write what the other wrote in the group folders (umask 002).
 */
export function commandUser(agentUser: string): string {
  const [uid, gid] = agentUser.split(':').map(Number) as [number, number];
  return `${uid === COMMAND_UID ? COMMAND_UID + 1 : COMMAND_UID}:${gid}`;
}

/**
 * The create options of a run's container. Pure, so the hardening is visible in one place and
 * any change to it shows in review.
 */
export function containerCreateOptions(
  spec: z.infer<typeof containerSpecSchema>,
  hostAddress: string | undefined,
): Docker.ContainerCreateOptions {
  const memory = spec.limits.memoryMb * 1024 * 1024;
  const agentUser = spec.user ?? AGENT_USER;
  const { server } = spec;
  return {
    name: containerName(spec.groupId, spec.runId, spec.nameScope),
    Image: spec.image,
    ...(server
      ? {
          User: server.user,
          ...(server.entrypoint ? { Entrypoint: server.entrypoint } : {}),
          ...(server.command ? { Cmd: server.command } : {}),
          WorkingDir: '/tmp',
        }
      : {
          // The image's launcher (PID 1) starts as root with LAUNCHER_CAPABILITIES only, starts the agent and
          // the command executor under these two uids, and keeps nothing (container-agent/launch.sh).
          User: '0:0',
          Cmd: [agentUser, commandUser(agentUser)],
          WorkingDir: '/workspace',
        }),
    Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    // Our labels last: a caller's labels cannot disguise the container's owner or run.
    Labels: {
      ...spec.labels,
      [LABEL_MANAGED]: '1',
      [LABEL_GROUP]: spec.groupId,
      [LABEL_RUN]: String(spec.runId),
      [LABEL_HOST]: spec.hostInstanceId,
    },
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: true,
    StdinOnce: true,
    Tty: false,
    HostConfig: {
      AutoRemove: true,
      // The image's launcher is PID 1 and becomes tini (it forwards SIGTERM to the agent and reaps zombies).
      // Docker's init would run as root with the launcher's capabilities, its stdio the IPC stream. A server's
      // image has no launcher: Docker's init forwards its SIGTERM and reaps, with no capability to use.
      Init: server !== undefined,
      CapDrop: ['ALL'],
      CapAdd: server ? [] : [...LAUNCHER_CAPABILITIES],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Tmpfs: { '/tmp': 'rw,noexec,nosuid,size=64m' },
      Memory: memory,
      MemorySwap: memory,
      NanoCpus: Math.round(spec.limits.cpus * 1e9),
      PidsLimit: spec.limits.pids,
      ...(spec.limits.fileSizeMb !== undefined
        ? {
            Ulimits: [
              {
                Name: 'fsize',
                Soft: spec.limits.fileSizeMb * 1024 * 1024,
                Hard: spec.limits.fileSizeMb * 1024 * 1024,
              },
            ],
          }
        : {}),
      // Only the agent's networks lead to the host; a network of a container's own names no host.
      ...(spec.network.mode === 'full' || spec.network.mode === 'gateway'
        ? { ExtraHosts: [`host.docker.internal:${hostAddress ?? 'host-gateway'}`] }
        : {}),
      // Mounts (not Binds): a missing host path is an error instead of a root-owned empty dir.
      Mounts: spec.mounts.map((m) => ({
        Type: 'bind' as const,
        Source: m.hostPath,
        Target: m.containerPath,
        ReadOnly: m.readOnly,
      })),
      NetworkMode:
        spec.network.mode === 'full'
          ? 'bridge'
          : spec.network.mode === 'none'
            ? 'none'
            : spec.network.networkName,
      // stdout carries IPC frames (messages, tool output); they must not pile up on disk.
      LogConfig: { Type: 'none', Config: {} },
    },
  };
}
