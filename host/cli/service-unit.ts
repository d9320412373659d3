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
  /** A system service run as this user (in the docker group) instead of root; none: root. */
  runAs?: string;
}

/** Where the host writes besides the data and config folders: the agent's bundle, rebuilt at start. */
export function agentBundleDir(projectRoot: string): string {
  return path.join(projectRoot, 'container-agent', 'dist');
}

/**
 * The systemd unit for `carapace start --no-console`. Logs go to the journal (systemd sets JOURNAL_STREAM,
 * and the host then logs to stderr); a crash restarts it after a pause; stopping sends SIGTERM, on which
 * the host stops its runs and removes its network before it exits. A --user service cannot set the
 * gateway network's firewall (that needs root), which `carapace doctor` reports.
 *
 * The host talks to Docker over its socket, so the service itself can be boxed in: no new privileges, the
 * system read-only but for the folders it writes (data, config with its history, the agent's bundle),
 * a private /tmp, home read-only. A root service keeps what root needs for gateway-mode groups' firewall
 * (iptables, which takes /run/xtables.lock) and for the offline agent image (debootstrap unpacks setuid
 * programs into the image's root, which RestrictSUIDSGID would refuse). A user manager cannot set up mount
 * namespaces without private users, which would hide the docker group: a --user unit gets the rest.
 */
export function renderUnit(u: UnitInputs): string {
  const quote = (s: string) => (/[\s"\\]/.test(s) ? `"${s.replace(/(["\\])/g, '\\$1')}"` : s);
  const system = u.scope === 'system';
  const root = system && u.runAs === undefined;
  const sandbox = [
    'NoNewPrivileges=yes',
    ...(system
      ? [
          'ProtectSystem=strict',
          `ReadWritePaths=${[u.dataDir, u.configDir, agentBundleDir(u.projectRoot)].map(quote).join(' ')}`,
          ...(root
            ? [
                // iptables -w locks this file: created before the sandbox makes /run read-only.
                "ExecStartPre=+/bin/sh -c ': >>/run/xtables.lock'",
                'ReadWritePaths=-/run/xtables.lock',
              ]
            : []),
          'PrivateTmp=yes',
          'ProtectHome=read-only',
          'ProtectKernelTunables=yes',
          'ProtectControlGroups=yes',
        ]
      : []),
    ...(root ? [] : ['RestrictSUIDSGID=yes']),
    'LockPersonality=yes',
  ];
  const user = u.runAs === undefined ? [] : [`User=${u.runAs}`, 'SupplementaryGroups=docker'];
  return `[Unit]
Description=Carapace chat assistant host
After=network-online.target docker.service
Wants=network-online.target

[Service]
Type=simple
${[...user, ''].join('\n')}WorkingDirectory=${quote(u.projectRoot)}
Environment=${quote(`CARAPACE_CONFIG_DIR=${u.configDir}`)}
Environment=${quote(`CARAPACE_DATA_DIR=${u.dataDir}`)}
ExecStart=${quote(u.nodePath)} ${quote(u.cliPath)} start --no-console
Restart=on-failure
RestartSec=5
KillSignal=SIGTERM
TimeoutStopSec=90
StandardOutput=journal
StandardError=journal
${sandbox.join('\n')}

[Install]
WantedBy=${system ? 'multi-user.target' : 'default.target'}
`;
}

/** Where the unit file goes: the user's systemd folder, or /etc/systemd/system. */
export function unitFile(scope: ServiceScope, env: NodeJS.ProcessEnv): string {
  if (scope === 'system') return path.join('/etc/systemd/system', `${SERVICE_NAME}.service`);
  const configHome = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(configHome, 'systemd', 'user', `${SERVICE_NAME}.service`);
}
