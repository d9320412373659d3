/**
 * The folders a backup reads and a restore writes, given by the caller (the CLI resolves them): the record
 * knows no config file or platform, only where its files are.
 */
export interface BackupPaths {
  /** Holds config.toml and mount-allowlist.toml; `.env` in it is never copied. */
  configDir: string;
  dataDir: string;
  databaseFile: string;
}
