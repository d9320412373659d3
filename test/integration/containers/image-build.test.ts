import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AGENT_NODE_FLAGS } from '../../../host/containers/image/agent-bundle.ts';
import { runOnce } from '../../../host/containers/image/docker-run-once.ts';
import {
  AGENT_USER,
  offlineBaseRecipe,
  offlineBaseTag,
} from '../../../host/containers/image/image-base-offline.ts';
import { localImageId, pullImage } from '../../../host/containers/image/image-base-online.ts';
import { ensureAgentImage, pruneImages } from '../../../host/containers/image/image-ensure.ts';
import { buildImage } from '../../../host/containers/image/image-docker-build.ts';
import { commandUser } from '../../../host/containers/run/container-spec.ts';
import { ensureProbeImage, PROJECT_ROOT } from '../../fixtures/agent-entries/probe-image.ts';
import { describeDocker } from '../../helpers/docker-available.ts';

const docker = new Docker();
const testRun = randomUUID().slice(0, 8);
const pruneRepository = `carapace-agent-prunetest-${testRun}`;
let tmp = '';
let image = '';

await describeDocker('agent image build', () => {
  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
    image = await ensureProbeImage(docker, (line) => console.log(line));
  }, 15 * 60_000);

  afterAll(async () => {
    // Images first, then the bases a failed test may have left under them.
    for (const repository of [pruneRepository, `${pruneRepository}-base`]) {
      const images = await docker.listImages({ filters: { reference: [repository] } });
      for (const tag of images.flatMap((i) => i.RepoTags ?? []))
        await docker
          .getImage(tag)
          .remove()
          .catch(() => {});
    }
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('builds once; the same source gives the same tag without building', async () => {
    expect(image).toMatch(/^carapace-agent-test:[0-9a-f]{12}$/);
    const again = await ensureAgentImage({
      docker,
      projectRoot: PROJECT_ROOT,
      entry: path.join(PROJECT_ROOT, 'test', 'fixtures', 'agent-entries', 'probe.ts'),
      outFile: path.join(tmp, 'again', 'agent.cjs'),
      repository: 'carapace-agent-test',
    });
    expect(again).toMatchObject({ tag: image, built: false });
  });

  it('the image runs the bundle as the agent user, from /workspace, with the tools', async () => {
    const info = await docker.getImage(image).inspect();
    // The launcher runs the agent with the flags its code cache was written under.
    expect(info.Config.Entrypoint).toEqual(['/bin/bash', '/app/launch.sh']);
    const launcher = fs.readFileSync(path.join(PROJECT_ROOT, 'container-agent', 'launch.sh'), 'utf8');
    expect(launcher).toContain(`node_flags=(${AGENT_NODE_FLAGS.join(' ')})`);
    expect(info.Config.User).toBe('agent');
    expect(info.Config.WorkingDir).toBe('/workspace');
    const result = await runOnce(docker, {
      image,
      user: AGENT_USER,
      entrypoint: ['/bin/bash', '-c'],
      cmd: [
        'id -un; pwd; node -e "process.stdout.write(process.version+String.fromCharCode(10))"; ' +
          'git --version; rg --version | sed -n 1p; jq --version; ls /app | sort | tr "\\n" " "',
      ],
    });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe('agent');
    expect(lines[1]).toBe('/workspace');
    expect(lines[2]).toMatch(/^v\d+\.\d+\.\d+$/);
    expect(lines[3]).toMatch(/^git version/);
    expect(lines[4]).toMatch(/^ripgrep/);
    expect(lines[5]).toMatch(/^jq-/);
    // The probe's one chunk, its code cache when the image runs this host's node (offline), the entry, the
    // command executor, the launcher, the wasm files.
    expect(lines[6]?.trim()).toMatch(
      /^agent-main\.cjs (agent-main\.cjs\.[0-9a-f]{16}\.cache )?agent\.cjs executor\.cjs launch\.sh tree-sitter-bash\.wasm tree-sitter\.wasm$/,
    );
  });

  it('uses the cached offline base for this machine when no online base is present', async () => {
    if (await localImageId(docker, 'node:22-bookworm-slim')) return; // built online here
    const baseTag = offlineBaseTag(await offlineBaseRecipe());
    expect(await localImageId(docker, baseTag)).toBeDefined();
    const history = await docker.getImage(image).history();
    const baseId = await localImageId(docker, baseTag);
    expect(history.map((layer: { Id: string }) => layer.Id)).toContain(baseId);
  });

  it('an agent-only change builds a new tag from the cached base and prunes to the newest two', async () => {
    const entry = path.join(tmp, 'variant.ts');
    const tags: string[] = [];
    for (const variant of ['one', 'two', 'three']) {
      fs.writeFileSync(entry, `process.stdout.write(${JSON.stringify(variant)} + '\\n');\n`);
      const result = await ensureAgentImage({
        docker,
        projectRoot: PROJECT_ROOT,
        entry,
        outFile: path.join(tmp, 'variant-dist', 'agent.cjs'),
        repository: pruneRepository,
        // Without the grace period: these builds are seconds apart.
        pruneGraceMs: 0,
      });
      expect(result.built).toBe(true);
      tags.push(result.tag);
    }
    expect(new Set(tags).size).toBe(3);
    const left = (await docker.listImages({ filters: { reference: [pruneRepository] } })).flatMap(
      (i) => i.RepoTags ?? [],
    );
    expect(left.sort()).toEqual(tags.slice(1).sort());
    // As a run's container starts: the launcher as root, given the agent's and the commands' ids.
    const run = await runOnce(docker, {
      image: tags[2]!,
      user: '0:0',
      cmd: [AGENT_USER, commandUser(AGENT_USER)],
    });
    expect(run).toMatchObject({ exitCode: 0, stdout: 'three\n' });
    // Offline builds prune old bases too, never the one in use.
    if (!(await localImageId(docker, 'node:22-bookworm-slim'))) {
      expect(await localImageId(docker, offlineBaseTag(await offlineBaseRecipe()))).toBeDefined();
    }

    // With the default grace period, a tag built minutes ago stays: another host on this engine may be
    // about to start containers from it.
    fs.writeFileSync(entry, `process.stdout.write('four\\n');\n`);
    const four = await ensureAgentImage({
      docker,
      projectRoot: PROJECT_ROOT,
      entry,
      outFile: path.join(tmp, 'variant-dist', 'agent.cjs'),
      repository: pruneRepository,
    });
    const kept = (await docker.listImages({ filters: { reference: [pruneRepository] } })).flatMap(
      (i) => i.RepoTags ?? [],
    );
    expect(kept.sort()).toEqual([...tags.slice(1), four.tag].sort());
  });

  it('pruning unused-only (old offline bases) spares an image another image is built on, then removes it', async () => {
    // Its own repository: the real carapace-agent-base images on this engine are never touched.
    const baseRepository = `${pruneRepository}-base`;
    const build = async (from: string, tag: string) => {
      const dockerfile = path.join(tmp, `Dockerfile.${tag.replace(/\W/g, '-')}`);
      fs.writeFileSync(dockerfile, `FROM ${from}\nLABEL carapace.prune-test="${tag}"\n`);
      await buildImage({ docker, dockerfile, bundleFiles: [], tag });
    };
    const oldBase = `${baseRepository}:old`;
    const newBase = `${baseRepository}:new`;
    const child = `${pruneRepository}:on-old-base`;
    await build(image, oldBase);
    await build(image, newBase);
    await build(oldBase, child);
    const prune = () =>
      pruneImages(docker, baseRepository, newBase, { keep: 1, graceMs: 0, unusedOnly: true });

    expect(await prune()).toEqual([]);
    expect(await localImageId(docker, oldBase)).toBeDefined();
    await docker.getImage(child).remove();
    expect(await prune()).toEqual([oldBase]);
    expect(await localImageId(docker, oldBase)).toBeUndefined();
    expect(await localImageId(docker, newBase)).toBeDefined();
    expect(await localImageId(docker, image)).toBeDefined();
    await docker.getImage(newBase).remove();
  });

  it('a pull that cannot succeed fails fast with the reason', async () => {
    await expect(
      pullImage(docker, 'registry.invalid/carapace/nothing:1', { firstByteTimeoutMs: 10_000 }),
    ).rejects.toThrow(/Cannot pull registry\.invalid\/carapace\/nothing:1/);
  });
});
