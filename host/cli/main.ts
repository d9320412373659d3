import { createCliContext, type CliContext, type CliIo } from './cli-context.ts';
import {
  approvalUsage,
  configUsage,
  groupsUsage,
  memoryUsage,
  logsUsage,
  sendUsage,
  serviceUsage,
  startUsage,
  stopUsage,
  webUsage,
  whatsappUsage,
} from './command-usage.ts';
import { toError } from '../errors/error-message.ts';

type Run = (ctx: CliContext, args: string[]) => Promise<number>;

interface Command {
  usage: string;
  summary: string;
  /** Imported only when this command runs: `carapace send` must not pay for the host's code. */
  load(): Promise<Run>;
  /** Talks to a running host and needs no config: the config schema is not even loaded. */
  client?: true;
}

const COMMANDS: Record<string, Command> = {
  start: {
    usage: startUsage,
    summary: 'run the host (with a console on the admin group in a terminal; --detach: in the background)',
    load: async () => (await import('./commands/start-command.ts')).startCommand,
  },
  stop: {
    usage: stopUsage,
    summary: 'stop the host running on this data folder and wait until it has stopped',
    load: async () => (await import('./commands/stop-command.ts')).stopCommand,
    client: true,
  },
  send: {
    usage: sendUsage,
    summary: 'send one message to a local group, print the replies, exit',
    load: async () => (await import('./commands/send-command.ts')).sendCommand,
    client: true,
  },
  chat: {
    usage: 'carapace chat [--group <id>]',
    summary: 'talk to a local group interactively',
    load: async () => (await import('./commands/chat-command.ts')).chatCommand,
    client: true,
  },
  groups: {
    usage: groupsUsage,
    summary: 'add, list or remove groups',
    load: async () => (await import('./commands/groups-command.ts')).groupsCommand,
  },
  memory: {
    usage: memoryUsage,
    summary: "search, list, show or forget a group's memory; rebuild its index",
    load: async () => (await import('./commands/memory-command.ts')).memoryCommand,
  },
  chats: {
    usage: 'carapace chats [--json]',
    summary: 'list unregistered chats that wrote to the bot, ready for groups add',
    load: async () => (await import('./commands/chats-command.ts')).chatsCommand,
  },
  approve: {
    usage: approvalUsage,
    summary: 'approve a pending request',
    load: async () => (await import('./commands/approval-commands.ts')).approvalCommand('approve'),
    client: true,
  },
  deny: {
    usage: approvalUsage,
    summary: 'deny a pending request',
    load: async () => (await import('./commands/approval-commands.ts')).approvalCommand('deny'),
    client: true,
  },
  pending: {
    usage: approvalUsage,
    summary: 'list pending approval requests',
    load: async () => (await import('./commands/approval-commands.ts')).approvalCommand('pending'),
    client: true,
  },
  status: {
    usage: 'carapace status [--json] [--timeout <seconds>]',
    summary: 'is the host running; runs, queue and outbox',
    load: async () => (await import('./commands/status-command.ts')).statusCommand,
    client: true,
  },
  web: {
    usage: webUsage,
    summary: 'a one-time sign-in link to the web console ([web] listen); its sessions, listed and revoked',
    load: async () => (await import('./commands/web-command.ts')).webCommand,
    client: true,
  },
  config: {
    usage: configUsage,
    summary: 'show or change config.toml (comments kept, validated, backed up), its history and rollback',
    load: async () => (await import('./commands/config-command.ts')).configCommand,
  },
  doctor: {
    usage: 'carapace doctor',
    summary: 'check Node, Docker, the agent image, config and provider',
    load: async () => {
      const { doctorCommand } = await import('./commands/doctor-command.ts');
      return (ctx) => doctorCommand(ctx);
    },
  },
  cleanup: {
    usage: 'carapace cleanup [--dry-run]',
    summary:
      'remove Docker networks, firewall chains and containers (or, on Kubernetes, pods and policies) no host will clean up',
    load: async () => (await import('./commands/cleanup-command.ts')).cleanupCommand,
  },
  backup: {
    usage: 'carapace backup <file.tar.gz>',
    summary: 'archive the database, group and session folders and config (no secrets), also while running',
    load: async () => (await import('./commands/backup-command.ts')).backupCommand,
  },
  restore: {
    usage: 'carapace restore <file.tar.gz>',
    summary:
      'restore an archive, all or nothing: checked, migrated, then swapped in (the host must be stopped)',
    load: async () => (await import('./commands/backup-command.ts')).restoreCommand,
  },
  service: {
    usage: serviceUsage,
    summary: 'run the host in the background as a systemd service (restarts on failure, logs to the journal)',
    load: async () => (await import('./commands/service-command.ts')).serviceCommand,
  },
  logs: {
    usage: logsUsage,
    summary:
      "show the host's log, readable or --json (the journal under the service, else data/logs/carapace.log)",
    load: async () => (await import('./commands/logs-command.ts')).logsCommand,
  },
  audit: {
    usage: 'carapace audit [--tail N] [--json]',
    summary: 'show the newest audit rows',
    load: async () => (await import('./commands/audit-command.ts')).auditCommand,
  },
  usage: {
    usage: 'carapace usage [--group <id>] [--days N] [--json]',
    summary: 'LLM spend today, in 7 and 30 days, per group and model against the caps; the dearest runs',
    load: async () => (await import('./commands/usage-command.ts')).usageCommand,
  },
  image: {
    usage: 'carapace image build [--online | --offline] [--force]',
    summary: 'build the agent image (start does it too when it is missing or stale)',
    load: async () => (await import('./commands/tool-commands.ts')).imageCommand,
  },
  gate: {
    usage: 'carapace gate classify [--json] < commands',
    summary: 'classify bash commands as local or escalate, one JSON line each',
    load: async () => (await import('./commands/tool-commands.ts')).gateCommand,
  },
  secrets: {
    usage: 'carapace secrets scan [--jsonl] < text',
    summary: 'find secrets in text (exit 1 when any)',
    load: async () => (await import('./commands/tool-commands.ts')).secretsCommand,
  },
  mounts: {
    usage: 'carapace mounts check <group>',
    summary: "show what a group's container mounts, and every rejected extra mount",
    load: async () => (await import('./commands/tool-commands.ts')).mountsCommand,
  },
  whatsapp: {
    usage: whatsappUsage,
    summary: 'link this machine to your WhatsApp account (QR or pairing code), or unlink it',
    load: async () => (await import('./commands/whatsapp-command.ts')).whatsappCommand,
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
    'Exit codes: 0 done, 1 failed, 2 bad usage or bad config, 3 timed out',
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
  const say = (stream: NodeJS.WritableStream, text: string) => stream.write(`${text}\n`);
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    say(io.stdout, helpText());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    say(io.stderr, `unknown command "${name}"\n\n${helpText()}`);
    return 2;
  }
  if (args.includes('--help')) {
    say(io.stdout, command.usage);
    return 0;
  }
  try {
    const loadConfig = command.client ? undefined : (await import('../config/load-config.ts')).loadConfig;
    const ctx = createCliContext(io, loadConfig);
    return await (
      await command.load()
    )(ctx, args);
  } catch (err) {
    const { explainError } = await import('./cli-errors.ts');
    const known = explainError(err, command.usage);
    if (known) {
      say(io.stderr, known.message);
      return known.code;
    }
    say(io.stderr, `carapace ${name} failed: ${toError(err).stack ?? String(err)}`);
    return 1;
  }
}
