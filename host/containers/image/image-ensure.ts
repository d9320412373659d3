import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import { z } from 'zod';
import { bundleAgent, defaultAgentPaths, writeAgentCodeCache } from './agent-bundle.ts';
import { isDockerAlreadyGone } from '../docker-errors.ts';
import {
  ensureOfflineBase,
  OFFLINE_BASE_REPOSITORY,
  offlineBaseRecipe,
  offlineBaseTag,
} from './image-base-offline.ts';
import { dockerfileBaseImage, localImageId, pullImage } from './image-base-online.ts';
import { DEFAULT_BUILD_LOCK, withBuildLock } from './image-build-lock.ts';
import { buildImage } from './image-docker-build.ts';
import { errorMessage } from '../../errors/error-message.ts';

export const AGENT_IMAGE_REPOSITORY = 'carapace-agent';

export const imageBuildModeSchema = z.enum(['auto', 'online', 'offline']);
export type ImageBuildMode = z.infer<typeof imageBuildModeSchema>;

export interface EnsureAgentImageOptions {
  docker: Docker;
  projectRoot: string;
  mode?: ImageBuildMode;
  onProgress?: (line: string) => void;
  /** Rebuild the agent image even when its tag exists (the offline base stays cached). */
  force?: boolean;
  /** Agent entry; default `container-agent/src/main.ts`. */
  entry?: string;
  /** Bundle output; default `container-agent/dist/agent.cjs`. */
  outFile?: string;
  /** Image repository; default `carapace-agent`. Tests and benchmarks use their own. */
  repository?: string;
  /** How many tags of the repository to keep, the new one included. Default 2. */
  keep?: number;
  /** Tags built more recently than this are kept whatever `keep` says. Default PRUNE_GRACE_MS. */
  pruneGraceMs?: number;
  /** Where `CARAPACE_IMAGE_BUILD` is read from when mode is `auto`. Default process.env. */
  env?: Record<string, string | undefined>;
  lockFile?: string;
}

export interface AgentImage {
  tag: string;
  built: boolean;
  mode: 'online' | 'offline';
}

/**
 * Makes sure the agent image for the current agent source exists and returns its tag:
 * bundle → resolve the base (online: node slim from a registry; offline: the local debootstrap
 * base) → tag from bundle + Dockerfile + base id → build only when that tag is missing.
 */
export async function ensureAgentImage(options: EnsureAgentImageOptions): Promise<AgentImage> {
  const { docker, projectRoot } = options;
  const progress = options.onProgress ?? (() => {});
  const defaults = defaultAgentPaths(projectRoot);
  const repository = options.repository ?? AGENT_IMAGE_REPOSITORY;
  const requested = resolveMode(options.mode ?? 'auto', options.env ?? process.env);
  const onlineDockerfile = path.join(projectRoot, 'container-agent', 'Dockerfile');
  const offlineDockerfile = path.join(projectRoot, 'container-agent', 'Dockerfile.offline');

  return withBuildLock(
    options.lockFile ?? DEFAULT_BUILD_LOCK,
    async () => {
      const bundle = await bundleAgent({
        entry: options.entry ?? defaults.entry,
        outFile: options.outFile ?? defaults.outFile,
        projectRoot,
      });

      const base = await resolveBase(docker, requested, onlineDockerfile, progress);
      const dockerfile = base.mode === 'online' ? onlineDockerfile : offlineDockerfile;
      const tag = agentImageTag(repository, bundle.sha256, fs.readFileSync(dockerfile, 'utf8'), base.id);

      if (!options.force && (await localImageId(docker, tag))) return { tag, built: false, mode: base.mode };

      progress(`building ${tag} (${base.mode}, base ${base.reference})`);
      const codeCache = withCodeCache(bundle, base.mode, progress);
      await buildImage({
        docker,
        dockerfile,
        bundleFiles: [...bundle.files, ...codeCache],
        tag,
        ...(base.mode === 'offline' ? { buildArgs: { BASE_IMAGE: base.reference } } : {}),
        labels: { 'carapace.agent-bundle': bundle.sha256, [LABEL_BUILT_AT]: String(Date.now()) },
        onProgress: progress,
      });
      const pruned = await pruneImages(docker, repository, tag, {
        keep: options.keep ?? 2,
        graceMs: options.pruneGraceMs ?? PRUNE_GRACE_MS,
      });
      // Every new offline base (a new host node, even a patch release) is a new 330 MB image. An old one
      // goes once no agent image is built on it any more (the agent images above go first), never while
      // one is: another host on this engine may run the older node and start containers from it.
      if (base.mode === 'offline') {
        pruned.push(
          ...(await pruneImages(docker, OFFLINE_BASE_REPOSITORY, base.reference, {
            keep: 2,
            graceMs: PRUNE_GRACE_MS,
            unusedOnly: true,
          })),
        );
      }
      if (pruned.length > 0) progress(`removed older images: ${pruned.join(', ')}`);
      return { tag, built: true, mode: base.mode };
    },
    progress,
  );
}

/**
 * The agent's code cache, made with this host's node: the offline image runs that very node, so its
 * containers skip compiling the agent. The online image's node rejects it and compiles as before; a cache
 * that cannot be written costs only that time, so the build goes on without it.
 */
