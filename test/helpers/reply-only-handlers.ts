import { RPC_ERROR_CODES, type HostMethods } from '../../container-agent/src/protocol.ts';
import { RpcError } from '../../container-agent/src/rpc/errors.ts';
import type { RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import type { RunDone } from '../../host/ipc/host-handlers.ts';
import type { RunCallbacks } from '../../host/router/agent-runner.ts';

/**
 * Host handlers for runner tests that are about the container, not the host's policies: the agent may
 * reply and finish; every other call is refused as forbidden (and fails the run's use of it visibly).
 */
export function replyOnlyHandlers(
  callbacks: RunCallbacks,
  onDone: (done: RunDone) => void,
  overrides: Partial<RpcHandlers<HostMethods>> = {},
): RpcHandlers<HostMethods> {
  const refuse = () => {
    throw new RpcError(RPC_ERROR_CODES.forbidden, 'not in this test');
  };
  return {
    'message.send': async ({ text }) => {
      await callbacks.reply(text);
      return { queued: true as const };
    },
    'run.done': (done) => {
      onDone(done);
      return { ok: true as const };
    },
    'task.schedule': refuse,
    'task.list': refuse,
    'task.update': refuse,
    'task.pause': refuse,
    'task.resume': refuse,
    'task.cancel': refuse,
    'group.list': refuse,
    'group.register': refuse,
    'security.bash_check': refuse,
    'bash.ran': () => undefined,
    'file.read': () => undefined,
    'service.call': refuse,
    'config.read': refuse,
    'config.propose': refuse,
    'memory.search': refuse,
    'memory.remember': refuse,
    'memory.forget': refuse,
    ...overrides,
  };
}
