import fs from 'node:fs';
import type Docker from 'dockerode';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { isDockerNotFound } from '../docker-errors.ts';

/** The image named by the first FROM of a Dockerfile (the online build's base). */
export function dockerfileBaseImage(dockerfilePath: string): string {
  const text = fs.readFileSync(dockerfilePath, 'utf8');
  const match = /^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)/im.exec(text);
  if (!match) throw new Error(`${dockerfilePath} has no FROM line.`);
  return match[1]!;
}

/** Id of a local image, or undefined when Docker does not have it. */
export async function localImageId(docker: Docker, reference: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(reference).inspect()).Id;
  } catch (error) {
    if (isDockerNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * Pulls an image. `firstByteTimeoutMs` bounds the wait for the registry's first answer, so that an
 * unreachable registry (no DNS, a black-holed route) is detected in seconds rather than minutes,
 * while a slow but working download may take as long as it needs.
 */
export async function pullImage(
  docker: Docker,
  reference: string,
  options: {
    onProgress?: (line: string) => void;
    firstByteTimeoutMs?: number;
    /** The first-byte deadline's timer (default: the system clock; the pull itself holds the process). */
    clock?: Pick<Clock, 'setTimer'>;
  } = {},
): Promise<string> {
  const controller = new AbortController();
  const cancelTimer = (options.clock ?? systemClock).setTimer(
    () => controller.abort(),
    options.firstByteTimeoutMs ?? 20_000,
  );
  try {
    const stream = (await docker.pull(reference, {
      abortSignal: controller.signal,
    })) as NodeJS.ReadableStream;
    const events = await new Promise<{ status?: string; error?: string; id?: string }[]>(
      (resolve, reject) => {
        stream.once('data', cancelTimer);
        docker.modem.followProgress(
          stream,
          (err: Error | null, out: { status?: string; error?: string }[]) =>
            err ? reject(err) : resolve(out),
          (event: { status?: string; id?: string }) => {
            // Per-layer download ticks are noise; layer completions and summary lines are progress.
            if (event.status && !/^(Downloading|Extracting|Waiting)/.test(event.status)) {
              options.onProgress?.(`pull ${reference}: ${event.id ? `${event.id} ` : ''}${event.status}`);
            }
          },
        );
      },
    );
    const failed = events.find((e) => e.error);
    if (failed) throw new Error(failed.error);
  } catch (error) {
    throw new Error(
      `Cannot pull ${reference}: ${controller.signal.aborted ? 'no answer from the registry' : errorMessage(error)}`,
      {
        cause: error,
      },
    );
  } finally {
    cancelTimer();
  }
  const id = await localImageId(docker, reference);
  if (!id) throw new Error(`Pulled ${reference} but Docker does not list it.`);
  return id;
}
