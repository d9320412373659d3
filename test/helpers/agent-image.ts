import type Docker from 'dockerode';
import { inject } from 'vitest';
import { ensureAgentImage } from '../../host/containers/image/image-ensure.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The agent image's tag, built or found up to date once by test/global-setup.ts. */
    agentImage?: string;
  }
}

/**
 * The agent image for a suite: the tag the global setup already ensured, so each file does not hash the
 * build context again (about 1.5 s a file on a loaded machine); ensured here when the setup had no engine.
 */
export async function agentImageTag(docker: Docker, projectRoot: string): Promise<string> {
  return inject('agentImage') ?? (await ensureAgentImage({ docker, projectRoot })).tag;
}
