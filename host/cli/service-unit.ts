import os from 'node:os';
import path from 'node:path';

export type ServiceScope = 'user' | 'system';

export const SERVICE_NAME = 'carapace';

export interface UnitInputs {
  scope: ServiceScope;
  nodePath: string;
  cliPath: string;
  projectRoot: string;
  configDir: string;
  dataDir: string;
}

/**
 * The systemd unit for `carapace start --no-console`. Logs go to the journal (systemd sets JOURNAL_STREAM,
 * and the host then logs to stderr); a crash restarts it after a pause; stopping sends SIGTERM, on which
 * the host stops its runs and removes its network before it exits. A --user service cannot set the
 * gateway network's firewall (that needs root), which `carapace doctor` reports.
 */
export function renderUnit(u: UnitInputs): string {
  const quote = (s: string) => (/[\s"\\]/.test(s) ? `"${s.replace(/(["\\])/g, '\\$1')}"` : s);
  return `[Unit]
Description=Carapace chat assistant host
After=network-online.target docker.service
Wants=network-online.target

[Service]
Type=simple
WorkingDirectory=${quote(u.projectRoot)}
Environment=${quote(`CARAPACE_CONFIG_DIR=${u.configDir}`)}
Environment=${quote(`CARAPACE_DATA_DIR=${u.dataDir}`)}
ExecStart=${quote(u.nodePath)} ${quote(u.cliPath)} start --no-console
Restart=on-failure
RestartSec=5
KillSignal=SIGTERM
TimeoutStopSec=90
StandardOutput=journal
StandardError=journal

[Install]
WantedBy=${u.scope === 'system' ? 'multi-user.target' : 'default.target'}
`;
}

/** Where the unit file goes: the user's systemd folder, or /etc/systemd/system. */
export function unitFile(scope: ServiceScope, env: NodeJS.ProcessEnv): string {
  if (scope === 'system') return path.join('/etc/systemd/system', `${SERVICE_NAME}.service`);
  const configHome = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(configHome, 'systemd', 'user', `${SERVICE_NAME}.service`);
}