function withCodeCache(
  bundle: Parameters<typeof writeAgentCodeCache>[0],
  mode: 'online' | 'offline',
  progress: (line: string) => void,
): string[] {
  if (mode === 'online') return [];
  try {
    return writeAgentCodeCache(bundle);
  } catch (err) {
    progress(`${errorMessage(err)}; building without the code cache (the agent starts slower)`);
    return [];
  }
}

/** `<repository>:<12 hex>` of everything that goes into the image. */
export function agentImageTag(
  repository: string,
  bundleSha256: string,
  dockerfile: string,
  baseId: string,
): string {
  const hash = createHash('sha256').update(`${bundleSha256}\0${dockerfile}\0${baseId}`).digest('hex');
  return `${repository}:${hash.slice(0, 12)}`;
}

function resolveMode(mode: ImageBuildMode, env: Record<string, string | undefined>): ImageBuildMode {
  if (mode !== 'auto') return mode;
  const fromEnv = env.CARAPACE_IMAGE_BUILD?.trim();
  if (!fromEnv) return 'auto';
  const parsed = imageBuildModeSchema.safeParse(fromEnv);
  if (!parsed.success)
    throw new Error(`CARAPACE_IMAGE_BUILD=${fromEnv} is not one of auto, online, offline.`);
  return parsed.data;
}

interface ResolvedBase {
  mode: 'online' | 'offline';
  reference: string;
  id: string;
}

/**
 * auto: the online base if Docker has it; else a cached offline base (no network round trip);
 * else try a pull, which fails within seconds where no registry is reachable; else offline.
 */
async function resolveBase(
  docker: Docker,
  mode: ImageBuildMode,
  onlineDockerfile: string,
  progress: (line: string) => void,
): Promise<ResolvedBase> {
  const onlineBase = dockerfileBaseImage(onlineDockerfile);
  const offline = async (): Promise<ResolvedBase> => {
    const base = await ensureOfflineBase({ docker, onProgress: progress });
    return { mode: 'offline', reference: base.tag, id: base.id };
  };
  if (mode === 'offline') return offline();

  const local = await localImageId(docker, onlineBase);
  if (local) return { mode: 'online', reference: onlineBase, id: local };
  if (mode === 'online') {
    progress(`pulling ${onlineBase}`);
    return {
      mode: 'online',
      reference: onlineBase,
      id: await pullImage(docker, onlineBase, { onProgress: progress }),
    };
  }

  const cachedOffline = await ensureOfflineBaseIfCached(docker);
  if (cachedOffline) return cachedOffline;
  try {
    progress(`pulling ${onlineBase}`);
    const id = await pullImage(docker, onlineBase, { onProgress: progress, firstByteTimeoutMs: 10_000 });
    return { mode: 'online', reference: onlineBase, id };
  } catch (error) {
    progress(`${errorMessage(error)}: building offline instead`);
    return offline();
  }
}

async function ensureOfflineBaseIfCached(docker: Docker): Promise<ResolvedBase | undefined> {
  let tag: string;
  try {
    tag = offlineBaseTag(await offlineBaseRecipe());
  } catch {
    // No apt sources (not Debian-like): the offline path is not available; try online.
    return undefined;
  }
  const id = await localImageId(docker, tag);
  return id ? { mode: 'offline', reference: tag, id } : undefined;
}

/** When an agent image was built, in epoch milliseconds. */
export const LABEL_BUILT_AT = 'carapace.built-at';

/**
 * Images younger than this are never pruned: another host on the same engine (another data folder, or
 * another checkout at a different version) may have just built one and be about to start containers.
 */
export const PRUNE_GRACE_MS = 60 * 60 * 1000;

/**
 * Removes all but the newest `keep` tags of the repository (the current tag always stays), sparing those
 * built within the grace period. A tag still used by a container is left alone; with `unusedOnly`, so is
 * an image another image is built on. Docker does not refuse that one: removing its last tag, even by id,
 * untags it and keeps the layers under the child, so the parents come from the images' own ParentId (set
 * by the classic builder this project uses).
 */
export async function pruneImages(
  docker: Docker,
  repository: string,
  current: string,
  {
    keep,
    graceMs,
    unusedOnly = false,
    now = Date.now(),
  }: { keep: number; graceMs: number; unusedOnly?: boolean; now?: number },
): Promise<string[]> {
  const images = await docker.listImages({ filters: { reference: [repository] } });
  // Docker's Created has one-second resolution: builds in the same second would tie, and pruning could
  // remove the newer one. Our own millisecond stamp decides; Created is the fallback for older images.
  const builtAt = (image: Docker.ImageInfo) => Number(image.Labels?.[LABEL_BUILT_AT]) || image.Created * 1000;
  const tags = images
    .flatMap((image) => (image.RepoTags ?? []).map((tag) => ({ tag, id: image.Id, created: builtAt(image) })))
    .filter((entry) => entry.tag.startsWith(`${repository}:`) && entry.tag !== current)
    .sort((a, b) => b.created - a.created);
  const parents = unusedOnly
    ? new Set((await docker.listImages({ all: true })).map((image) => image.ParentId).filter(Boolean))
    : new Set<string>();
  const removed: string[] = [];
  for (const { tag, id, created } of tags.slice(Math.max(0, keep - 1))) {
    if (now - created < graceMs || parents.has(id)) continue;
    try {
      await docker.getImage(tag).remove();
      removed.push(tag);
    } catch (error) {
      // 409: a container still uses it; it goes at a later build.
      if (!isDockerAlreadyGone(error) && (error as { statusCode?: number }).statusCode !== 409) throw error;
    }
  }
  return removed;
}
