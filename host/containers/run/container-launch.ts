import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import type { Duplex } from 'node:stream';
import { PassThrough, Writable } from 'node:stream';
import type Docker from 'dockerode';
import {
  containerCreateOptions,
  containerName,
  containerSpecSchema,
  type ContainerSpec,
} from './container-spec.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { waitFor } from '../../time/clock-timers.ts';
import { dockerStatusCode, isDockerAlreadyGone } from '../docker-errors.ts';
import { gatewayHostAddress } from '../network/network-gateway.ts';
import { createRunTimers } from './run-timers.ts';
import type { ContainerExit, ContainerExitReason, ContainerProcess } from '../../ipc/container-process.ts';

export type { ContainerExit, ContainerExitReason, ContainerProcess };

const DEFAULT_GRACE_MS = 2000;
/** How long to wait for the output stream to drain after the container is gone. */
const OUTPUT_DRAIN_MS = 2000;

/**
 * Creates, attaches and starts a run's container. Ordering matters: the attach and the wait are
 * both established before start, so no output and no exit can be missed (the container removes
 * itself on exit, so a late wait would find nothing).
 */
export async function launchContainer(
  docker: Docker,
  input: ContainerSpec,
  /** `clock` times the idle and hard timeouts (default: the system clock). */
  options: { deferTimeouts?: boolean; clock?: Pick<Clock, 'setTimer'> } = {},
): Promise<ContainerProcess> {
  const spec = containerSpecSchema.parse(input);
  const name = containerName(spec.groupId, spec.runId, spec.nameScope);
  const hostAddress =
    spec.network.mode === 'gateway'
      ? (spec.network.hostAddress ?? (await gatewayHostAddress(docker, spec.network.networkName)))
      : undefined;

  let container: Docker.Container;
  try {
    container = await docker.createContainer(containerCreateOptions(spec, hostAddress));
  } catch (error) {
    if (dockerStatusCode(error) === 409) {
      throw new Error(
        `A container named ${name} already exists: run ids must be unique per group. ` +
          `If it is left over from a crash, remove it with: docker rm -f ${name}`,
        { cause: error },
      );
    }
    if (dockerStatusCode(error) === 404) {
      throw new Error(
        `Cannot create ${name}: image ${spec.image} or network not found (${errorMessage(error)}). Run: carapace image build`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }

  let socket: Duplex;
  let waiting: ArmedWait;
  try {
    [socket, waiting] = await Promise.all([
      container.attach({
        stream: true,
        stdin: true,
        stdout: true,
        stderr: true,
        hijack: true,
      }) as Promise<Duplex>,
      armWait(docker, container.id),
    ]);
    await container.start();
  } catch (error) {
    await container.remove({ force: true }).catch(() => {});
    throw new Error(`Starting container ${name} failed: ${errorMessage(error)}`, { cause: error });
  }
  const startedAt = Math.floor(Date.now() / 1000);

  const stdout = new PassThrough();
  const stderr = new PassThrough();
  docker.modem.demuxStream(socket, stdout, stderr);
  const outputEnded = new Promise<void>((resolve) => {
    const end = () => {
      stdout.end();
      stderr.end();
      resolve();
    };
    socket.once('end', end);
    socket.once('close', end);
    // A broken attach connection ends the output; the exit is still reported by the wait.
    socket.on('error', () => end());
  });
  const stdin = stdinWriter(socket);

  let stopRequest: { reason: ContainerExitReason; detail: string } | undefined;
  let finished = false;
  const clock = options.clock ?? systemClock;
  const graceMs = spec.timeouts.graceMs ?? DEFAULT_GRACE_MS;
  const timers = createRunTimers({
    clock,
    hardMs: spec.timeouts.hardMs,
    idleMs: spec.timeouts.idleMs,
    onExpire: (reason, detail) => {
      stopWith(reason, detail, graceMs).catch(() => {
        // The engine refused the kill; the exit (or the lost connection) is still reported by exited.
      });
    },
  });
  const { touch, beginRun } = timers;
  socket.on('data', touch);
  if (!options.deferTimeouts) beginRun();

  const exited: Promise<ContainerExit> = waiting.body
    .then(async (body): Promise<ContainerExit> => {
      const exitCode = typeof body.StatusCode === 'number' ? body.StatusCode : null;
      await Promise.race([outputEnded, waitFor(clock, OUTPUT_DRAIN_MS)]);
      if (stopRequest) return { exitCode, reason: stopRequest.reason, detail: stopRequest.detail };
      if (body.Error?.Message) return { exitCode, reason: 'error', detail: body.Error.Message };
      // 137 = killed by SIGKILL, which nobody here asked for: the kernel's OOM killer is the usual cause.
      if (exitCode === 137 && (await wasOomKilled(docker, container.id, startedAt))) {
        return { exitCode, reason: 'oom', detail: `exceeded the memory limit of ${spec.limits.memoryMb} MB` };
      }
      return { exitCode, reason: 'exited' };
    })
    .catch((error: unknown): ContainerExit => {
      if (stopRequest) return { exitCode: null, reason: stopRequest.reason, detail: stopRequest.detail };
      return {
        exitCode: null,
        reason: 'error',
        detail: `lost track of the container: ${errorMessage(error)}`,
      };
    })
    .finally(() => {
      finished = true;
      timers.cancel();
      socket.removeListener('data', touch);
      if (!socket.destroyed) socket.destroy();
    });

  async function stopWith(reason: ContainerExitReason, detail: string, grace: number): Promise<void> {
    if (finished) return;
    stopRequest ??= { reason, detail };
    if (grace <= 0) {
      // No grace: one kill, not a SIGTERM and a second round trip to the engine.
      await signal('SIGKILL');
      await exited;
      return;
    }
    await signal('SIGTERM');
    const gone = await Promise.race([exited.then(() => true), waitFor(clock, grace).then(() => false)]);
    if (!gone) await signal('SIGKILL');
    await exited;
  }

  async function signal(sig: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    try {
      await container.kill({ signal: sig });
    } catch (error) {
      // Already exited or being removed: what we wanted.
      if (!isDockerAlreadyGone(error)) throw error;
    }
  }

  return {
    name,
    id: container.id,
    stdin,
    stdout,
    stderr,
    touch,
    beginRun,
    stop: (reason: string, grace = DEFAULT_GRACE_MS) => stopWith('stopped', reason, grace),
    exited,
  };
}

/** Docker's answer to a container wait (`POST /containers/{id}/wait`), what of it is read. */
const waitBodySchema = z.object({
  StatusCode: z.number().optional(),
  Error: z.object({ Message: z.string().optional() }).nullable().optional(),
});
type WaitBody = z.infer<typeof waitBodySchema>;
/** Wrapped in an object: resolving a promise with a promise would adopt it and wait for the exit. */
type ArmedWait = { body: Promise<WaitBody> };

/**
 * Sends POST /containers/{id}/wait?condition=removed and resolves once the daemon has answered
 * with its headers: the daemon registers the waiter before it flushes them, so a start issued
 * after this cannot outrun the wait. `body` resolves with the exit status.
 */
function armWait(docker: Docker, id: string): Promise<ArmedWait> {
  return new Promise((resolveArmed, rejectArmed) => {
    docker.modem.dial(
      {
        path: `/containers/${id}/wait?`,
        method: 'POST',
        options: { condition: 'removed' },
        isStream: true,
        statusCodes: { 200: true, 400: 'bad parameter', 404: 'no such container', 500: 'server error' },
      },
      (error: unknown, response: unknown) => {
        if (error) return rejectArmed(error);
        const res = response as IncomingMessage;
        resolveArmed({
          body: new Promise((resolve, reject) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (body += chunk));
            res.on('error', reject);
            res.on('end', () => {
              try {
                resolve(waitBodySchema.parse(JSON.parse(body)));
              } catch {
                reject(new Error(`unexpected wait response from Docker: ${body.slice(0, 200)}`));
              }
            });
          }),
        });
      },
    );
  });
}

/** A Writable over the hijacked connection whose end() half-closes it (EOF on the agent's stdin). */
function stdinWriter(socket: Duplex): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      // After the container is gone nobody reads: drop instead of raising EPIPE at the caller.
      if (socket.destroyed || socket.writableEnded) return callback();
      socket.write(chunk, () => callback());
    },
    final(callback) {
      if (!socket.destroyed && !socket.writableEnded) socket.end();
      callback();
    },
  });
}

async function wasOomKilled(docker: Docker, id: string, since: number): Promise<boolean> {
  try {
    const stream = (await docker.getEvents({
      since,
      until: Math.floor(Date.now() / 1000) + 1,
      filters: { container: [id], event: ['oom'] },
    })) as NodeJS.ReadableStream;
    let text = '';
    await Promise.race([
      new Promise<void>((resolve) => {
        stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
        stream.on('end', resolve);
        stream.on('error', () => resolve());
      }),
      waitFor(systemClock, 2000),
    ]);
    return text.includes('"oom"');
  } catch {
    return false;
  }
}
