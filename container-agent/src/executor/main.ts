/**
 * The command executor: the process that runs every bash command, under the commands' own uid (not the
 * agent's), started by the container's launcher (container-agent/launch.sh) with no capability and no
 * environment of the agent. It reads requests from the agent on stdin and answers on stdout, one JSON
 * line each; it holds nothing a command could not read anyway, so a command that takes it over gains
 * nothing (DESIGN.md, "Bash gate").
 */
import { runBash } from '../tools/bash-runner.ts';
import { createLineDecoder } from '../rpc/line-decoder.ts';
import { executorRequestSchema, MAX_EXECUTOR_LINE_BYTES, type ExecutorReply } from './protocol.ts';

// Commands may signal the executor (it shares their uid): SIGUSR1 must not open an inspector in the container.
process.on('SIGUSR1', () => undefined);

const send = (reply: ExecutorReply): void => void process.stdout.write(JSON.stringify(reply) + '\n');
const running = new Map<number, AbortController>();

const decoder = createLineDecoder({
  maxFrameBytes: MAX_EXECUTOR_LINE_BYTES,
  onOversize: () => undefined,
  onFrame: (line) => {
    let request;
    try {
      request = executorRequestSchema.parse(JSON.parse(line));
    } catch {
      return;
    }
    if (request.type === 'abort') {
      running.get(request.id)?.abort();
      return;
    }
    const { id, command, cwd, env, timeoutMs, maxOutputBytes } = request;
    const abort = new AbortController();
    running.set(id, abort);
    runBash({ command, cwd, env, timeoutMs, maxOutputBytes, signal: abort.signal })
      .then(
        (result) => send({ type: 'result', id, ...result }),
        (error: unknown) =>
          send({
            type: 'error',
            id,
            message: (error instanceof Error ? error.message : String(error)).slice(0, 2000),
          }),
      )
      .finally(() => running.delete(id));
  },
});
process.stdin.on('data', (chunk: Buffer) => decoder.push(chunk));
// The agent is gone: so is every command.
process.stdin.on('end', () => {
  for (const abort of running.values()) abort.abort();
  process.exit(0);
});
send({ type: 'hello', uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 });
