/**
 * Runs once before the suite.
 *
 * The CLI is built (`npm run build`'s `buildCli`, about a second) so the `carapace` processes the suites
 * spawn run compiled JavaScript, as users do, never a build older than the sources: a host started from the
 * sources through tsx spent 15 to 20 s more compiling TypeScript before it answered. `CARAPACE_FROM_SOURCE=1`
 * in the environment skips the build and runs every spawned `carapace` from the sources instead.
 *
 * When a Docker engine answers, the agent image is built (or found up to date) here, with progress on the
 * console, so no test waits for it inside a hook timeout; its tag is handed to the suites. The first offline build of the base takes a
 * minute or two; later runs find it cached.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import type { TestProject } from 'vitest/node';
import { ensureAgentImage } from '../host/containers/image/image-ensure.ts';
import { buildCli } from '../scripts/build.ts';
import { dockerAvailable } from './helpers/docker-available.ts';

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

export default async function setup(project: TestProject): Promise<void> {
  if (process.env.CARAPACE_FROM_SOURCE !== '1') {
    const started = Date.now();
    await buildCli();
    process.stdout.write(`[cli] built in ${seconds(started)}\n`);
  }
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
    `[agent image] ${image.tag} ${image.built ? `built (${image.mode})` : 'up to date'} in ${seconds(started)}\n`,
  );
  // The suites take the tag from here (test/helpers/agent-image.ts) instead of ensuring it again.
  project.provide('agentImage', image.tag);
}
