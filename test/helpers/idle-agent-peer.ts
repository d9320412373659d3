import type { Readable, Writable } from 'node:stream';
import { agentMethods, hostMethods } from '../../container-agent/src/protocol.ts';
import { createRpcPeer } from '../../container-agent/src/rpc/peer.ts';

/**
 * The agent's end of a JSON-RPC stream for tests and benches that only call the host: its run methods
 * accept and do nothing.
 */
export function idleAgentPeer(input: Readable, output: Writable) {
  return createRpcPeer({
    input,
    output,
    localMethods: agentMethods,
    remoteMethods: hostMethods,
    handlers: {
      'run.start': () => ({ accepted: true as const }),
      'run.input': () => ({ accepted: true }),
      'run.stop': () => undefined,
    },
  });
}
