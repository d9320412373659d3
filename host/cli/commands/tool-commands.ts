import readline from 'node:readline';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import { createBashClassifier, streamGateClassify } from '../../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../../container-agent/src/bash-gate/wasm-files.ts';
import { describeMountCheck } from '../../containers/mounts/group-mount-report.ts';
import { planGroupMounts } from '../../containers/mounts/group-mounts.ts';
import { runImageBuildCommand } from '../../containers/image/image-build-command.ts';
import { loadMountAllowlist } from '../../containers/mounts/mount-allowlist.ts';
import { loadSecrets } from '../../config/secrets.ts';
import {
  createSecretScanner,
  parseSecretsScanArgs,
  runSecretsScan,
  secretsScanUsage,
} from '../../security/secrets/index.ts';
import { openStore } from '../../store/store.ts';
import { PROJECT_ROOT, readAll, UsageError, type CliContext } from '../cli-context.ts';
import fs from 'node:fs';
import { errorMessage } from '../../errors/error-message.ts';

/** `carapace image build [--online|--offline] [--force]` */
export async function imageCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'build') throw new UsageError('usage: carapace image build [--online | --offline] [--force]');
  const config = ctx.config();
  return runImageBuildCommand({
    docker: new Docker(),
    projectRoot: PROJECT_ROOT,
    argv: rest,
    out: ctx.out,
    err: ctx.err,
    defaultMode: config.containers.image_build,
    keep: config.containers.keep_images,
  });
}

/** `carapace gate classify [--json]`: one JSON verdict per command on stdin, streamed. */
export async function gateCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'classify') throw new UsageError('usage: carapace gate classify [--json] < commands');
  const { values } = parseArgs({ args: rest, options: { json: { type: 'boolean', default: false } } });
  const classifier = await createBashClassifier(resolveBashGateWasmPaths());
  const lines = readline.createInterface({ input: ctx.io.stdin, crlfDelay: Infinity });
  const badLines = await streamGateClassify(
    lines,
    (chunk) => ctx.io.stdout.write(chunk),
    { json: values.json },
    classifier,
  );
  // Each bad line got its error line on stdout; the exit code says the input was not all usable.
  return badLines > 0 ? 2 : 0;
}

/** `carapace secrets scan [--jsonl]`: findings as JSON; exit 1 when any, 2 when input could not be scanned. */
export async function secretsCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'scan') throw new UsageError(`usage: ${secretsScanUsage}`);
  let opts: { jsonl: boolean };
  try {
    opts = parseSecretsScanArgs(rest);
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
  // The secrets the host holds are matched exactly too, so read them as the host would.
  const secrets = loadSecrets({ envFile: ctx.paths.envFile, env: ctx.io.env });
  try {
    secrets.get(ctx.config().provider.api_key_env);
  } catch {
    // A broken config must not stop a scan; the pattern rules still apply.
  }
  const scanner = createSecretScanner({ heldSecrets: secrets.held() });
  const { output, exitCode } = await runSecretsScan(await readAll(ctx.io.stdin), opts, scanner);
  ctx.io.stdout.write(output.endsWith('\n') || output === '' ? output : `${output}\n`);
  return exitCode;
}

/** `carapace mounts check <group>`: what the group's container would see, and every rejected mount. */
export async function mountsCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, groupId] = args;
  if (sub !== 'check' || !groupId) throw new UsageError('usage: carapace mounts check <group id>');
  if (!fs.existsSync(ctx.paths.databaseFile))
    throw new UsageError(`no groups yet (no database at ${ctx.paths.databaseFile})`);
  const store = openStore({ file: ctx.paths.databaseFile });
  let group;
  try {
    group = store.groups.get(groupId);
  } finally {
    store.close();
  }
  if (!group) throw new UsageError(`there is no group "${groupId}" (see carapace groups list)`);
  const config = ctx.config();
  const allowlist = loadMountAllowlist(ctx.paths.configDir);
  const plan = planGroupMounts({
    dataDir: ctx.paths.dataDir,
    projectRoot: PROJECT_ROOT,
    configDir: ctx.paths.configDir,
    group: { id: group.id, isAdmin: group.isAdmin, extraMounts: config.groups[group.id]?.extra_mounts ?? [] },
    allowlistResult: allowlist,
    assistantName: config.assistant.name,
  });
  ctx.out(describeMountCheck(plan));
  if (!allowlist.ok) ctx.out(`extra mounts are all blocked: ${allowlist.reason}`);
  return plan.rejected.length > 0 ? 1 : 0;
}
