import type { HostDeps } from '../../host/app/host.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';

/** For a runner that needs nothing from the host (tests, doubles). */
export function staticRunner(runner: AgentRunner): HostDeps['createRunner'] {
  return async () => ({ runner, close: async () => undefined });
}
