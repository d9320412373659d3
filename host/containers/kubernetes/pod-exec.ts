import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Exec, V1Status } from '@kubernetes/client-node';
import { errorMessage } from '../../errors/error-message.ts';

export interface ExecResult {
  ok: boolean;
  /** The API server's status for a failure ("command terminated with non-zero exit code: 2"). */
  detail?: string;
}

/**
 * Runs `command` in a container of the pod over the API server's exec stream (WebSocket, the same channel
 * framing as attach), `stdin` piped in and ended, stdout to `stdout`. Resolves once the server has sent the
 * command's status and closed the stream; never rejects (a dropped connection is a failure it reports).
 */
export async function execInPod(
  exec: Exec,
  target: { namespace: string; pod: string; container: string },
  command: string[],
  io: { stdin?: Readable; stdout?: Writable },
): Promise<ExecResult> {
  let status: V1Status | undefined;
  const stderr = new PassThrough();
  let errorText = '';
  stderr.on('data', (chunk: Buffer) => {
    if (errorText.length < 2_000) errorText += chunk.toString('utf8');
  });
  try {
    const socket = await exec.exec(
      target.namespace,
      target.pod,
      target.container,
      command,
      io.stdout ?? null,
      stderr,
      io.stdin ?? null,
      false,
      (s) => (status = s),
    );
    await new Promise<void>((resolve) => {
      const emitter = socket as unknown as NodeJS.EventEmitter;
      emitter.once('close', () => resolve());
      emitter.once('error', () => resolve());
    });
  } catch (err) {
    return { ok: false, detail: `exec failed: ${errorMessage(err)}` };
  }
  if (status?.status === 'Success') return { ok: true };
  return {
    ok: false,
    detail: `${status?.message ?? 'the exec stream closed without a status'}${errorText ? ` (${errorText.trim()})` : ''}`,
  };
}
