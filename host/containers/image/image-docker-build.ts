import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';

export interface DockerBuildOptions {
  docker: Docker;
  /** The Dockerfile to build; it is staged as `Dockerfile` next to `dist/`. */
  dockerfile: string;
  /** Files of the agent bundle, staged under `dist/` (the Dockerfiles `COPY dist/ /app/`). */
  bundleFiles: readonly string[];
  tag: string;
  buildArgs?: Record<string, string>;
  labels?: Record<string, string>;
  onProgress?: (line: string) => void;
}

/**
 * Builds an image from a staged context that holds only the Dockerfile and the bundle, so nothing
 * else from the project (sources, .env, data) can ever reach the daemon.
 */
export async function buildImage(options: DockerBuildOptions): Promise<void> {
  const { docker } = options;
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-build-'));
  try {
    fs.copyFileSync(options.dockerfile, path.join(stage, 'Dockerfile'));
    fs.mkdirSync(path.join(stage, 'dist'));
    const src = ['Dockerfile'];
    for (const file of options.bundleFiles) {
      const name = path.basename(file);
      fs.copyFileSync(file, path.join(stage, 'dist', name));
      src.push(`dist/${name}`);
    }
    const stream = (await docker.buildImage(
      { context: stage, src },
      {
        t: options.tag,
        rm: true,
        forcerm: true,
        ...(options.buildArgs ? { buildargs: options.buildArgs } : {}),
        ...(options.labels ? { labels: options.labels } : {}),
      },
    )) as NodeJS.ReadableStream;
    type BuildEvent = { stream?: string; error?: string; errorDetail?: { message?: string } };
    const events = await new Promise<BuildEvent[]>((resolve, reject) =>
      docker.modem.followProgress(
        stream,
        (err: Error | null, out: BuildEvent[]) => (err ? reject(err) : resolve(out)),
        (event: BuildEvent) => {
          const line = event.stream?.trim();
          if (line && /^Step \d+\/\d+/.test(line)) options.onProgress?.(`build ${options.tag}: ${line}`);
        },
      ),
    );
    const failed = events.find((e) => e.error || e.errorDetail);
    if (failed) {
      const output = events
        .map((e) => e.stream ?? '')
        .join('')
        .trim()
        .split('\n')
        .slice(-15)
        .join('\n');
      throw new Error(
        `docker build of ${options.tag} failed: ${failed.errorDetail?.message ?? failed.error}\n${output}`,
      );
    }
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}
