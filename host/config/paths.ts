import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OUTBOX_FILES_FOLDER } from '../store/outbox-store.ts';
import { HOST_PID_FILE } from '../store/host-pid-file.ts';
import { ACCOUNT_NAME, DEFAULT_ACCOUNT } from '../channels/channel-accounts.ts';

export interface CarapacePaths {
  /** Holds config.toml, mount-allowlist.toml and .env; outside the project so containers never see it. */
  configDir: string;
  configFile: string;
  allowlistFile: string;
  envFile: string;
  /** Runtime state: the database, group folders, session folders, logs and the control socket. */
  dataDir: string;
  databaseFile: string;
  groupsDir: string;
  sessionsDir: string;
  logsDir: string;
  socketFile: string;
  /** The running host's pid, written when it takes the data folder; only for messages, never a lock. */
  pidFile: string;
}

/** A channel's own 0700 folder under the data folder (WhatsApp's login). */
export function channelDataDir(paths: Pick<CarapacePaths, 'dataDir'>, channel: string): string {
  return path.join(paths.dataDir, 'channels', channel);
}

/** The host-only (0700) folder where approved copies of files to send wait until the outbox sent them. */
export function outboxFilesDir(paths: Pick<CarapacePaths, 'dataDir'>): string {
  return path.join(paths.dataDir, OUTBOX_FILES_FOLDER);
}

export interface PathInputs {
  env: NodeJS.ProcessEnv;
  cwd: string;
  homeDir?: string;
}

function expandHome(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return path.join(home, p.slice(2));
  return p;
}

export function resolvePaths({ env, cwd, homeDir = os.homedir() }: PathInputs): CarapacePaths {
  const configDir = path.resolve(cwd, expandHome(env.CARAPACE_CONFIG_DIR || '~/.config/carapace', homeDir));
  const dataDir = path.resolve(cwd, expandHome(env.CARAPACE_DATA_DIR || './data', homeDir));
  return {
    configDir,
    configFile: path.join(configDir, 'config.toml'),
    allowlistFile: path.join(configDir, 'mount-allowlist.toml'),
    envFile: path.join(configDir, '.env'),
    dataDir,
    databaseFile: path.join(dataDir, 'carapace.db'),
    groupsDir: path.join(dataDir, 'groups'),
    sessionsDir: path.join(dataDir, 'sessions'),
    logsDir: path.join(dataDir, 'logs'),
    socketFile: path.join(dataDir, 'carapace.sock'),
    pidFile: path.join(dataDir, HOST_PID_FILE),
  };
}

/** Creates the data folder and its subfolders, owner-only. */
export function ensureDataDirs(paths: CarapacePaths): void {
  for (const dir of [paths.dataDir, paths.groupsDir, paths.sessionsDir, paths.logsDir]) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  // The socket's only authentication is that nobody else can reach into this folder.
  fs.chmodSync(paths.dataDir, 0o700);
}

/**
 * An account's own data folder (its login, its WhatsApp session). The default account keeps the channel's
 * folder so existing installs go on with their session; a named one gets a sibling, `<channel>.<account>`,
 * never a folder inside the default's, so removing one account's folder never touches another's.
 */
export function accountDataDir(
  paths: Pick<CarapacePaths, 'dataDir'>,
  channel: string,
  account: string,
): string {
  if (account === DEFAULT_ACCOUNT) return channelDataDir(paths, channel);
  if (!ACCOUNT_NAME.test(account)) throw new Error(`"${account}" is not an account name`);
  return path.join(path.dirname(channelDataDir(paths, channel)), `${channel}.${account}`);
}
