// The parts of the image build and container config that need no Docker engine.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { containersConfigSchema } from '../../../host/containers/run/container-config.ts';
import {
  containerCreateOptions,
  containerName,
  containerSpecSchema,
} from '../../../host/containers/run/container-spec.ts';
import {
  AGENT_NODE_FLAGS,
  EXECUTOR_FILE,
  LAUNCHER_FILE,
  AGENT_MAIN_CHUNK,
  AGENT_WASM_ASSETS,
  bundleAgent,
  stopBundler,
  hashFiles,
  writeAgentCodeCache,
} from '../../../host/containers/image/agent-bundle.ts';
import {
  chooseMirror,
  parseDeb822Sources,
  parseOneLineSources,
  readAptMirror,
} from '../../../host/containers/image/image-apt-sources.ts';
import {
  checkNodeBinaryPortable,
  debootstrapProgressFilter,
  offlineBaseTag,
  type OfflineBaseRecipe,
} from '../../../host/containers/image/image-base-offline.ts';
import { dockerfileBaseImage } from '../../../host/containers/image/image-base-online.ts';
import { parseImageBuildArgs } from '../../../host/containers/image/image-build-command.ts';
import { agentImageTag } from '../../../host/containers/image/image-ensure.ts';
import { PROBE_ENTRY, PROJECT_ROOT } from '../../fixtures/agent-entries/probe-image.ts';
import { waitFor } from '../../helpers/processes.ts';
const SPLIT_PROBE_ENTRY = path.join(PROJECT_ROOT, 'test', 'fixtures', 'agent-entries', 'split-probe.ts');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const DEB822 = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`;

describe('apt sources', () => {
  it('parses deb822 stanzas, one source per URI and suite', () => {
    expect(parseDeb822Sources(DEB822)).toEqual([
      {
        uri: 'http://deb.debian.org/debian',
        suite: 'bookworm',
        components: ['main'],
        keyring: '/usr/share/keyrings/debian-archive-keyring.gpg',
      },
      {
        uri: 'http://deb.debian.org/debian',
        suite: 'bookworm-updates',
        components: ['main'],
        keyring: '/usr/share/keyrings/debian-archive-keyring.gpg',
      },
      {
        uri: 'http://deb.debian.org/debian-security',
        suite: 'bookworm-security',
        components: ['main'],
        keyring: '/usr/share/keyrings/debian-archive-keyring.gpg',
      },
    ]);
  });

  it('skips disabled stanzas, deb-src, and inline keys as keyrings', () => {
    const text = `Types: deb-src
URIs: http://src.example/debian
Suites: bookworm

Types: deb
URIs: http://off.example/debian
Suites: bookworm
Enabled: no

Types: deb
URIs: http://mirror.example/debian/
Suites: trixie
Components: main contrib
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 abc
 -----END PGP PUBLIC KEY BLOCK-----
`;
    expect(parseDeb822Sources(text)).toEqual([
      { uri: 'http://mirror.example/debian/', suite: 'trixie', components: ['main', 'contrib'] },
    ]);
  });

  it('parses the one-line format with options and comments', () => {
    const text = `# a comment
