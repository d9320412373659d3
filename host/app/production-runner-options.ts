import type { CarapacePaths } from '../config/paths.ts';
import type { HostConfig } from '../config/schema.ts';
import type { SecretSource } from '../config/secrets.ts';
import type { SecretScanner } from '../security/secrets/index.ts';

/** What `carapace start` gives the production runner: config, folders, secrets and the scanner. */
export interface ProductionRunnerOptions {
  config: HostConfig;
  paths: CarapacePaths;
  projectRoot: string;
  /** The project the admin group sees read-only (default: `projectRoot`). */
  adminProject?: string;
  secrets: SecretSource;
  scanner: SecretScanner;
  onProgress(line: string): void;
}
