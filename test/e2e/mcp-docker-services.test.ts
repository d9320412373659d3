/**
 * A `type = "docker"` MCP server through the real host: the memory server (from the project's node_modules,
 * mounted read-only) in a container of its own, started with the host, keeping its notebook in the one
 * folder the owner gave it. Its calls follow the matrix alone (no Cop: it cannot run code on the host),
 * `carapace status` names its container, and the host's stop leaves no container behind.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dataFolderLabel, LABEL_DATA } from '../../host/containers/run/data-folder-label.ts';
import { agentImageTag } from '../helpers/agent-image.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import {
  auditMark,
  auditSince,
  resultsOf,
  runTools,
  securityResponder,
  unaskedSend,
} from '../fakes/security-responders.ts';
import { CLEAN_TRUST, MEMORY_SERVER } from '../helpers/mcp-servers.ts';
import { startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';

const NODE_MODULES = path.resolve('node_modules');
const SERVER_IN_CONTAINER = `/srv/node_modules/${path.relative(NODE_MODULES, MEMORY_SERVER)}`;

await describeDocker('e2e: an MCP server in a container of its own', () => {
  let h: E2eHost;
  let folder: string;

  beforeAll(async () => {
    const image = await agentImageTag(new Docker(), path.resolve('.'));
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-e2e-docker-notes-'));
    // The server runs as the image's unprivileged user, not as whoever owns the folder.
    fs.chmodSync(folder, 0o777);
    h = await startE2eHost({
      secrets: { MEMORY_FILE_PATH: '/notes/family.jsonl' },
      config: {
        runs: { max_attempts: 1 },
        services: {
          notebook: {
            type: 'docker',
            image,
            command: 'node',
            args: [SERVER_IN_CONTAINER],
            env: ['MEMORY_FILE_PATH'],
            mounts: [
              { host_path: NODE_MODULES, container_path: '/srv/node_modules' },
              { host_path: folder, container_path: '/notes', read_write: true },
            ],
            start: 'at_start',
            ...CLEAN_TRUST,
          },
        },
        groups: { family: { services: ['notebook'] } },
      } as unknown as E2eHostOptions['config'],
    });
    await h.addLocalGroups('family');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
    fs.rmSync(folder, { recursive: true, force: true });
  }, 60_000);

  it('a run writes to the notebook in its container without the Cop, status names the container, and stop removes it', async () => {
    const fact = `piano lesson on Friday at 16:${crypto.randomInt(10, 59)}`;
    const mark = auditMark(h);
    h.fake.setResponder(
      securityResponder({
        family: runTools([
          {
            name: 'notebook__create_entities',
            arguments: { entities: [{ name: 'Piano', entityType: 'lesson', observations: [fact] }] },
          },
        ]),
      }),
    );
    const remembered = await h.send('family', '@Andy remember the piano lesson');
    expect(remembered.code).toBe(0);
    expect(resultsOf(remembered.stdout)[0]).toContain(fact);
    expect(fs.readFileSync(path.join(folder, 'family.jsonl'), 'utf8')).toContain(fact);
    // The reply to its own chat is a row of its own (unasked); the service call is the one to look at.
    expect(
      auditSince(h, mark)
        .filter((r) => !unaskedSend(r))
        .map((r) => [r.operation, r.decision]),
    ).toEqual([['service.notebook.create_entities', 'allowed']]);

    const status = await h.cli(['status']);
    expect(status.stdout).toMatch(
      /service notebook \(docker\): ready, 9 tools, container carapace-mcp-notebook-/,
    );

    const ours = { filters: { label: [`${LABEL_DATA}=${dataFolderLabel(h.paths.dataDir)}`] }, all: true };
    const mcpContainers = async () =>
      (await h.docker.listContainers(ours)).filter((c) => c.Names.some((n) => n.includes('carapace-mcp-')));
    expect(await mcpContainers()).toHaveLength(1);
    await h.host.stop('end of the test');
    expect(await mcpContainers()).toEqual([]);
  }, 120_000);
});
