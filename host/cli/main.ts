import { ConfigError } from '../config/config-error.ts';
import { ApiError, HostUnreachable } from '../channels/local/local-client.ts';
import { CleanRoomError } from '../security/admin-clean-room.ts';
import { HostLockedError } from '../store/host-lock.ts';
import { MigrationError } from '../store/migrate.ts';
import { SocketInUseError } from '../channels/local/socket-server.ts';
import { createCliContext, UsageError, type CliContext, type CliIo } from './cli-context.ts';
import { auditCommand } from './commands/audit-command.ts';
import { chatCommand } from './commands/chat-command.ts';
import { doctorCommand } from './commands/doctor-command.ts';
import { groupsCommand, groupsUsage } from './commands/groups-command.ts';
import { sendCommand, sendUsage } from './commands/send-command.ts';
import { startCommand } from './commands/start-command.ts';
import { statusCommand } from './commands/status-command.ts';
import { gateCommand, imageCommand, mountsCommand, secretsCommand } from './commands/tool-commands.ts';

type Command = { usage: string; summary: string; run(ctx: CliContext, args: string[]): Promise<number> };

const COMMANDS: Record<string, Command> = {
  start: {
    usage: 'carapace start [--no-console]',
    summary: 'run the host (with a console on the admin group in a terminal)',
    run: startCommand,
  },
  send: {
    usage: sendUsage,
    summary: 'send one message to a local group, print the replies, exit',
    run: sendCommand,
  },
  chat: {
    usage: 'carapace chat [--group <id>]',
    summary: 'talk to a local group interactively',
    run: chatCommand,
  },
  groups: { usage: groupsUsage, summary: 'add, list or remove groups', run: groupsCommand },
  status: {
    usage: 'carapace status [--json]',
    summary: 'is the host running; runs, queue and outbox',
    run: statusCommand,
  },
  doctor: {
    usage: 'carapace doctor',
    summary: 'check Node, Docker, the agent image, config and provider',
    run: (ctx) => doctorCommand(ctx),
  },
  audit: {
    usage: 'carapace audit [--tail N] [--json]',
    summary: 'show the newest audit rows',
    run: auditCommand,
  },
  image: {
    usage: 'carapace image build [--online | --offline] [--force]',
    summary: 'build the agent image (start does it too when it is missing or stale)',
    run: imageCommand,
  },
  gate: {
    usage: 'carapace gate classify [--json] < commands',
    summary: 'classify bash commands as local or escalate, one JSON line each',
    run: gateCommand,
  },
  secrets: {
    usage: 'carapace secrets scan [--jsonl] < text',
    summary: 'find secrets in text (exit 1 when any)',
    run: secretsCommand,
  },
  mounts: {
    usage: 'carapace mounts check <group>',
    summary: "show what a group's container mounts, and every rejected extra mount",
    run: mountsCommand,
  },
};

function helpText(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  return [
    'Usage: carapace <command> [options]',
    '',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'Environment: CARAPACE_CONFIG_DIR (default ~/.config/carapace), CARAPACE_DATA_DIR (default ./data)',
  ].join('\n');
}

function defaultIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
  };
}

/** Runs one CLI invocation and returns its exit code; errors are reported, never thrown. */
export async function main(argv: string[], io: CliIo = defaultIo()): Promise<number> {
  const [name, ...args] = argv;
  const ctx = createCliContext(io);
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    ctx.out(helpText());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    ctx.err(`unknown command "${name}"\n\n${helpText()}`);
    return 2;
  }
  if (args.includes('--help')) {
    ctx.out(command.usage);
    return 0;
  }
  try {
    return await command.run(ctx, args);
  } catch (err) {
    if (err instanceof UsageError) {
      ctx.err(err.message);
      return 2;
    }
    if (err instanceof HostLockedError || err instanceof SocketInUseError) {
      ctx.err(err.message);
      return 1;
    }
    if (err instanceof CleanRoomError) {
      ctx.err(err.message);
      return 2;
    }
    if (
      err instanceof ConfigError ||
      err instanceof MigrationError ||
      err instanceof HostUnreachable ||
      err instanceof ApiError
    ) {
      ctx.err(err.message);
      return err instanceof ConfigError ? 2 : 1;
    }
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      ctx.err(`${(err as Error).message}\nusage: ${command.usage}`);
      return 2;
    }
    ctx.err(`carapace ${name} failed: ${(err as Error).stack ?? String(err)}`);
    return 1;
  }
}
