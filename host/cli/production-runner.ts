import type { Logger } from 'pino';
import type { AgentRunner } from '../router/agent-runner.ts';
import { createUnavailableRunner } from '../router/unavailable-runner.ts';
import type { CliContext } from './cli-context.ts';

/** The runner `carapace start` uses. Only real runners are built here; test doubles never are. */
export async function createProductionRunner(
  _ctx: CliContext,
  logger: Logger,
): Promise<{ runner: AgentRunner; close(): Promise<void> }> {
  const reason = 'agent containers are not available in this build yet';
  logger.warn(reason);
  return { runner: createUnavailableRunner(reason), close: async () => undefined };
}
