import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT, UsageError, type CliContext } from '../cli-context.ts';
import { serviceUsage } from '../command-usage.ts';
import { renderUnit, SERVICE_NAME, unitFile, type ServiceScope } from '../service-unit.ts';

/** `carapace service install|uninstall`: a systemd unit that runs the host in the background. */
export async function serviceCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: { user: { type: 'boolean', default: false }, system: { type: 'boolean', default: false } },
  });
  if (values.user && values.system) throw new UsageError('choose one of --user and --system');
  // Root runs the system service (the firewall of gateway-mode groups needs root); anyone else their own.
  const scope: ServiceScope = values.system || (!values.user && process.getuid?.() === 0) ? 'system' : 'user';
  const file = unitFile(scope, ctx.io.env);
  const systemctl = (...a: string[]) =>
    ['systemctl', ...(scope === 'user' ? ['--user'] : []), ...a].join(' ');
  if (sub === 'install') {
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
