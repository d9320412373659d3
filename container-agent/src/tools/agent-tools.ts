/**
 * The tool list of one run. register_group, list_groups, read_config and propose_config are offered to the admin
 * group only (the host enforces the same from the run's identity).
 */
import type { CommandRunner } from '../executor/command-runner.ts';
import type { BashClassifierSource } from '../bash-gate/fail-closed-classifier.ts';
import type { HostClient } from '../ipc/host-client.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import type { Workspace } from '../workspace/confine.ts';
import { createAdminTools } from './admin-tools.ts';
import { createBashTool } from './bash.ts';
import { createEditFileTool } from './edit-file.ts';
import { createGrepTool } from './grep.ts';
import { createListFilesTool } from './list-files.ts';
import { createMemoryTools } from './memory-tools.ts';
import { createReadAttachmentTool } from './read-attachment.ts';
import { createReadFileTool } from './read-file.ts';
import { reportingReads } from './read-reports.ts';
import { createSendMessageTool } from './send-message.ts';
import { createTaskTools } from './tasks.ts';
import type { ServiceTool } from '../protocol.ts';
import { createServiceTools } from './service-tools.ts';
import type { AgentTool } from './tool.ts';
import { createWebFetchTool } from './web-fetch.ts';
import { createWriteFileTool } from './write-file.ts';

export interface AgentToolsOptions {
  workspace: Workspace;
  host: HostClient;
  classifier: BashClassifierSource;
  isAdmin: boolean;
  /** Environment for bash commands. */
  commandEnv: NodeJS.ProcessEnv;
  /** Where commands run (the command executor in the container). */
  commands: CommandRunner;
  bashCheckTimeoutMs: number;
  ripgrep: () => Promise<string | null>;
  onMessageSent?: (message: { text: string; to?: string }) => void;
  /** The tools of the group's MCP services the host offered at run start. */
  serviceTools?: readonly ServiceTool[];
  logger?: AgentLogger;
}

export function createAgentTools(options: AgentToolsOptions): AgentTool[] {
  const { workspace, host, isAdmin } = options;
  const tools: AgentTool[] = [
    createBashTool({
      classifier: options.classifier,
      host,
      cwd: workspace.cwd,
      env: options.commandEnv,
      commands: options.commands,
      checkTimeoutMs: options.bashCheckTimeoutMs,
      ...(options.logger ? { logger: options.logger } : {}),
    }),
    // The host hears of every file a tool reads (see read-reports.ts); listing names reads no content.
    createReadFileTool(reportingReads(workspace, host, 'read_file')),
    createReadAttachmentTool({
      workspace: reportingReads(workspace, host, 'read_attachment'),
      commands: options.commands,
      env: options.commandEnv,
      host,
    }),
    createWriteFileTool(workspace),
    createEditFileTool(reportingReads(workspace, host, 'edit_file')),
    createListFilesTool(workspace),
    createGrepTool({ workspace: reportingReads(workspace, host, 'grep'), ripgrep: options.ripgrep }),
    createSendMessageTool({
      host,
      isAdmin,
      ...(options.onMessageSent ? { onSent: options.onMessageSent } : {}),
    }),
    ...createTaskTools({ host, isAdmin }),
    createWebFetchTool({ host }),
    ...createMemoryTools({ host }),
    ...createServiceTools({ host, tools: options.serviceTools ?? [] }),
  ];
  if (isAdmin) tools.push(...createAdminTools({ host }));
  return tools;
}
