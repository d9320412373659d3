import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT, UsageError, type CliContext } from '../cli-context.ts';
import { serviceUsage } from '../command-usage.ts';
import { ensureDataDirs } from '../../config/paths.ts';
import { agentBundleDir, renderUnit, SERVICE_NAME, unitFile, type ServiceScope } from '../service-unit.ts';

/** `carapace service install|uninstall`: a systemd unit that runs the host in the background. */
export async function serviceCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      user: { type: 'boolean', default: false },
      system: { type: 'boolean', default: false },
      'run-as': { type: 'string' },
    },
  });
  if (values.user && values.system) throw new UsageError('choose one of --user and --system');
  const runAs = values['run-as'];
  if (runAs !== undefined && values.user)
    throw new UsageError('--run-as is for the system service; a --user service runs as you');
  // Root runs the system service (the firewall of gateway-mode groups needs root); anyone else their own.
  const scope: ServiceScope =
    values.system || runAs !== undefined || (!values.user && process.getuid?.() === 0) ? 'system' : 'user';
  const file = unitFile(scope, ctx.io.env);
  const systemctl = (...a: string[]) =>
    ['systemctl', ...(scope === 'user' ? ['--user'] : []), ...a].join(' ');
  if (sub === 'install') {
    // The sandbox makes only these writable, and systemd refuses a unit whose writable paths are missing.
    ensureDataDirs(ctx.paths);
    fs.mkdirSync(ctx.paths.configDir, { recursive: true, mode: 0o700 });
    fs.mkdirSync(agentBundleDir(PROJECT_ROOT), { recursive: true });
    if (runAs !== undefined)
      checkRunAs(runAs, [ctx.paths.dataDir, ctx.paths.configDir, agentBundleDir(PROJECT_ROOT)]);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      renderUnit({
        scope,
        nodePath: process.execPath,
        cliPath: path.join(PROJECT_ROOT, 'bin', 'carapace.js'),
        projectRoot: PROJECT_ROOT,
        configDir: ctx.paths.configDir,
        dataDir: ctx.paths.dataDir,
        ...(runAs === undefined ? {} : { runAs }),
      }),
    );
    ctx.out(`wrote ${file}`);
    runOrSay(ctx, [systemctl('daemon-reload'), systemctl('enable', '--now', SERVICE_NAME)]);
    ctx.out(`logs: carapace logs -f   stop: ${systemctl('stop', SERVICE_NAME)}`);
    if (scope === 'user')
      ctx.out(`to keep it running after you log out: loginctl enable-linger ${process.env.USER ?? '$USER'}`);
    return 0;
  }
  if (sub === 'uninstall') {
    if (!fs.existsSync(file)) {
      ctx.err(`no ${scope} service is installed (${file} does not exist)`);
      return 1;
    }
    runOrSay(ctx, [systemctl('disable', '--now', SERVICE_NAME)]);
    fs.rmSync(file);
    runOrSay(ctx, [systemctl('daemon-reload')]);
    ctx.out(`removed ${file}`);
    return 0;
  }
  throw new UsageError(`usage: ${serviceUsage}`);
}

/**
 * A system service as a user of its own: the user must exist, a docker group must exist (the unit adds
 * it), and the folders the host writes must be the user's. Says how to get there when they are not.
 */
function checkRunAs(user: string, folders: string[]): void {
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user))
    throw new UsageError(`--run-as needs a user name like "carapace", not "${user}"`);
  let uid: number;
  try {
    uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    throw new UsageError(
      `there is no user "${user}": create one with: useradd --system --create-home --groups docker ${user}`,
    );
  }
  const groups = fs.existsSync('/etc/group') ? fs.readFileSync('/etc/group', 'utf8') : '';
  if (!/^docker:/m.test(groups))
    throw new UsageError(
      'there is no docker group: the service reaches Docker through it (install Docker first)',
    );
  const foreign = folders.filter((f) => fs.statSync(f).uid !== uid);
  if (foreign.length > 0)
    throw new UsageError(
      `the host running as ${user} must own the folders it writes: chown -R ${user}: ${foreign.join(' ')}`,
    );
}

/** Runs the systemctl commands where systemd is the init system; elsewhere says what to run. */
function runOrSay(ctx: CliContext, commands: string[]): void {
  if (!fs.existsSync('/run/systemd/system')) {
    ctx.out(`systemd is not running here; when it is, run: ${commands.join(' && ')}`);
    return;
  }
  for (const command of commands) {
    const [bin, ...argv] = command.split(' ');
    execFileSync(bin as string, argv, { stdio: 'inherit' });
  }
}
