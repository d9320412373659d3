/**
 * Runs once before the suite: when a Docker engine answers, the agent image is built (or found up to
 * date) here, with progress on the console, so no test waits for it inside a hook timeout. The first
 * offline build of the base takes a minute or two; later runs find it cached.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { ensureAgentImage } from '../host/containers/image/image-ensure.ts';
import { dockerAvailable } from './helpers/docker-available.ts';

export default async function setup(): Promise<void> {
  const docker = new Docker();
  if (!(await dockerAvailable(docker))) {
    console.warn('\n*** no Docker engine answers: the Docker suites will skip (and fail in CI) ***\n');
    return;
  }
  const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const started = Date.now();
  const image = await ensureAgentImage({
    docker,
    projectRoot,
    onProgress: (line) => process.stdout.write(`[agent image] ${line}\n`),
  });
  process.stdout.write(
    `[agent image] ${image.tag} ${image.built ? `built (${image.mode})` : 'up to date'} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}
