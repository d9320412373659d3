import type { HostClient } from '../ipc/host-client.ts';
import type { Workspace } from '../workspace/confine.ts';
import { ToolError } from './tool.ts';

/** The longest path a report can carry (the protocol's bound). */
const MAX_REPORTED_PATH = 4096;

/**
 * The workspace as a reading tool sees it: every path it resolves is reported to the host (`file.read`)
 * before the tool reads it, as the real path (symlinks resolved), so the host can tell a read inside a
 * mount that held secrets and taint the run. A read the host cannot be told about does not happen.
 */
export function reportingReads(
  workspace: Workspace,
  host: Pick<HostClient, 'notify'>,
  tool: 'read_file' | 'grep' | 'edit_file' | 'read_attachment',
): Workspace {
  return {
    root: workspace.root,
    cwd: workspace.cwd,
    display: (realPath) => workspace.display(realPath),
    async resolve(userPath, options) {
      const real = await workspace.resolve(userPath, options);
      if (real.length > MAX_REPORTED_PATH)
        throw new ToolError(`not read: the path is longer than ${MAX_REPORTED_PATH} characters`);
      try {
        host.notify('file.read', { path: real, tool });
      } catch (error) {
        throw new ToolError(`not read: the host could not be told about it (${(error as Error).message})`);
      }
      return real;
    },
  };
}
