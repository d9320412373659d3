import * as z from 'zod';
import type { BashClassifierSource } from '../bash-gate/fail-closed-classifier.ts';
import { decideBash } from '../bash-gate/decide-bash.ts';
import type { HostClient } from '../ipc/host-client.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { LIMITS, type CommandSetup } from '../protocol.ts';
import type { CommandRunner } from '../executor/command-runner.ts';
import type { BashRunResult } from './bash-runner.ts';
import { defineTool, type AgentTool } from './tool.ts';

export interface BashToolOptions {
  classifier: BashClassifierSource;
  host: HostClient;
  /** Where commands run: the group folder. */
  cwd: string;
  /** The environment commands see (no gateway key). */
  env: NodeJS.ProcessEnv;
  checkTimeoutMs: number;
  defaultTimeoutMs?: number;
  maxOutputBytes?: number;
  logger?: Pick<AgentLogger, 'info'>;
  /** Runs the commands, under another principal than the agent's, and says whether it is separated. */
  commands: CommandRunner;
}

const MAX_TIMEOUT_SECONDS = 600;

const bashArgs = z
  .object({
    command: z
      .string()
      .min(1)
      .max(LIMITS.command)
      .describe('The bash command line to run in the group folder.'),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_TIMEOUT_SECONDS)
      .optional()
      .describe('Kill the command after this many seconds (default 120).'),
  })
  .strict();

export function createBashTool(options: BashToolOptions): AgentTool {
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 120_000;
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  return defineTool({
    name: 'bash',
    description:
      "Run a bash command in the group folder (non-interactive, no stdin). Harmless local commands run at once; others need the host's permission and may be blocked.",
    schema: bashArgs,
    async run(args, context) {
      const decision = await decideBash(args.command, {
        classifier: options.classifier,
        host: options.host,
        checkTimeoutMs: options.checkTimeoutMs,
        signal: context.signal,
      });
      options.logger?.info(
        { run: decision.run, via: decision.run ? decision.via : undefined, reason: decision.reason },
        'bash gate',
      );
      if (!decision.run) return `Blocked: this command was not run. Reason: ${decision.reason}`;
      const separation = await options.commands.separation();
      if (separation !== null)
        return `Blocked: this command was not run. Reason: commands are not isolated from the agent here (${separation})`;
      // The host hears of every command before it runs, so a gate miss is seen even if the command kills
      // the agent. A report that cannot be sent blocks the command.
      try {
        options.host.notify('bash.ran', {
          command: args.command,
          via: decision.via,
          reason: decision.reason.slice(0, LIMITS.reason),
        });
      } catch (error) {
        return `Blocked: this command was not run. Reason: the host could not be told about it (${(error as Error).message})`;
      }
      let result: BashRunResult;
      try {
        result = await options.commands.run({
          command: args.command,
          cwd: options.cwd,
          env: options.env,
          timeoutMs: args.timeout_seconds !== undefined ? args.timeout_seconds * 1000 : defaultTimeoutMs,
          maxOutputBytes,
          signal: context.signal,
        });
      } catch (error) {
        return `The command could not be run: ${(error as Error).message}`;
      }
      return formatBashResult(result);
    },
  });
}

export function formatBashResult(result: BashRunResult): string {
  const status = result.timedOut
    ? 'killed: time limit reached'
    : result.aborted
      ? 'killed: the run was stopped'
      : result.signal
        ? `killed by ${result.signal}`
        : `exit code ${result.exitCode ?? 'unknown'}`;
  const parts = [status];
  if (result.stdout !== '') parts.push(`stdout:\n${result.stdout.trimEnd()}`);
  if (result.stderr !== '') parts.push(`stderr:\n${result.stderr.trimEnd()}`);
  if (result.omittedBytes > 0) parts.push(`[${result.omittedBytes} bytes of output were left out]`);
  return parts.join('\n');
}

/**
 * The environment for commands: what programs need (PATH, locale, proxies) plus the group's time zone,
 * and nothing of the agent's own secrets (the gateway key stays out).
 */
export function commandEnvironment(
  processEnv: NodeJS.ProcessEnv,
  extra: { timezone: string; home: string; setup?: CommandSetup | undefined },
): NodeJS.ProcessEnv {
  const pass = [
    'PATH',
    'LANG',
    'LC_ALL',
    'TMPDIR',
    'HTTP_PROXY',
    'HTTPS_PROXY',
    'NO_PROXY',
    'http_proxy',
    'https_proxy',
    'no_proxy',
  ];
  const env: NodeJS.ProcessEnv = {};
  for (const key of pass) if (processEnv[key] !== undefined) env[key] = processEnv[key];
  env.PATH ??= '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
  env.LANG ??= 'C.UTF-8';
  env.HOME = extra.home;
  env.TZ = extra.timezone;
  env.TERM = 'dumb';
  // What the host gives this run's commands: its credential routes and git's way to them (protocol.ts).
  Object.assign(env, extra.setup?.env);
  // Commands run under another uid than the one that owns the group folder (DESIGN.md, "Bash gate"); git
  // would refuse its repositories as of "dubious ownership". Both uids are the same run's.
  const gitConfig = [{ key: 'safe.directory', value: '*' }, ...(extra.setup?.gitConfig ?? [])];
  env.GIT_CONFIG_COUNT = String(gitConfig.length);
  gitConfig.forEach(({ key, value }, i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}
