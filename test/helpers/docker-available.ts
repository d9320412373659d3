import Docker from 'dockerode';
import { describe, it } from 'vitest';

/** True when a Docker engine answers a ping within `timeoutMs`. */
export async function dockerAvailable(docker: Docker = new Docker(), timeoutMs = 3000): Promise<boolean> {
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref()),
    ]);
    return true;
  } catch {
    return false;
  }
}

/**
 * `describe` for suites that need a real Docker engine. Await it at the top level of the test file.
 * In CI a missing engine fails the suite (CI installs and starts Docker, so its absence is a bug);
 * on a developer machine the suite is skipped, with the reason in its name and on the console.
 */
export async function describeDocker(name: string, body: () => void): Promise<void> {
  if (await dockerAvailable()) {
    describe(name, body);
    return;
  }
  if (process.env.CI) {
    describe(name, () => {
      it('needs a reachable Docker engine (required in CI)', () => {
        throw new Error(
          'No Docker engine reachable (docker ping failed). CI must install and start Docker before the tests ' +
            '(apt-get install docker.io && dockerd &), or set DOCKER_HOST.',
        );
      });
    });
    return;
  }
  console.warn(
    `\n*** SKIPPING "${name}": no Docker engine reachable (start dockerd or set DOCKER_HOST) ***\n`,
  );
  describe.skip(`${name} (skipped: no Docker engine reachable)`, body);
}