deb-src http://deb.debian.org/debian bookworm main
deb [arch=amd64 signed-by=/etc/apt/keyrings/debian.gpg] http://ftp.example/debian bookworm main non-free
deb http://security.debian.org/debian-security bookworm-security main # trailing
`;
    expect(parseOneLineSources(text)).toEqual([
      {
        uri: 'http://ftp.example/debian',
        suite: 'bookworm',
        components: ['main', 'non-free'],
        keyring: '/etc/apt/keyrings/debian.gpg',
      },
      { uri: 'http://security.debian.org/debian-security', suite: 'bookworm-security', components: ['main'] },
    ]);
  });

  it('picks the release suite, not -updates/-security or a third-party repository', () => {
    const sources = [
      { uri: 'https://deb.nodesource.com/node_20.x', suite: 'nodistro', components: ['main'], origin: 'a' },
      {
        uri: 'http://deb.debian.org/debian-security',
        suite: 'bookworm-security',
        components: ['main'],
        origin: 'b',
      },
      { uri: 'http://deb.debian.org/debian/', suite: 'bookworm', components: ['main'], origin: 'c' },
    ];
    expect(chooseMirror(sources, 'bookworm')).toEqual({
      mirror: 'http://deb.debian.org/debian',
      suite: 'bookworm',
      origin: 'c',
    });
    expect(chooseMirror(sources.slice(1, 2), 'bookworm')).toBeUndefined();
  });

  it('reads sources.list.d/*.sources and sources.list from a root directory', () => {
    const root = fs.mkdtempSync(path.join(tmp, 'root-'));
    fs.mkdirSync(path.join(root, 'etc', 'apt', 'sources.list.d'), { recursive: true });
    fs.writeFileSync(path.join(root, 'etc', 'os-release'), 'ID=debian\nVERSION_CODENAME=bookworm\n');
    fs.writeFileSync(path.join(root, 'etc', 'apt', 'sources.list.d', 'debian.sources'), DEB822);
    fs.writeFileSync(
      path.join(root, 'etc', 'apt', 'sources.list.d', 'nodesource.list'),
      'deb https://deb.nodesource.com/node_20.x nodistro main\n',
    );
    expect(readAptMirror(root)).toEqual({
      mirror: 'http://deb.debian.org/debian',
      suite: 'bookworm',
      keyring: '/usr/share/keyrings/debian-archive-keyring.gpg',
      origin: path.join(root, 'etc', 'apt', 'sources.list.d', 'debian.sources'),
    });

    const legacy = fs.mkdtempSync(path.join(tmp, 'root-'));
    fs.mkdirSync(path.join(legacy, 'etc', 'apt'), { recursive: true });
    fs.writeFileSync(
      path.join(legacy, 'etc', 'apt', 'sources.list'),
      'deb http://archive.example/debian bullseye main\n',
    );
    expect(readAptMirror(legacy)).toMatchObject({
      mirror: 'http://archive.example/debian',
      suite: 'bullseye',
    });

    const empty = fs.mkdtempSync(path.join(tmp, 'root-'));
    expect(() => readAptMirror(empty)).toThrow(/No usable apt mirror/);
  });
});

describe('offline base', () => {
  it('folds debootstrap per-package lines into stages', () => {
    const lines: string[] = [];
    const feed = debootstrapProgressFilter((line) => lines.push(line));
    for (const line of [
      'I: Retrieving InRelease ',
      'I: Retrieving Packages ',
      'I: Resolving dependencies of required packages...',
      'I: Retrieving adduser 3.134',
      'I: Validating adduser 3.134',
      'I: Retrieving bash 5.2.15-2+b13',
      'I: Validating bash 5.2.15-2+b13',
      'I: Extracting adduser...',
      'I: Extracting bash...',
      'W: something odd',
      'I: Configuring bash...',
      'I: Base system installed successfully.',
      'random noise',
    ]) {
      feed(line);
    }
    expect(lines).toEqual([
      'debootstrap: Retrieving InRelease',
      'debootstrap: Retrieving Packages',
      'debootstrap: Resolving dependencies of required packages...',
      'debootstrap: Retrieving 4 packages',
      'debootstrap: Extracting 2 packages',
      'debootstrap: W: something odd',
      'debootstrap: Configuring 1 packages',
      'debootstrap: Base system installed successfully.',
    ]);
  });

  it('refuses a Node binary the minimal root filesystem could not run', async () => {
    const script = path.join(tmp, 'node');
    fs.writeFileSync(script, '#!/bin/sh\nexec node "$@"\n', { mode: 0o755 });
    await expect(checkNodeBinaryPortable(script)).rejects.toThrow(/not an ELF binary/);
    // bash links libtinfo, which is not part of glibc: the same check a distribution Node
    // (linked to libnode, libuv, libicu) fails.
    await expect(checkNodeBinaryPortable('/bin/bash')).rejects.toThrow(/links against .*libtinfo/);
  });

  it('tags the base by suite, mirror, Node version and packages', () => {
    const recipe: OfflineBaseRecipe = {
      mirror: { mirror: 'http://deb.debian.org/debian', suite: 'bookworm', origin: 'x' },
      nodeBinary: '/usr/bin/node',
      nodeVersion: 'v20.20.2',
      arch: 'x64',
      packages: ['bash', 'jq'],
    };
    const tag = offlineBaseTag(recipe);
    expect(tag).toMatch(/^carapace-agent-base:[0-9a-f]{12}$/);
    expect(offlineBaseTag({ ...recipe, nodeBinary: '/other/node' })).toBe(tag);
    expect(offlineBaseTag({ ...recipe, nodeVersion: 'v22.1.0' })).not.toBe(tag);
    expect(offlineBaseTag({ ...recipe, mirror: { ...recipe.mirror, suite: 'trixie' } })).not.toBe(tag);
    expect(offlineBaseTag({ ...recipe, packages: ['bash'] })).not.toBe(tag);
  });
});

describe('agent bundle and tag', () => {
  it('bundles the entry, the agent as CommonJS chunks and the wasm assets, with a stable hash that follows the source', async () => {
    const outA = path.join(tmp, 'a', 'agent.cjs');
    const outB = path.join(tmp, 'b', 'agent.cjs');
    const a = await bundleAgent({ entry: PROBE_ENTRY, outFile: outA });
    const b = await bundleAgent({ entry: PROBE_ENTRY, outFile: outB });
    expect(a.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(b.sha256).toBe(a.sha256);
    expect(fs.readdirSync(path.dirname(outA)).sort()).toEqual(
      [
        'agent.cjs',
        AGENT_MAIN_CHUNK,
        EXECUTOR_FILE,
        LAUNCHER_FILE,
        ...AGENT_WASM_ASSETS.map((x) => x.file),
      ].sort(),
    );
    const agent = fs.readFileSync(path.join(path.dirname(outA), AGENT_MAIN_CHUNK), 'utf8');
    expect(agent).not.toMatch(/require\(["']\.\.?\//); // no relative requires: the probe is one chunk
    expect(agent).not.toMatch(/^import /m);
    const entry = fs.readFileSync(outA, 'utf8');
    expect(entry).not.toMatch(/^import /m); // CommonJS: node starts it without its ES module loader
    expect(entry).not.toMatch(/require\(["']\.\.?\//);

    // A different wasm asset changes the hash: the assets are part of what the image holds.
    fs.appendFileSync(path.join(path.dirname(outB), 'tree-sitter.wasm'), 'x');
    expect(hashFiles(b.files)).not.toBe(a.sha256);

    const changedEntry = path.join(tmp, 'changed.ts');
    fs.writeFileSync(changedEntry, 'process.stdout.write("changed\\n");\n');
    const c = await bundleAgent({
      entry: changedEntry,
      outFile: path.join(tmp, 'c', 'agent.cjs'),
      projectRoot: PROJECT_ROOT,
    });
    expect(c.sha256).not.toBe(a.sha256);
  });

  it("esbuild's helper process ends when the bundler is stopped, and a later bundle starts a new one", async () => {
    const esbuildChildren = () =>
      fs
        .readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
            const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
            return ppid === process.pid && fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('esbuild');
          } catch {
            return false;
          }
        });
    await bundleAgent({ entry: PROBE_ENTRY, outFile: path.join(tmp, 'stop', 'agent.cjs') });
    expect(esbuildChildren()).toHaveLength(1);
    await stopBundler();
    await waitFor("esbuild's helper process to end", () => esbuildChildren().length === 0);
    await bundleAgent({ entry: PROBE_ENTRY, outFile: path.join(tmp, 'stop', 'agent.cjs') });
    expect(esbuildChildren()).toHaveLength(1);
  });

  it('a module the agent imports with import() is its own chunk, loaded only when imported', async () => {
    const out = path.join(tmp, 'split', 'agent.cjs');
    const bundle = await bundleAgent({ entry: SPLIT_PROBE_ENTRY, outFile: out, projectRoot: PROJECT_ROOT });
    const names = bundle.chunks.map((c) => path.basename(c.file));
    expect(names[0]).toBe(AGENT_MAIN_CHUNK);
    expect(names.slice(1)).toEqual([expect.stringMatching(/^agent-split-probe-part-\w+\.cjs$/)]);
    // The part's code is not in the main chunk.
    expect(fs.readFileSync(bundle.chunks[0]!.file, 'utf8')).not.toContain('part loaded');
    const run = spawnSync(process.execPath, [out], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('main undefined\npart loaded\n');
    // Stale chunks of an earlier build of the same folder are gone.
    fs.writeFileSync(path.join(path.dirname(out), 'agent-old-ABCDEFGH.cjs'), '');
    const again = await bundleAgent({ entry: PROBE_ENTRY, outFile: out });
    expect(fs.readdirSync(path.dirname(out)).filter((n) => n.startsWith('agent-'))).toEqual([
      path.basename(again.chunks[0]!.file),
    ]);
  });

  it('the code caches are taken under the flags they were written with, and a stale or foreign one is not', async () => {
    const out = path.join(tmp, 'cached', 'agent.cjs');
    const bundle = await bundleAgent({ entry: SPLIT_PROBE_ENTRY, outFile: out, projectRoot: PROJECT_ROOT });
    const caches = writeAgentCodeCache(bundle);
    expect(caches).toHaveLength(2); // the part too, although the writer's boot exits before it imports it
    for (const cache of caches) expect(fs.statSync(cache).size).toBeGreaterThan(0);
    const boot = (flags: readonly string[]) =>
      spawnSync(process.execPath, [...flags, out], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
    const same = boot(AGENT_NODE_FLAGS);
    expect(same.status).toBe(0);
    expect(same.stderr).toBe('main undefined\npart loaded\n');
    // Other flags (or another node): V8 refuses each cache, and the agent compiles and runs without them.
    // Not every flag counts: Node 24's V8 leaves heap sizes out of a cache's check, so booting without
    // the agent's flags is no longer "other"; --no-opt changes the code V8 makes on every version.
    const other = boot(['--no-opt']);
    expect(other.status).toBe(0);
    expect(other.stderr.match(/code cache does not fit node v\d+/g)).toHaveLength(2);
    expect(other.stderr).toMatch(/part loaded/);
    // V8 checks only a cache's length against the source: each name binds it to its chunk's bytes, and
    // the entry knows the hashes.
    for (const chunk of bundle.chunks) {
      const hash = hashFiles([chunk.file]).slice(0, 16);
      expect(chunk.cacheFile).toBe(`${chunk.file}.${hash}.cache`);
      expect(fs.readFileSync(out, 'utf8')).toContain(hash);
    }
  });

  it('the real agent boots through its entry and code cache, and loads its bash parser', async () => {
    const out = path.join(tmp, 'real', 'agent.cjs');
    const bundle = await bundleAgent({
      entry: path.join(PROJECT_ROOT, 'container-agent', 'src', 'main.ts'),
      outFile: out,
      projectRoot: PROJECT_ROOT,
    });
    writeAgentCodeCache(bundle);
    const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, out], {
      env: { PATH: process.env.PATH, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    const closed = new Promise((r) => child.on('close', r));
    // The parser loads once the agent listens, and the agent logs either outcome: that line is the sentinel.
    // Ending stdin then makes the agent exit.
    const parserSettled = new Promise<void>((resolve) =>
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString('utf8');
        if (/bash classifier (loaded|unavailable)/.test(stderr)) resolve();
      }),
    );
    await Promise.race([parserSettled, closed]);
    child.stdin.end();
    await closed;
    expect(stderr).toMatch(/"msg":"agent ready"/);
    expect(stderr).toMatch(/"msg":"bash classifier loaded"/);
    expect(stderr).not.toMatch(/code cache does not fit/);
    expect(stderr).not.toMatch(/bash classifier unavailable/);
  }, 30_000);

  it('fails with a clear message for a missing entry', async () => {
    await expect(
      bundleAgent({ entry: path.join(tmp, 'nope.ts'), outFile: path.join(tmp, 'x', 'a.cjs') }),
    ).rejects.toThrow(/does not exist/);
    await expect(bundleAgent({ entry: PROBE_ENTRY, outFile: path.join(tmp, 'x', 'a.mjs') })).rejects.toThrow(
      /must be a \.cjs file/,
    );
  });

  it('derives the image tag from bundle, Dockerfile and base', () => {
    const tag = agentImageTag('carapace-agent', 'a'.repeat(64), 'FROM x', 'sha256:1');
    expect(tag).toMatch(/^carapace-agent:[0-9a-f]{12}$/);
    expect(agentImageTag('carapace-agent', 'b'.repeat(64), 'FROM x', 'sha256:1')).not.toBe(tag);
    expect(agentImageTag('carapace-agent', 'a'.repeat(64), 'FROM y', 'sha256:1')).not.toBe(tag);
    expect(agentImageTag('carapace-agent', 'a'.repeat(64), 'FROM x', 'sha256:2')).not.toBe(tag);
  });

  it('reads the online base from the shipped Dockerfile', () => {
    expect(dockerfileBaseImage(path.join(PROJECT_ROOT, 'container-agent', 'Dockerfile'))).toBe(
      'node:22-bookworm-slim',
    );
  });

  it('parses carapace image build options', () => {
    expect(parseImageBuildArgs([])).toEqual({ mode: 'auto', force: false, help: false });
    expect(parseImageBuildArgs(['--offline', '--force'])).toEqual({
      mode: 'offline',
      force: true,
      help: false,
    });
    expect(() => parseImageBuildArgs(['--fast'])).toThrow(/Unknown option --fast/);
  });
});

describe('container config and spec', () => {
  it('an empty [containers] section is valid and unknown keys are not', () => {
    expect(containersConfigSchema.parse({})).toMatchObject({
      image_build: 'auto',
      memory_mb: 1024,
      pids: 256,
    });
    expect(containersConfigSchema.safeParse({ memmory_mb: 1 }).success).toBe(false);
    expect(containersConfigSchema.safeParse({ gateway_network: 'bad name' }).success).toBe(false);
  });

  it('names containers safely and never lets caller labels override ownership', () => {
    expect(containerName('1203630@g.us', 42)).toBe('carapace-1203630-g.us-42');
    // Two data folders on one engine both have a run 42 of group main: the scope keeps them apart.
    expect(containerName('main', 42, 'a1b2c3d4')).toBe('carapace-main-42-a1b2c3d4');
    expect(containerName('main', 42, 'a1b2c3d4')).not.toBe(containerName('main', 42, 'ffff0000'));
    const spec = containerSpecSchema.parse({
      groupId: 'g',
      runId: 1,
      image: 'img',
      mounts: [],
      env: {},
      network: { mode: 'gateway', networkName: 'carapace-gateway' },
      limits: { memoryMb: 128, cpus: 0.5, pids: 32 },
      timeouts: { hardMs: 1000, idleMs: 1000 },
      labels: { 'carapace.host': 'forged', 'carapace.managed': '0', other: 'kept' },
      hostInstanceId: 'real',
    });
    const options = containerCreateOptions(spec, '172.30.0.1');
    expect(options.Labels).toMatchObject({ 'carapace.host': 'real', 'carapace.managed': '1', other: 'kept' });
    expect(options.HostConfig?.NetworkMode).toBe('carapace-gateway');
    expect(options.HostConfig?.ExtraHosts).toEqual(['host.docker.internal:172.30.0.1']);
  });
});
