import { createCredentialStatusBook } from '../gateway/credential/credential-status.ts';
import { systemClock } from '../time/clock.ts';
import type { AgentRuntime, AgentRuntimeDeps } from './agent-runtime-deps.ts';
import { startAgentGateway, type AgentGateway } from './agent-gateway.ts';
import type { CloserStack } from './closer-stack.ts';

/**
 * The part of a runtime that is the same whatever runs the agent: the LLM gateway (closed with the runtime),
 * the credentials' status for `status`, transcription and the Cop's way to the provider, and the close that
 * undoes everything the runtime started, in reverse.
 */
export function startRuntimeGateway(
  deps: AgentRuntimeDeps,
  closers: CloserStack,
): { gateway: AgentGateway; parts: Omit<AgentRuntime, 'runner'> } {
  const credentialBook = createCredentialStatusBook(systemClock);
  const gateway = startAgentGateway(deps, credentialBook);
  closers.push('LLM gateway', () => gateway.close());
  return {
    gateway,
    parts: {
      credentials: {
        status: () =>
          credentialBook.status(
            deps.live().credentials,
            deps.live().groups,
            (name) => deps.credentials?.secret(name) !== undefined,
          ),
      },
      transcribe: gateway.transcribe,
      review: gateway.review,
      close: async () => {
        const failures = await closers.closeAll('host stopping');
        // The host logs a runtime that did not close; the first failure says what was left behind.
        if (failures[0]) throw new Error(`could not close ${failures[0].name}`, { cause: failures[0].error });
      },
    },
  };
}
