import fs from 'node:fs';
import path from 'node:path';
import { EXAMPLE_CONFIG_FILE } from '../../host/cli/cli-context.ts';
import { loadConfig } from '../../host/config/load-config.ts';
import { resolvePaths } from '../../host/config/paths.ts';

/**
 * Config and data folders under `dir` for a host whose provider is the fake at `providerUrl`: the key sits
 * in the environment under `keyEnv`, as a user would put it, and everything else is the defaults.
 */
export function fakeProviderHostSetup(opts: {
  dir: string;
  providerUrl: string;
  keyEnv: string;
  key: string;
}) {
  const env = {
    CARAPACE_CONFIG_DIR: path.join(opts.dir, 'config'),
    CARAPACE_DATA_DIR: path.join(opts.dir, 'data'),
    [opts.keyEnv]: opts.key,
  };
  fs.mkdirSync(env.CARAPACE_CONFIG_DIR, { recursive: true });
  fs.writeFileSync(
    path.join(env.CARAPACE_CONFIG_DIR, 'config.toml'),
    `[provider]\nbase_url = "${opts.providerUrl}"\napi_key_env = "${opts.keyEnv}"\nmodel = "fake-model"\n`,
  );
  const paths = resolvePaths({ env, cwd: opts.dir });
  const config = loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
  return { env, paths, config };
}
