import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import { isDockerNotFound } from '../docker-errors.ts';
import { runOnce } from './docker-run-once.ts';
import { readAptMirror, type AptMirror } from './image-apt-sources.ts';
import { execLines } from './image-exec.ts';

export const OFFLINE_BASE_REPOSITORY = 'carapace-agent-base';
export const AGENT_USER_NAME = 'agent';
export const AGENT_UID = 10001;
/** The uid commands run as, never the agent's (DESIGN.md, "Bash gate"); it has no name in the image. */
export const COMMAND_UID = 10002;
/** What the agent runs as: numeric, so no image's /etc/passwd can map it to root. */
export const AGENT_USER = `${AGENT_UID}:${AGENT_UID}`;
/** Where the host's Node binary lives inside the offline base. */
export const OFFLINE_NODE_PATH = '/usr/local/bin/node';
/**
 * The image's init and Node are execute-only (0711, owned by root): a process that runs a binary it
 * cannot read is not dumpable, so nothing under another uid, nor the process's own, can open its
 * /proc/<pid>/environ, mem or fd. Commands already run under another uid than tini (PID 1, whose stdio is
 * the IPC stream) and the agent (which holds the gateway key); this is the second wall. See DESIGN.md,
 * "Bash gate".
 */
export const EXECUTE_ONLY_BINARIES = [OFFLINE_NODE_PATH, '/usr/bin/tini'] as const;

/**
 * Debian packages of the offline base. The agent's tools need the first seven (poppler-utils: the
 * read_attachment tool's pdftotext, so the untrusted PDF parser runs inside the sandbox); libstdc++6 and
 * libgcc-s1 are what an official Node binary links against besides glibc; tini is the image's init.
 * The launcher's setpriv comes with util-linux, which every Debian root filesystem has (Essential).
 */
export const OFFLINE_BASE_PACKAGES = [
  'bash',
  'coreutils',
  'git',
  'ca-certificates',
  'ripgrep',
  'jq',
  'poppler-utils',
  'libstdc++6',
  'libgcc-s1',
  'tini',
] as const;

/** Bump when the way the root filesystem is prepared changes, so old bases are not reused. */
const RECIPE_VERSION = 2;

