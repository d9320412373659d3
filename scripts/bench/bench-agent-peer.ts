import type { Readable, Writable } from 'node:stream';
import { agentMethods, hostMethods } from '../../container-agent/src/protocol.ts';
import { createRpcPeer } from '../../container-agent/src/rpc/peer.ts';

/** The agent's end of the JSON-RPC stream in a bench: it only calls the host; run methods are no-ops. */
export function benchAgentPeer(input: Readable, output: Writable) {
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
