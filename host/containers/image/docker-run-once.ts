import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { isDockerAlreadyGone } from '../docker-errors.ts';

export interface RunOnceOptions {
  image: string;
  entrypoint?: string[];
  cmd?: string[];
  user?: string;
  env?: Record<string, string>;
  /** Docker network mode; default `none`: a one-off check needs no network. */
  networkMode?: string;
}

export interface RunOnceResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs a short-lived container to completion and returns its exit code and output. */
export async function runOnce(docker: Docker, options: RunOnceOptions): Promise<RunOnceResult> {
  const container = await docker.createContainer({
    Image: options.image,
    ...(options.entrypoint ? { Entrypoint: options.entrypoint } : {}),
    ...(options.cmd ? { Cmd: options.cmd } : {}),
    ...(options.user ? { User: options.user } : {}),
    Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    Labels: { 'carapace.check': '1' },
    HostConfig: { NetworkMode: options.networkMode ?? 'none' },
  });
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    const out = new PassThrough();
    const err = new PassThrough();
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    out.on('data', (c: Buffer) => stdout.push(c));
    err.on('data', (c: Buffer) => stderr.push(c));
    docker.modem.demuxStream(stream, out, err);
    const ended = new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    await container.start();
    const result = (await container.wait()) as { StatusCode: number };
    await ended;
    return {
      exitCode: result.StatusCode,
      stdout: Buffer.concat(stdout).toString('utf8'),
      stderr: Buffer.concat(stderr).toString('utf8'),
    };
  } finally {
    await container.remove({ force: true }).catch((error: unknown) => {
      if (!isDockerAlreadyGone(error)) throw error;
    });
  }
}