/** Shared libraries a Debian root filesystem of the same release provides for Node. */
const GLIBC_FAMILY =
  /^(linux-vdso|linux-gate|ld-linux[\w.-]*|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so/;

export interface OfflineBaseRecipe {
  mirror: AptMirror;
  nodeBinary: string;
  nodeVersion: string;
  arch: string;
  packages: readonly string[];
}

export interface EnsureOfflineBaseOptions {
  docker: Docker;
  onProgress?: (line: string) => void;
  /** Rebuild even when the base tag exists. */
  force?: boolean;
  /** Root of the filesystem whose /etc/apt is read (tests). Default `/`. */
  aptRoot?: string;
  /** The Node binary to install. Default: the one running this process. */
  nodeBinary?: string;
}

/** Resolves the real Node binary (through symlinks and version-manager shims) and its version. */
export async function resolveNodeBinary(
  candidate = process.execPath,
): Promise<{ path: string; version: string }> {
  const resolved = fs.realpathSync(candidate);
  // Version managers (volta, asdf) put a shim where node is expected; the shim execs the real
  // binary, whose execPath is what we must copy.
  const probe = await execCapture(resolved, ['-p', 'JSON.stringify([process.execPath, process.version])']);
  if (probe.code !== 0) {
    throw new Error(`Cannot run ${resolved} to find the host's Node binary: ${probe.output.trim()}`);
  }
  const [execPath, version] = JSON.parse(probe.output.trim()) as [string, string];
  return { path: fs.realpathSync(execPath), version };
}

/**
 * Fails early (before minutes of debootstrap) when the Node binary links against libraries a
 * minimal Debian root filesystem does not have, e.g. a distribution build linked to libnode.
 */
export async function checkNodeBinaryPortable(nodeBinary: string): Promise<void> {
  const header = Buffer.alloc(4);
  const fd = fs.openSync(nodeBinary, 'r');
  try {
    fs.readSync(fd, header, 0, 4, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (!header.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    throw new Error(`${nodeBinary} is not an ELF binary; the offline image needs a Linux Node binary.`);
  }
  const ldd = await execCapture('ldd', [nodeBinary]);
  if (ldd.code !== 0) {
    // "not a dynamic executable": fully static, runs anywhere.
    if (/not a dynamic executable|statically linked/.test(ldd.output)) return;
    throw new Error(`ldd ${nodeBinary} failed: ${ldd.output.trim()}`);
  }
  const foreign = ldd.output
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((lib) => lib !== '' && !GLIBC_FAMILY.test(path.basename(lib)));
  if (foreign.length > 0) {
    throw new Error(
      `The host's Node binary ${nodeBinary} links against ${foreign.join(', ')}, which the offline base ` +
        `image does not contain. Run carapace with an official Node build (nodejs.org or NodeSource), ` +
        `or build the image online (CARAPACE_IMAGE_BUILD=online) where a registry is reachable.`,
    );
  }
}

export async function offlineBaseRecipe(
  options: Pick<EnsureOfflineBaseOptions, 'aptRoot' | 'nodeBinary'> = {},
): Promise<OfflineBaseRecipe> {
  const node = await resolveNodeBinary(options.nodeBinary);
  return {
    mirror: readAptMirror(options.aptRoot),
    nodeBinary: node.path,
    nodeVersion: node.version,
    arch: process.arch,
    packages: [...OFFLINE_BASE_PACKAGES],
  };
}

/** `carapace-agent-base:<12 hex>` from everything that shapes the root filesystem. */
export function offlineBaseTag(recipe: OfflineBaseRecipe): string {
  const hash = createHash('sha256')
    .update(
      JSON.stringify({
        v: RECIPE_VERSION,
        suite: recipe.mirror.suite,
        mirror: recipe.mirror.mirror,
        node: recipe.nodeVersion,
        arch: recipe.arch,
        packages: recipe.packages,
        uid: AGENT_UID,
      }),
    )
    .digest('hex');
  return `${OFFLINE_BASE_REPOSITORY}:${hash.slice(0, 12)}`;
}

/**
 * Makes sure the offline base image exists: a Debian minbase root filesystem with the agent's
 * tools, the host's Node binary and the non-root agent user, imported into Docker. Cached by tag.
 */
export async function ensureOfflineBase(
  options: EnsureOfflineBaseOptions,
): Promise<{ tag: string; id: string; built: boolean }> {
  const { docker } = options;
  const progress = options.onProgress ?? (() => {});
  const recipe = await offlineBaseRecipe(options);
  const tag = offlineBaseTag(recipe);
  if (!options.force) {
    const existing = await imageId(docker, tag);
    if (existing) return { tag, id: existing, built: false };
  }

  await checkNodeBinaryPortable(recipe.nodeBinary);
  const debootstrap = findDebootstrap();
  if (process.getuid?.() !== 0) {
    throw new Error(
      `Building the offline base image ${tag} runs debootstrap, which needs root. Run once as root:\n` +
        `  sudo env "PATH=$PATH" node --import tsx scripts/build-base-offline.ts\n` +
        `(from the project directory), then start carapace again as yourself.`,
    );
  }

  const rootfs = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-rootfs-'));
  const started = Date.now();
  try {
    progress(
      `offline base: bootstrapping Debian ${recipe.mirror.suite} from ${recipe.mirror.mirror} into ${rootfs}`,
    );
    await runDebootstrap(debootstrap, recipe, rootfs, progress);

    progress(`offline base: installing Node ${recipe.nodeVersion} from ${recipe.nodeBinary}`);
    prepareRootfs(rootfs, recipe);
    await createAgentUser(rootfs);

    progress(`offline base: importing into Docker as ${tag}`);
    const id = await importRootfs(docker, rootfs, tag);

    progress('offline base: checking Node and the tools run inside the image');
    await verifyBase(docker, tag).catch(async (error: unknown) => {
      await docker
        .getImage(tag)
        .remove()
        .catch(() => {});
      throw error;
    });
    progress(`offline base: ${tag} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return { tag, id, built: true };
  } finally {
    await removeRootfs(rootfs, progress);
  }
}

async function imageId(docker: Docker, tag: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(tag).inspect()).Id;
  } catch (error) {
    if (isDockerNotFound(error)) return undefined;
    throw error;
  }
}

function findDebootstrap(): string {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/sbin']) {
    if (!dir) continue;
    const candidate = path.join(dir, 'debootstrap');
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(
    'debootstrap is not installed; the offline image build needs it: apt-get install debootstrap',
  );
}

async function runDebootstrap(
  debootstrap: string,
  recipe: OfflineBaseRecipe,
  rootfs: string,
  progress: (line: string) => void,
): Promise<void> {
  const args = [
    '--variant=minbase',
    `--include=${recipe.packages.join(',')}`,
    ...(recipe.mirror.keyring && fs.existsSync(recipe.mirror.keyring)
      ? [`--keyring=${recipe.mirror.keyring}`]
      : []),
    recipe.mirror.suite,
    rootfs,
    recipe.mirror.mirror,
  ];
  const onLine = debootstrapProgressFilter(progress);
  const result = await execLines(debootstrap, args, { onLine, tailLines: 40 });
  if (result.code !== 0) {
    const logFile = path.join(rootfs, 'debootstrap', 'debootstrap.log');
    const log = fs.existsSync(logFile)
      ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')
      : '';
    throw new Error(
      `debootstrap ${args.join(' ')} failed (exit ${result.code ?? result.signal}):\n${result.tail.join('\n')}` +
        (log ? `\n--- debootstrap.log (end) ---\n${log}` : '') +
        `\nCheck that the mirror ${recipe.mirror.mirror} (from ${recipe.mirror.origin}) is reachable.`,
    );
  }
}

/**
 * debootstrap prints a line per package per step ("Retrieving bash 5.2", "Validating bash 5.2",
 * "Extracting bash..."); the owner wants stages. Stage lines pass through; per-package lines are
 * folded into one line per step with a count. Warnings and errors always pass.
 */
export function debootstrapProgressFilter(progress: (line: string) => void): (line: string) => void {
  const perPackage =
    /^I: (Retrieving|Validating|Extracting|Unpacking|Configuring) ([a-z0-9][a-z0-9+.-]+)(?: \S+)?\.*\s*$/;
  const stageWords = new Set(['Packages', 'InRelease', 'Release', 'Release.gpg']);
  let step = '';
  let count = 0;
  const flush = () => {
    if (count > 0) progress(`debootstrap: ${step} ${count} packages`);
    step = '';
    count = 0;
  };
  return (line: string) => {
    const pkg = perPackage.exec(line);
    if (pkg && !stageWords.has(pkg[2]!)) {
      // Retrieving and Validating alternate package by package: one step.
      const verb = pkg[1] === 'Validating' ? 'Retrieving' : pkg[1]!;
      if (verb !== step) {
        flush();
        step = verb;
      }
      count += 1;
      return;
    }
    if (/^[IWE]: /.test(line)) {
      flush();
      progress(`debootstrap: ${line.startsWith('I: ') ? line.slice(3).trim() : line}`);
    }
  };
}

function prepareRootfs(rootfs: string, recipe: OfflineBaseRecipe): void {
  const nodeTarget = path.join(rootfs, OFFLINE_NODE_PATH);
  fs.mkdirSync(path.dirname(nodeTarget), { recursive: true });
  fs.copyFileSync(recipe.nodeBinary, nodeTarget);
  for (const binary of EXECUTE_ONLY_BINARIES) {
    const target = path.join(rootfs, binary);
    fs.chownSync(target, 0, 0);
    fs.chmodSync(target, 0o711);
  }
  // Package caches and lists are dead weight in an image that never runs apt.
  for (const dir of ['var/cache/apt/archives', 'var/lib/apt/lists', 'var/log']) {
    const full = path.join(rootfs, dir);
    if (!fs.existsSync(full)) continue;
    for (const entry of fs.readdirSync(full)) {
      const target = path.join(full, entry);
      if (fs.lstatSync(target).isFile()) fs.rmSync(target, { force: true });
    }
  }
}

async function createAgentUser(rootfs: string): Promise<void> {
  const result = await execLines('chroot', [
    rootfs,
    'useradd',
    '--uid',
    String(AGENT_UID),
    '--user-group',
    '--create-home',
    '--home-dir',
    `/home/${AGENT_USER_NAME}`,
    '--shell',
    '/bin/bash',
    AGENT_USER_NAME,
  ]);
  if (result.code !== 0)
    throw new Error(`Creating the agent user in the root filesystem failed:\n${result.tail.join('\n')}`);
  const workspace = path.join(rootfs, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  fs.chownSync(workspace, AGENT_UID, AGENT_UID);
}

async function importRootfs(docker: Docker, rootfs: string, tag: string): Promise<string> {
  const [repo, version] = tag.split(':') as [string, string];
  const tar = spawn('tar', ['--numeric-owner', '-C', rootfs, '-c', '.'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tarError = '';
  tar.stderr.on('data', (chunk: Buffer) => (tarError += chunk.toString()));
  const tarDone = new Promise<number | null>((resolve) => tar.on('close', resolve));
  const stream = await docker.importImage(tar.stdout, { repo, tag: version });
  const events = await new Promise<{ status?: string; error?: string }[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: { status?: string; error?: string }[]) =>
      err ? reject(err) : resolve(out),
    ),
  );
  const tarCode = await tarDone;
  const failed = events.find((e) => e.error);
  if (failed || tarCode !== 0) {
    throw new Error(`Importing the root filesystem into Docker failed: ${failed?.error ?? tarError.trim()}`);
  }
  const id = await imageId(docker, tag);
  if (!id) throw new Error(`docker import finished but ${tag} does not exist.`);
  return id;
}

async function verifyBase(docker: Docker, tag: string): Promise<void> {
  const result = await runOnce(docker, {
    image: tag,
    user: AGENT_USER,
    entrypoint: ['/bin/bash', '-c'],
    cmd: [
      `set -e; ${OFFLINE_NODE_PATH} -e 'process.stdout.write(process.version + "\\n")'; id -un; ` +
        'git --version >/dev/null; rg --version >/dev/null; jq --version >/dev/null; ' +
        'pdftotext -v >/dev/null 2>&1; echo ok',
    ],
  });
  if (result.exitCode !== 0 || !result.stdout.includes(`${AGENT_USER_NAME}\nok`)) {
    throw new Error(
      `The offline base image ${tag} does not work: Node or a tool failed to run inside it ` +
        `(exit ${result.exitCode}).\nstdout: ${result.stdout.trim()}\nstderr: ${result.stderr.trim()}`,
    );
  }
}

/**
 * debootstrap mounts /proc and /sys inside the target while it configures packages; if it died
 * halfway those mounts may still be there, and a recursive delete would walk into them.
 */
async function removeRootfs(rootfs: string, progress: (line: string) => void): Promise<void> {
  const mounted = () =>
    fs
      .readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[1] ?? '')
      .filter((mountPoint) => mountPoint === rootfs || mountPoint.startsWith(`${rootfs}/`))
      .sort((a, b) => b.length - a.length);
  for (const mountPoint of mounted()) await execLines('umount', ['-l', mountPoint]);
  const left = mounted();
  if (left.length > 0) {
    progress(
      `offline base: left ${rootfs} in place because ${left.join(', ')} are still mounted; unmount and delete it by hand`,
    );
    return;
  }
  fs.rmSync(rootfs, { recursive: true, force: true });
}

function execCapture(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('error', (error) => resolve({ code: -1, output: error.message }));
    child.on('close', (code) => resolve({ code, output }));
  });
}
